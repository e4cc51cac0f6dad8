/** `episodes vendor-sim` as an operator runs it: a separate process, driven over HTTP, stopped by a signal. */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { VendorClient } from '../../../src/vendor-api/client';
import { raw, TEST_API_KEY, videoRequest } from '../../../testkit/vendor';
import { sleep } from '../../../testkit/wait';
import { scratchDir } from '../../../testkit/scratch';

const CLI = path.resolve(__dirname, '..', '..', '..', 'src', 'cli.js');

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

async function startCli(args: string[], env: NodeJS.ProcessEnv): Promise<Running> {
  const child = spawn(process.execPath, [CLI, 'vendor-sim', '--port', '0', ...args], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 10_000;
  let match: RegExpMatchArray | null = null;
  while (!(match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`vendor-sim did not start: ${output}`);
    }
    await sleep(20);
  }
  return { child, url: match[1]!, output: () => output, exited };
}

describe('episodes vendor-sim', function () {
  this.timeout(30_000);
  const running: Running[] = [];
  afterEach(async () => {
    for (const r of running.splice(0)) {
      if (r.child.exitCode === null) r.child.kill('SIGKILL');
      await r.exited;
    }
  });

  it('serves the API with the key from EPISODES_VENDOR_API_KEY, logs without the key, and stops on SIGTERM with 0', async () => {
    const sim = await startCli([], { EPISODES_VENDOR_API_KEY: TEST_API_KEY });
    running.push(sim);
    const client = new VendorClient({ baseUrl: sim.url, apiKey: TEST_API_KEY });
    await client.submitJob(videoRequest, 'k1');
    await client.submitJob(videoRequest, 'k1');
    assert.equal((await client.getBilling()).length, 1);
    assert.equal((await raw(sim, 'GET', '/v1/prices', { key: 'sk-test-wrong-key' })).status, 401);
    sim.child.kill('SIGTERM');
    assert.equal(await sim.exited, 0);
    assert.match(sim.output(), /POST \/v1\/jobs 202/);
    assert.match(sim.output(), /stopped/);
    assert.ok(!sim.output().includes(TEST_API_KEY));
  });

  it('--api-key-file and --no-idempotency: every submission charges', async () => {
    const file = path.join(scratchDir('vendor-cli-'), 'key');
    writeFileSync(file, `${TEST_API_KEY}\n`, { mode: 0o600 });
    const sim = await startCli(['--api-key-file', file, '--no-idempotency', '--quiet'], {});
    running.push(sim);
    const client = new VendorClient({ baseUrl: sim.url, apiKey: TEST_API_KEY });
    await client.submitJob(videoRequest, 'k1');
    await client.submitJob(videoRequest, 'k1');
    assert.equal((await client.getBilling()).length, 2);
    assert.deepEqual(await client.findJobsByClientRef('k1'), { supported: false });
  });

  it('--state-file: a restarted simulator still knows the job and replays it', async () => {
    const stateFile = path.join(scratchDir('vendor-cli-'), 'state.json');
    const first = await startCli(['--state-file', stateFile, '--quiet'], { EPISODES_VENDOR_API_KEY: TEST_API_KEY });
    running.push(first);
    const a = await new VendorClient({ baseUrl: first.url, apiKey: TEST_API_KEY }).submitJob(videoRequest, 'k1');
    first.child.kill('SIGINT');
    assert.equal(await first.exited, 0);

    const second = await startCli(['--state-file', stateFile, '--quiet'], { EPISODES_VENDOR_API_KEY: TEST_API_KEY });
    running.push(second);
    const client = new VendorClient({ baseUrl: second.url, apiKey: TEST_API_KEY });
    const b = await client.submitJob(videoRequest, 'k1');
    assert.equal(b.job_id, a.job_id);
    assert.equal(b.replayed, true);
    assert.equal((await client.getBilling()).length, 1);
  });

  it('without a key it refuses to start (exit 1, CredentialsMissing)', async () => {
    const child = spawn(process.execPath, [CLI, 'vendor-sim', '--port', '0'], { env: { PATH: process.env.PATH } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 1);
    assert.match(stderr, /CredentialsMissing/);
  });
});
