/**
 * The vendor API key never reaches output, files or histories when real processes handle it: the CLI's paid-boundary
 * commands (`ledger`, `reconcile`) with a right and a wrong key, and a full scheduled-to-completed run through the
 * real worker process reading the key from EPISODES_VENDOR_API_KEY_FILE. (test/integration/workflows/production.test.ts checks the same
 * with an in-process worker and the SDK's captured logs; this covers the processes' own stdout and stderr.)
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { parseEpisodeId, type EpisodeId } from '../../../src/domain/episode-id';
import type { EpisodeState } from '../../../src/domain/episode-state';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { staticCredentialsLoader } from '../../../src/vendor-api/credentials';
import { startVendorSimulator, type VendorSimulator } from '../../../src/vendor-sim/simulator';
import { runCli } from '../../../testkit/legacy-harness';
import { collect, spawnNode, type ProcessResult } from '../../../testkit/processes';
import { createTestEnv, uniqueTaskQueue } from '../../../testkit/temporal';
import { coverStep } from '../../../testkit/paid-step';
import { sleep } from '../../../testkit/wait';

/** Distinctive, so that a leak anywhere is unmistakable. */
const KEY = 'sk-proc-SECRET-9c1e57ab3f';
const WRONG_KEY = 'sk-wrong-SECRET-4d2f88e0c1';
const W32 = '2026-W32';
const by = { kind: 'test', note: 'secrets' } as const;

/** Every place a key could leak into, as text, with a name for the failure message. */
type Evidence = [where: string, text: string][];

function assertNoSecret(evidence: Evidence): void {
  assert.ok(evidence.length > 0);
  for (const [where, text] of evidence) {
    for (const secret of [KEY, WRONG_KEY]) assert.ok(!text.includes(secret), `a key leaked into ${where}`);
  }
}

function outputOf(name: string, r: ProcessResult): Evidence {
  return [
    [`${name} stdout`, r.stdout],
    [`${name} stderr`, r.stderr],
  ];
}

/** Every file below `dir`, read as latin1 (binary-safe). */
async function filesOf(dir: string): Promise<Evidence> {
  const out: Evidence = [];
  for (const rel of await fs.readdir(dir, { recursive: true })) {
    const p = path.join(dir, rel);
    if ((await fs.lstat(p)).isFile()) out.push([p, await fs.readFile(p, 'latin1')]);
  }
  return out;
}

/** Polls `probe` until it returns a value; bounded by attempts, not by a timed assertion. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>, attempts = 600): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('the vendor API key never leaks from real processes', function () {
  this.timeout(180_000);
  let root: string;
  let dataDir: string;
  let keyFile: string;
  let vendor: VendorSimulator;
  const simLog: string[] = [];
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'secrets-'));
    dataDir = path.join(root, 'data');
    keyFile = path.join(root, 'vendor.key');
    // Group/other-readable on purpose: the loader warns about it, and the warning must not quote the key.
    await fs.writeFile(keyFile, `${KEY}\n`, { mode: 0o644 });
    simLog.length = 0;
    vendor = await startVendorSimulator({
      apiKey: KEY,
      jobDurationMs: 30,
      stateFile: path.join(root, 'sim', 'state.json'),
      log: (line) => simLog.push(line),
    });
  });
  afterEach(async () => {
    await vendor.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  const cliEnv = (key: { file: string } | { env: string }) => ({
    EPISODES_VENDOR_BASE_URL: vendor.url,
    EPISODES_VENDOR_API_KEY_FILE: 'file' in key ? key.file : '',
    EPISODES_VENDOR_API_KEY: 'env' in key ? key.env : '',
  });

  it('ledger and reconcile, with the right key (from a file) and a wrong one: no key in their output', async () => {
    const store = new FileEpisodeStore(dataDir);
    const { episodeId } = await allocateEpisodeOn(store, { allocationKey: 'a', weekId: W32 }, by);
    const id: EpisodeId = parseEpisodeId(episodeId).episodeId;
    assert.throws(() => assertNoSecret([['a planted leak', `x${KEY}x`]]), 'the checker finds a key');
    const evidence: Evidence = [];
    const cli = async (name: string, args: string[], env: Record<string, string>, code: number) => {
      const r = await runCli(['--data-dir', dataDir, ...args], { env });
      assert.equal(r.code, code, `${name}: ${r.stdout}${r.stderr}`);
      evidence.push(...outputOf(name, r));
      return r;
    };
    const good = await cli('ledger (key file)', ['ledger'], cliEnv({ file: keyFile }), 0);
    assert.match(good.stderr, /readable by group or others/, 'the key file warning was printed');
    await cli('ledger --json (key file)', ['ledger', '--json'], cliEnv({ file: keyFile }), 0);
    const wrong = await cli('ledger (wrong key)', ['ledger'], cliEnv({ env: WRONG_KEY }), 1);
    assert.match(wrong.stderr, /^episodes: VendorRejected: /);
    // A cover whose submission the vendor accepted and dropped, at a vendor that cannot look it up: to reconcile.
    vendor.setFaults({ acceptThenDrop: { count: 1 }, noIdempotency: true });
    await assert.rejects(coverStep(store, vendor, id, staticCredentialsLoader(KEY)).submit());
    vendor.setFaults({});
    assert.equal((await store.requireEpisode(id)).steps['cover-r0']?.status, 'needs_reconciliation');
    await cli('ledger (a charge the ledger lacks)', ['ledger', '--json'], cliEnv({ file: keyFile }), 1);
    const reconcile = ['reconcile', id, '--step', 'cover-r0', '--remote-job', 'job_nonexistent'];
    const rejected = await cli('reconcile (wrong key)', reconcile, cliEnv({ env: WRONG_KEY }), 1);
    assert.match(rejected.stderr, /^episodes: VendorRejected: /);
    await cli('reconcile (unknown job)', reconcile, cliEnv({ file: keyFile }), 1);
    await cli('reconcile (key with a space)', reconcile, cliEnv({ env: `${WRONG_KEY} x` }), 1);
    assert.ok(
      vendor.requests().some((r) => !r.authorized),
      'the wrong key did reach the vendor',
    );
    assertNoSecret([...evidence, ...(await filesOf(dataDir)), ...(await filesOf(path.join(root, 'sim')))]);
  });

  describe('a full run through the real worker process (key from EPISODES_VENDOR_API_KEY_FILE)', () => {
    let env: TestWorkflowEnvironment;
    before(async () => {
      env = await createTestEnv();
    });
    after(async () => {
      await env?.teardown();
    });

    it('run → production → approve → completed: nothing in worker or CLI output, files, or histories', async () => {
      const taskQueue = uniqueTaskQueue('secrets');
      const common = {
        TEMPORAL_ADDRESS: env.address,
        EPISODES_TASK_QUEUE: taskQueue,
        EPISODES_DATA_DIR: dataDir,
        EPISODES_STORE_URL: '',
        EPISODES_FAILPOINTS: '',
      };
      const worker = spawnNode('src/worker.js', [], { ...common, ...cliEnv({ file: keyFile }) });
      const workerOutput = collect(worker);
      const evidence: Evidence = [];
      // The CLI never needs the key for these commands: it gets none.
      const cli = async (name: string, args: string[]) => {
        const r = await runCli(args, {
          env: { ...common, EPISODES_VENDOR_API_KEY: '', EPISODES_VENDOR_API_KEY_FILE: '' },
        });
        assert.equal(r.code, 0, `${name}: ${r.stdout}${r.stderr}`);
        evidence.push(...outputOf(name, r));
        return r;
      };
      try {
        const run = await cli('run', ['run', '--key', 'secret-run', '--week', W32, '--json']);
        const id = parseEpisodeId((JSON.parse(run.stdout) as { episodeId: string }).episodeId).episodeId;
        const store = new FileEpisodeStore(dataDir);
        const status = (want: EpisodeState['status']) => async () =>
          (await store.getEpisode(id))?.status === want ? want : undefined;
        await eventually('awaiting_approval', status('awaiting_approval'));
        await cli('status', ['status', id, '--json']);
        await cli('approve', ['approve', id, '--by', 'editor']);
        await eventually('completed', status('completed'));
        await cli('show', ['show', id, '--json']);
        await cli('ledger --no-vendor', ['ledger', '--no-vendor']);
      } finally {
        worker.kill('SIGTERM');
      }
      const w = await workerOutput;
      assert.equal(w.code, 0, `worker exit: ${w.stderr}`);
      assert.match(w.stdout, /worker: task queue/);
      assert.ok(vendor.billing().length >= 3, 'the key was used: video, cover, assembly were charged');

      const histories: Evidence = await eventually('histories of the run', async () => {
        const found: Evidence = [];
        for await (const wf of env.client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) {
          const history = await env.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
          const text = JSON.stringify(history, (_k, v: unknown) =>
            v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v,
          );
          found.push([`history of ${wf.workflowId}`, text]);
        }
        return found.length >= 5 ? found : undefined;
      });
      assertNoSecret([
        ...outputOf('worker', w),
        ...evidence,
        ...histories,
        ...(await filesOf(dataDir)),
        ...(await filesOf(path.join(root, 'sim'))),
        ['simulator log', simLog.join('\n')],
      ]);
    });
  });
});
