import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../../src/activities';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { runCli } from '../../../testkit/processes';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { startTestVendor, testDeps } from '../../../testkit/deps';
import { createTestEnv, createTestWorker, uniqueTaskQueue, workflowBundle } from '../../../testkit/temporal';
import { snapshotTree } from '../../../testkit/tree';

describe('episodes CLI', function () {
  this.timeout(60_000);
  let root: string;
  let dataDir: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'cli-'));
    dataDir = path.join(root, 'data');
  });
  afterEach(() => fs.rm(root, { recursive: true, force: true }));
  const cli = (...args: string[]) =>
    runCli(['--data-dir', dataDir, ...args], { EPISODES_DATA_DIR: '', EPISODES_STORE_URL: '' });

  it('plans with JSON output: same key same episode, next key next sequence, --at in a timezone', async () => {
    const a = await cli('plan', '--key', 'run-a', '--week', '2026-W32', '--json');
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual(JSON.parse(a.stdout), {
      episode_id: '2026-W32-0',
      week_id: '2026-W32',
      sequence: 0,
      created: true,
    });
    const again = JSON.parse((await cli('plan', '--key', 'run-a', '--week', '2026-W32', '--json')).stdout);
    assert.deepEqual(again, { episode_id: '2026-W32-0', week_id: '2026-W32', sequence: 0, created: false });
    const sh = await cli(
      'plan',
      '--key',
      'run-b',
      '--at',
      '2026-08-09T23:30:00Z',
      '--timezone',
      'Asia/Shanghai',
      '--json',
    );
    assert.equal(JSON.parse(sh.stdout).episode_id, '2026-W33-0');
    const list = JSON.parse((await cli('list', '--json')).stdout);
    assert.deepEqual(
      list.map((e: { episode_id: string }) => e.episode_id),
      ['2026-W32-0', '2026-W33-0'],
    );
    const show = await cli('show', '2026-W33-0', '--json');
    assert.equal(JSON.parse(show.stdout).allocation_key, 'run-b');
  });

  it('refuses with exit 1 and one line on stderr: cross-week key, unknown episode', async () => {
    await cli('plan', '--key', 'run-a', '--week', '2026-W32');
    const cross = await cli('plan', '--key', 'run-a', '--week', '2026-W33');
    assert.equal(cross.code, 1);
    assert.match(cross.stderr, /^episodes: AllocationKeyCrossesWeek: .*2026-W32-0.*\n$/);
    const missing = await cli('show', '2026-W40-3');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^episodes: EpisodeNotFound: /);
  });

  it('rejects bad input with exit 2 and creates no file anywhere', async function () {
    // 17 CLI starts one after the other (about 0.7 s each alone): minutes when CI runs 4 test files on 2 cores.
    this.timeout(240_000);
    const cases: string[][] = [
      ['plan', '--key', 'k', '--week', '2026-W54'],
      ['plan', '--key', 'k', '--week', '2025-W53'],
      ['plan', '--key', 'k', '--week', '2026-w32'],
      ['plan', '--key', 'k', '--week', '2026-W32/../../x'],
      ['plan', '--key', '', '--week', '2026-W32'],
      ['plan', '--key', 'k'.repeat(257), '--week', '2026-W32'],
      ['plan', '--key', 'bad\u0001key', '--week', '2026-W32'],
      ['plan', '--key', 'bad\nkey', '--week', '2026-W32'],
      ['plan', '--key', 'k', '--at', '2026-08-03T09:00:00'],
      ['plan', '--key', 'k', '--at', '2026-08-03T09:00:00Z', '--timezone', 'Mars/Base'],
      ['plan', '--key', 'k'],
      ['plan', '--week', '2026-W32'],
      ['show', '2026-W32-1/../../etc'],
      ['show', '../2026-W32-1'],
      ['show', '2026-W32-01'],
      ['list', '--week', 'W32'],
      ['no-such-command'],
    ];
    const cwdBefore = await snapshotTree(root);
    for (const args of cases) {
      const r = await cli(...args);
      assert.equal(r.code, 2, `${JSON.stringify(args)} → ${r.code}: ${r.stderr}`);
      assert.ok(r.stderr.trim().length > 0, `a clear message for ${JSON.stringify(args)}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line for ${JSON.stringify(args)}: ${r.stderr}`);
    }
    assert.deepEqual(await snapshotTree(root), cwdBefore, 'no file created');
  });

  describe('with a Temporal dev server', () => {
    let env: TestWorkflowEnvironment;
    let vendor: VendorSimulator;
    before(async () => {
      env = await createTestEnv();
      vendor = await startTestVendor();
    });
    after(async () => {
      await vendor?.close();
      await env?.teardown();
    });

    it('schedule ensure is idempotent; run --key twice gives one episode', async () => {
      const taskQueue = uniqueTaskQueue();
      const temporalEnv = {
        TEMPORAL_ADDRESS: env.address,
        EPISODES_TASK_QUEUE: taskQueue,
        EPISODES_DATA_DIR: '',
        EPISODES_STORE_URL: '',
      };
      const withTemporal = (...args: string[]) => runCli(['--data-dir', dataDir, ...args], temporalEnv);
      const first = await withTemporal('schedule', 'ensure', '--schedule-id', 'cli-weekly');
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /created/);
      const second = await withTemporal('schedule', 'ensure', '--schedule-id', 'cli-weekly');
      assert.match(second.stdout, /updated/);
      const described = JSON.parse(
        (await withTemporal('schedule', 'describe', '--schedule-id', 'cli-weekly', '--json')).stdout,
      );
      const next = new Date(described.next_action_times[0]);
      assert.equal(next.getUTCDay(), 1, 'Mondays');
      assert.equal(next.getUTCHours(), 9);

      const worker = await createTestWorker({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: await workflowBundle(),
        activities: createActivities(testDeps(new FileEpisodeStore(dataDir), vendor)),
      });
      await worker.runUntil(async () => {
        const a = await withTemporal('run', '--key', 'manual-1', '--week', '2026-W32', '--json');
        assert.equal(a.code, 0, a.stderr);
        const b = await withTemporal('run', '--key', 'manual-1', '--week', '2026-W32', '--json');
        assert.equal(JSON.parse(a.stdout).episodeId, '2026-W32-0');
        assert.equal(JSON.parse(b.stdout).episodeId, '2026-W32-0');
        assert.equal(JSON.parse(b.stdout).created, false);
      });
    });
  });
});
