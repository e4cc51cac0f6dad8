/**
 * An id is never handed out twice after a restore: run A is given W-0, the store is restored to before A (a copy of
 * the file store's data dir; PostgreSQL point-in-time recovery), and run B of the same week is given W-1 while A
 * keeps W-0 under its own key. Real dev server, real vendor simulator, workers restarted on the restored store as an
 * operator would. The last case of each store takes Temporal's records of the week away (in test code) and B is handed
 * A's id again: the failure campaign seed 73160 found.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { temporalAllocationRecords, type AllocationRecords } from '../../src/activities/allocation-records';
import type { RepairAction } from '../../src/activities/repair';
import { productionWorkflowId } from '../../src/domain/names';
import type { EpisodeStore } from '../../src/store/episode-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow, type WeeklyEpisodeResult } from '../../src/workflows/weekly-episode';
import { type episodeProductionWorkflow } from '../../src/workflows';
import { statusQuery } from '../../src/workflows/messages';
import { startTestVendor, testDeps } from '../helpers/deps';
import { PostgresFaultServer } from '../helpers/postgres';
import { runCli } from '../helpers/processes';
import { openTarget, targetEnv, type StoreKind, type StoreTarget } from '../helpers/reliability';
import { createTestEnv, createTestWorker, uniqueTaskQueue, workflowBundle } from '../helpers/temporal';
import { until } from '../helpers/wait';

/** A store that can be put back to an earlier moment. */
interface Restorable {
  target(): StoreTarget;
  /** The moment a later `restore` goes back to. */
  backup(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** The file store: its data dir copied, and put back with no worker running. */
function fileRestorable(dir: string): Restorable {
  const dataDir = path.join(dir, 'data');
  const copy = path.join(dir, 'backup');
  return {
    target: () => ({ kind: 'file', dataDir }),
    backup: async () => {
      await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
      await fs.cp(dataDir, copy, { recursive: true });
    },
    restore: async () => {
      await fs.rm(dataDir, { recursive: true, force: true });
      await fs.cp(copy, dataDir, { recursive: true });
    },
    close: () => Promise.resolve(),
  };
}

/** PostgreSQL: a base backup and the LSN after it; the restore is a new server recovered to that LSN. */
async function postgresRestorable(dir: string, name: string): Promise<Restorable> {
  const archiveDir = path.join(dir, 'wal');
  const backupDir = path.join(dir, 'base');
  const mediaDir = path.join(dir, 'media');
  await fs.mkdir(archiveDir);
  let server = await PostgresFaultServer.start(name, { archiveDir });
  let lsn = '';
  return {
    target: () => ({ kind: 'postgres', url: server.url, mediaDir }),
    backup: async () => {
      const store = openTarget({ kind: 'postgres', url: server.url, mediaDir });
      await store.listEpisodes().finally(() => store.close()); // the first use creates the schema
      await server.baseBackup(backupDir);
      lsn = await server.sql('SELECT pg_current_wal_lsn()');
    },
    restore: async () => {
      await server.archiveNow();
      const from = server;
      server = await PostgresFaultServer.pitr(from, `${name}-restored`, { backupDir, lsn, archiveDir });
      await from.stop();
    },
    close: () => server.stop(),
  };
}

/** What a case sees once B has run on the restored store. */
interface Seen {
  a: WeeklyEpisodeResult;
  b: WeeklyEpisodeResult;
  /** The store's episodes and their keys. */
  owners: Map<string, string | null>;
  /** The CLI's environment: the restored store, the dev server, the case's task queue. */
  cli: NodeJS.ProcessEnv;
}

/** Temporal's records with the week's handed-out ids taken away: the protection removed, in test code. */
function withoutWeekRecords(records: AllocationRecords): AllocationRecords {
  return { ...records, handedOutIn: () => Promise.resolve([]) };
}

describe('a restored store never hands out an id twice', function () {
  this.timeout(300_000);
  // Production IDs are the namespace's: each case has a week of its own on the shared dev server.
  let week = 39;
  let WEEK = '';
  let env: TestWorkflowEnvironment;
  let vendor: VendorSimulator;
  let dir: string;

  before(async () => {
    env = await createTestEnv();
    await workflowBundle();
    vendor = await startTestVendor();
  });
  after(async () => {
    await vendor?.close();
    await env?.teardown();
  });
  beforeEach(() => {
    WEEK = `2026-W${++week}`;
    dir = mkdtempSync(path.join(os.tmpdir(), 'restore-reuse-'));
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  /**
   * A in week W on a worker; its production parked at the approval (no activity of it runs later); the store restored
   * to before A, workers restarted on it; then B in week W. Returns both results, the store's view and the CLI env.
   */
  async function restoreBetween(
    kind: StoreKind,
    records: (real: AllocationRecords) => AllocationRecords,
    check: (seen: Seen) => Promise<void>,
  ): Promise<void> {
    const taskQueue = uniqueTaskQueue('restore');
    const keys = { a: `${taskQueue}-a`, b: `${taskQueue}-b` };
    const restorable = kind === 'file' ? fileRestorable(dir) : await postgresRestorable(dir, path.basename(dir));
    try {
      await restorable.backup();
      const a = await onWorker(restorable.target(), taskQueue, records, async () => {
        const result = await runWeekly(keys.a, taskQueue);
        const production = env.client.workflow.getHandle<typeof episodeProductionWorkflow>(
          productionWorkflowId(result.episodeId),
        );
        await until('A parked at the approval', async () =>
          (await production.query(statusQuery)).phase === 'awaiting_approval' ? true : undefined,
        );
        return result;
      });
      await restorable.restore();
      const b = await onWorker(restorable.target(), taskQueue, records, () => runWeekly(keys.b, taskQueue));
      const store = openTarget(restorable.target());
      const owners = await store
        .listEpisodes()
        .then((all) => new Map(all.map((e) => [e.episode_id, e.allocation_key])))
        .finally(() => store.close());
      const cli = { ...targetEnv(restorable.target()), TEMPORAL_ADDRESS: env.address, EPISODES_TASK_QUEUE: taskQueue };
      await check({ a, b, owners, cli });
    } finally {
      await restorable.close();
    }
  }

  async function onWorker<T>(
    target: StoreTarget,
    taskQueue: string,
    records: (real: AllocationRecords) => AllocationRecords,
    fn: () => Promise<T>,
  ): Promise<T> {
    const store: EpisodeStore = openTarget(target);
    try {
      const worker = await createTestWorker({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: await workflowBundle(),
        activities: createActivities(
          testDeps(store, vendor, undefined, { allocationRecords: records(temporalAllocationRecords(env.client)) }),
        ),
      });
      return await worker.runUntil(fn);
    } finally {
      await store.close();
    }
  }

  const runWeekly = (workflowId: string, taskQueue: string) =>
    env.client.workflow.execute(weeklyEpisodeWorkflow, { workflowId, taskQueue, args: [{ week: WEEK }] });

  for (const kind of ['file', 'postgres'] as const) {
    it(`${kind} store: B gets W-1, A keeps W-0 under its own key, verify is clean`, async () => {
      await restoreBetween(
        kind,
        (real) => real,
        async ({ a, b, owners, cli }) => {
          assert.equal(a.episodeId, `${WEEK}-0`);
          assert.equal(b.episodeId, `${WEEK}-1`);
          assert.equal(b.production.startedByThisRun, true);
          assert.deepEqual(
            owners,
            new Map([
              [`${WEEK}-0`, a.allocationKey],
              [`${WEEK}-1`, b.allocationKey],
            ]),
          );
          const verify = await runCli(['verify', '--json'], cli);
          assert.equal(verify.code, 0, verify.stdout + verify.stderr);
          assert.deepEqual(repairActions((await runCli(['repair', '--dry-run', '--json'], cli)).stdout), []);
        },
      );
    });

    it(`${kind} store: without Temporal's records of the week, B is handed A's id again, and repair names both keys`, async () => {
      await restoreBetween(kind, withoutWeekRecords, async ({ a, b, owners, cli }) => {
        assert.equal(a.episodeId, `${WEEK}-0`);
        assert.equal(b.episodeId, `${WEEK}-0`);
        assert.equal(b.production.startedByThisRun, false);
        assert.deepEqual(owners, new Map([[`${WEEK}-0`, b.allocationKey]]));
        const repair = await runCli(['repair', '--dry-run', '--json'], cli);
        assert.notEqual(repair.code, 0);
        const [conflict, ...others] = repairActions(repair.stdout);
        assert.deepEqual(others, []);
        assert.equal(conflict?.action, 'conflict');
        assert.ok(
          conflict.detail.includes(a.allocationKey) && conflict.detail.includes(b.allocationKey),
          conflict.detail,
        );
      });
    });
  }
});

function repairActions(stdout: string): RepairAction[] {
  return (JSON.parse(stdout) as { actions: RepairAction[] }).actions;
}
