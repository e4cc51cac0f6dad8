/**
 * An id is never handed out twice after a restore: run A is given W-0, the store is restored to before A (a copy of
 * the file store's data dir; PostgreSQL point-in-time recovery), and run B of the same week is given W-1 while A
 * keeps W-0 under its own key. A either ran through before the restore, or had its allocation answered and not yet
 * recorded (workers stopped between the two). Real dev server, real vendor simulator, workers restarted on the
 * restored store as an operator would. Each case's twin takes the protection it relies on away (in test code) and B
 * is handed A's id again: the failure campaign seed 73160 found.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { temporalAllocationRecords, type AllocationRecords } from '../../src/activities/allocation-records';
import type { RepairAction } from '../../src/activities/repair';
import type { EpisodeStore } from '../../src/store/episode-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow, type WeeklyEpisodeResult } from '../../src/workflows/weekly-episode';
import { type episodeProductionWorkflow } from '../../src/workflows';
import { statusQuery } from '../../src/workflows/messages';
import { startTestVendor, testDeps } from '../../testkit/deps';
import { PostgresFaultServer } from '../../testkit/postgres';
import { runCli } from '../../testkit/processes';
import { openTarget, targetEnv, type StoreKind, type StoreTarget } from '../../testkit/reliability';
import { createVersionedWorker, versionOfCode } from '../../src/process/worker-deployment';
import { createTestEnv, createTestWorker, uniqueTaskQueue, workflowBundle } from '../../testkit/temporal';
import { until } from '../../testkit/wait';

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
  // The server's user is given the folder of its WAL archive and base backup: one of their own, not the media's.
  const serverDir = mkdtempSync(path.join(os.tmpdir(), 'restore-reuse-pg-'));
  const archiveDir = path.join(serverDir, 'wal');
  const backupDir = path.join(serverDir, 'base');
  const mediaDir = path.join(dir, 'media');
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
    close: async () => {
      await server.stop();
      await fs.rm(serverDir, { recursive: true, force: true });
    },
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

/** Temporal's records without the week's handed-out ids: that protection removed, in test code. */
function withoutWeekRecords(records: AllocationRecords): AllocationRecords {
  return { ...records, handedOutIn: () => Promise.resolve([]) };
}

/** Temporal's records without the answers open runs have not recorded yet: that protection removed, in test code. */
function withoutUnrecordedAnswers(records: AllocationRecords): AllocationRecords {
  return { ...records, answeredUnrecorded: () => Promise.resolve([]) };
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
   * A in week W before a backup's moment passes: `parked`, run through with its production parked at the approval (no
   * activity of it runs later); `answered`, its allocation answered and the workflow task that would record the answer
   * not run (the workers stopped between the two). Then the store is restored to before A, and B of week W runs on
   * workers restarted on it (on a queue of its own when A's next task must wait), then A goes on.
   */
  async function restoreBetween(
    kind: StoreKind,
    before: 'parked' | 'answered',
    records: (real: AllocationRecords) => AllocationRecords,
    check: (seen: Seen) => Promise<void>,
  ): Promise<void> {
    const queueA = uniqueTaskQueue('restore');
    const queueB = before === 'parked' ? queueA : `${queueA}-b`;
    const restorable = kind === 'file' ? fileRestorable(dir) : await postgresRestorable(dir, path.basename(dir));
    const on = <T>(queue: string, fn: () => Promise<T>) => onWorker(restorable.target(), queue, records, fn);
    try {
      await restorable.backup();
      const startA = () => runWeekly(`${queueA}-a`, queueA);
      if (before === 'parked') await on(queueA, async () => parked(await (await startA()).result()));
      else await answerOnly(restorable.target(), queueA, records, await startA());
      await restorable.restore();
      const b = await on(queueB, async () => (await runWeekly(`${queueA}-b`, queueB)).result());
      const a = await on(queueA, async () => parked(await env.client.workflow.getHandle(`${queueA}-a`).result()));
      const store = openTarget(restorable.target());
      const owners = await store
        .listEpisodes()
        .then((all) => new Map(all.map((e) => [e.episode_id, e.allocation_key])))
        .finally(() => store.close());
      const cli = { ...targetEnv(restorable.target()), TEMPORAL_ADDRESS: env.address, EPISODES_TASK_QUEUE: queueB };
      await check({ a, b, owners, cli });
    } finally {
      await restorable.close();
    }
  }

  /** The run once the production it started waits for the approval (no activity of it runs after that). */
  async function parked(result: WeeklyEpisodeResult): Promise<WeeklyEpisodeResult> {
    if (!result.production.startedByThisRun) return result;
    const production = env.client.workflow.getHandle<typeof episodeProductionWorkflow>(result.production.workflowId);
    await until('the production parked at the approval', async () =>
      (await production.query(statusQuery)).phase === 'awaiting_approval' ? true : undefined,
    );
    return result;
  }

  /** A workflow-only worker schedules the run's allocation, an activity-only worker answers it; nothing more runs. */
  async function answerOnly(
    target: StoreTarget,
    taskQueue: string,
    records: (real: AllocationRecords) => AllocationRecords,
    run: WorkflowHandle,
  ): Promise<void> {
    const bundle = await workflowBundle();
    const scheduler = await createTestWorker({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle });
    await scheduler.runUntil(
      until('the allocation scheduled', async () =>
        (await run.describe()).raw.pendingActivities?.length ? true : undefined,
      ),
    );
    const store = openTarget(target);
    try {
      const answerer = await createVersionedWorker(
        { connection: env.nativeConnection, taskQueue, activities: activitiesOn(store, records) },
        versionOfCode(bundle.code),
        () => undefined,
      );
      await answerer.runUntil(
        until('the allocation answered', async () =>
          (await run.fetchHistory()).events?.some((e) => e.activityTaskCompletedEventAttributes) ? true : undefined,
        ),
      );
    } finally {
      await store.close();
    }
  }

  const activitiesOn = (store: EpisodeStore, records: (real: AllocationRecords) => AllocationRecords) =>
    createActivities(
      testDeps(store, vendor, undefined, { allocationRecords: records(temporalAllocationRecords(env.client)) }),
    );

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
        activities: activitiesOn(store, records),
      });
      return await worker.runUntil(fn);
    } finally {
      await store.close();
    }
  }

  const runWeekly = (workflowId: string, taskQueue: string) =>
    env.client.workflow.start(weeklyEpisodeWorkflow, { workflowId, taskQueue, args: [{ week: WEEK }] });

  const cases = [
    { before: 'parked', protection: "the week's ids in Temporal", unsafe: withoutWeekRecords },
    { before: 'answered', protection: 'the answers not yet recorded', unsafe: withoutUnrecordedAnswers },
  ] as const;

  for (const kind of ['file', 'postgres'] as const) {
    for (const { before, protection, unsafe } of cases) {
      it(`${kind} store, A ${before} before the restore: B gets W-1, A keeps W-0, verify is clean`, async () => {
        await restoreBetween(
          kind,
          before,
          (real) => real,
          async ({ a, b, owners, cli }) => {
            assert.equal(a.episodeId, `${WEEK}-0`);
            assert.equal(b.episodeId, `${WEEK}-1`);
            assert.equal(a.production.startedByThisRun, true);
            assert.equal(b.production.startedByThisRun, true);
            const expected = [
              [`${WEEK}-0`, a.allocationKey],
              [`${WEEK}-1`, b.allocationKey],
            ] as const;
            assert.deepEqual(owners, new Map(expected));
            const verify = await runCli(['verify', '--json'], cli);
            assert.equal(verify.code, 0, verify.stdout + verify.stderr);
            assert.deepEqual(repairActions((await runCli(['repair', '--dry-run', '--json'], cli)).stdout), []);
          },
        );
      });

      it(`${kind} store, A ${before}: without ${protection}, B is handed A's id again; repair names both keys`, async () => {
        await restoreBetween(kind, before, unsafe, async ({ a, b, owners, cli }) => {
          assert.equal(a.episodeId, `${WEEK}-0`);
          assert.equal(b.episodeId, `${WEEK}-0`);
          assert.deepEqual(owners, new Map([[`${WEEK}-0`, b.allocationKey]]));
          const repair = await runCli(['repair', '--dry-run', '--json'], cli);
          assert.notEqual(repair.code, 0);
          const [conflict, ...others] = repairActions(repair.stdout);
          assert.deepEqual(others, []);
          assert.equal(conflict?.action, 'conflict');
          assert.ok(conflict.detail.includes(a.allocationKey), conflict.detail);
          assert.ok(conflict.detail.includes(b.allocationKey), conflict.detail);
        });
      });
    }
  }
});

function repairActions(stdout: string): RepairAction[] {
  return (JSON.parse(stdout) as { actions: RepairAction[] }).actions;
}
