import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { collect } from '../../../testkit/processes';
import { writeLegacyFixture } from '../../../testkit/legacy-fixture';
import { readJson, runCli, tempDir } from '../../../testkit/legacy-harness';

const PRELOAD = path.join(__dirname, 'trap-preload.js');

interface TrapReport {
  secretCalls: string[];
  connections: string[];
}

describe('episodes migrate-legacy and verify: no vendor request, no credentials read', () => {
  let server: http.Server;
  let vendorUrl: string;
  let requests = 0;
  let connections = 0;
  let workDir: string;
  let keyFile: string;
  let run = 0;

  before(async () => {
    server = http.createServer((_req, res) => {
      requests += 1;
      res.end('{}');
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    vendorUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    workDir = await tempDir('no-secrets-');
    keyFile = path.join(workDir, 'vendor.key');
    await fs.writeFile(keyFile, 'sk_test_must_never_be_read\n', { mode: 0o600 });
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await fs.rm(workDir, { recursive: true, force: true });
  });

  const trapEnv = () => {
    const report = path.join(workDir, `trap-${run++}.json`);
    return {
      report,
      env: {
        EPISODES_VENDOR_BASE_URL: vendorUrl,
        EPISODES_VENDOR_API_KEY_FILE: keyFile,
        TRAP_SECRET_FILE: keyFile,
        TRAP_REPORT: report,
      },
    };
  };

  it('the trap sees a read of the key file and a request to the vendor (so the next test can fail)', async () => {
    const { report, env } = trapEnv();
    const before = { requests, connections };
    const script =
      "require('node:fs').readFileSync(process.env.EPISODES_VENDOR_API_KEY_FILE);" +
      'fetch(process.env.EPISODES_VENDOR_BASE_URL).then((r) => r.text());';
    const child = spawn(process.execPath, ['--require', PRELOAD, '-e', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const result = await collect(child);
    assert.equal(result.code, 0, result.stderr);
    const seen = (await readJson(report)) as TrapReport;
    assert.ok(seen.secretCalls.length > 0);
    assert.ok(seen.connections.length > 0);
    assert.ok(requests > before.requests && connections > before.connections);
  });

  it('migrate (dry run and real), then verify: no open of the key file, no connection, no vendor request', async () => {
    const dataDir = path.join(workDir, 'data');
    await fs.mkdir(dataDir);
    await writeLegacyFixture(dataDir);
    const before = { requests, connections };
    for (const args of [['migrate-legacy', '--dry-run'], ['migrate-legacy'], ['verify']]) {
      const { report, env } = trapEnv();
      const result = await runCli(['--data-dir', dataDir, ...args], { nodeArgs: ['--require', PRELOAD], env });
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      const seen = (await readJson(report)) as TrapReport;
      assert.deepEqual(seen, { secretCalls: [], connections: [] }, args.join(' '));
    }
    assert.deepEqual({ requests, connections }, before);
  });
});
