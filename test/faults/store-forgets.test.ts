/**
 * The store forgets its last writes while episodes are in flight: PostgreSQL loses its last commits (a failover to
 * an asynchronous replica: synchronous_commit off, then an immediate crash) or is restored from a pg_dump taken
 * earlier; the file store gets back a copy of its data dir taken earlier, put back with the workers stopped. Worker
 * processes as deployed, real Temporal dev server, real vendor simulator. Each row ends with every run completed
 * (steps the vendor could not settle parked `needs_reconciliation`, with one line naming the `episodes reconcile`
 * command, and settled by an operator from the vendor's billing), no charge twice, billing = ledger to the cent and
 * `episodes verify` clean.
 *
 * `npm test` runs the rows marked `quick`; EPISODES_FAULTS=full (`npm run test:faults`) runs every row. The table
 * printed at the end is the third fault table of docs/reliability.md.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { parseEpisodeId } from '../../src/domain/episode-id';
import { productionWorkflowId } from '../../src/domain/names';
import { ErrorType } from '../../src/domain/errors';
import type { EpisodeState } from '../../src/domain/episode-state';
import type { EpisodeStore } from '../../src/store/episode-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor, WORKFLOW_TEST_API_KEY } from '../../testkit/deps';
import { PostgresFaultServer, databaseUrl } from '../../testkit/postgres';
import { runCli } from '../../testkit/processes';
import { createTestEnv, uniqueTaskQueue } from '../../testkit/temporal';
import {
  approveProductions,
  assertInvariants,
  formatTable,
  invariantColumns,
  openTarget,
  sleep,
  startWorkerProcess,
  targetEnv,
  until,
  type StoreKind,
  type StoreTarget,
  type WorkerProcess,
} from '../../testkit/reliability';

const FULL = process.env.EPISODES_FAULTS === 'full';
const momentTimeout = 120_000;

interface Context {
  target: StoreTarget;
  client: Client;
  taskQueue: string;
  /** The week every run of the row asks for. */
  week: string;
  /** The row's database on the fault server (PostgreSQL rows). */
  database: string;
  vendor: VendorSimulator;
  /** A scratch dir of the row (backups go here). */
  dir: string;
  startWorkers(): void;
  stopWorkers(): Promise<void>;
  /** What the store holds now, as an operator's read sees it. */
  progress(): Promise<Progress>;
}

interface Progress {
  intents: number;
  references: number;
  charges: number;
}

interface Row {
  store: StoreKind;
  /** What is forgotten, named so that a reader sees it. */
  forgets: string;
  moment: string;
  quick?: boolean;
  runs: number;
  workers?: number;
  failpoints: string;
  prepare?(ctx: Context): Promise<void>;
  /** Waits for the moment and makes the store forget; returns what the store showed just before, once workers run. */
  inject(ctx: Context): Promise<Progress>;
  /** Instead of approving `runs` productions: what the row expects after the fault, acting as the operator. */
  finish?(ctx: Context, run: RowRun): Promise<{ keys: string[]; charges: number }>;
}

interface RowRun {
  keys: string[];
  week: string;
  taskQueue: string;
  operatorEnv: NodeJS.ProcessEnv;
}

/** Waits until the store shows `want` (e.g. a reference saved), then returns what it shows. */
function reached(ctx: Context, what: string, want: (p: Progress) => boolean): Promise<Progress> {
  return until(
    what,
    async () => {
      const p = await ctx.progress();
      return want(p) ? p : undefined;
    },
    momentTimeout,
  );
}

/** A backup of the file store as a file-level tool takes it while the workers run: lock files are not data. */
async function copyDataDir(from: string, to: string): Promise<void> {
  await fs.cp(from, to, { recursive: true, filter: (src) => !path.basename(src).includes('.lock') });
}

/** Copies the data dir once `backupAt` holds, and puts the copy back, workers stopped, once `restoreAt` holds. */
async function restoreFileStore(
  ctx: Context,
  when: {
    /** When to copy the data dir; absent: the backup was taken before anything ran (`emptyBackup`). */
    backupAt?: (p: Progress) => boolean;
    restoreAt: (p: Progress) => boolean;
    whileStopped?: () => void | Promise<void>;
  },
): Promise<Progress> {
  if (ctx.target.kind !== 'file') throw new Error('a file store row');
  const backup = path.join(ctx.dir, 'backup');
  if (when.backupAt) {
    await reached(ctx, 'the moment of the backup', when.backupAt);
    await copyDataDir(ctx.target.dataDir, backup);
  }
  const before = await reached(ctx, 'the moment of the restore', when.restoreAt);
  await ctx.stopWorkers();
  await fs.rm(ctx.target.dataDir, { recursive: true, force: true });
  await fs.cp(backup, ctx.target.dataDir, { recursive: true });
  await when.whileStopped?.();
  ctx.startWorkers();
  return before;
}

/** A backup taken before any run was allocated: restoring it forgets every allocation, while the runs go on. */
async function emptyBackup(ctx: Context): Promise<void> {
  if (ctx.target.kind === 'file') {
    await fs.mkdir(ctx.target.dataDir, { recursive: true, mode: 0o700 });
    await copyDataDir(ctx.target.dataDir, path.join(ctx.dir, 'backup'));
    return;
  }
  const store = openTarget(ctx.target);
  await store.listEpisodes().finally(() => store.close()); // the schema exists: a dump of an empty store
  await server.dump(ctx.database, path.join(ctx.dir, 'backup.dump'));
}

const ROWS: Row[] = [
  {
    store: 'postgres',
    forgets: 'lost last commits (asynchronous replica failover: synchronous_commit off, immediate crash)',
    moment: 'charges written, steps still running',
    runs: 3,
    failpoints: 'submission.ledger-written=delay:2500',
    async prepare(ctx) {
      await server.sql(`ALTER DATABASE "${ctx.database}" SET synchronous_commit = off`);
    },
    async inject(ctx) {
      const before = await reached(ctx, 'a charge written', (p) => p.charges >= 1);
      await server.crash();
      await sleep(1_500);
      await server.resume();
      return before;
    },
  },
  {
    store: 'postgres',
    forgets: 'restored from an earlier backup (pg_dump at the first reference, restored live)',
    moment: 'references saved → charges written',
    quick: true,
    runs: 3,
    failpoints: 'submission.reference-saved=delay:1500,submission.ledger-written=delay:2500',
    async inject(ctx) {
      await reached(ctx, 'a reference saved', (p) => p.references >= 1);
      const backup = path.join(ctx.dir, 'backup.dump');
      await server.dump(ctx.database, backup);
      const before = await reached(ctx, 'charges written after the backup', (p) => p.charges >= 2);
      await server.restore(ctx.database, backup);
      return before;
    },
  },
  {
    store: 'file',
    forgets: 'restored from an earlier backup (data dir copied at the first reference, put back, workers stopped)',
    moment: 'references saved → charges written',
    runs: 3,
    failpoints: 'submission.reference-saved=delay:1500,submission.ledger-written=delay:2500',
    inject: (ctx) => restoreFileStore(ctx, { backupAt: (p) => p.references >= 1, restoreAt: (p) => p.charges >= 2 }),
  },
  {
    store: 'file',
    forgets:
      'restored from an earlier backup (data dir copied at the intents, put back, workers stopped), ' +
      'vendor without lookup by key',
    moment: 'intents saved → charges written',
    quick: true,
    runs: 1,
    workers: 1,
    failpoints: 'submission.intent-saved=delay:1500,submission.ledger-written=delay:2500',
    inject: (ctx) =>
      restoreFileStore(ctx, {
        backupAt: (p) => p.intents >= 2,
        restoreAt: (p) => p.charges >= 2,
        // From now on the vendor cannot say which job a key created: the forgotten references need an operator.
        whileStopped: () => ctx.vendor.setFaults({ noIdempotency: true }),
      }),
  },
  {
    store: 'file',
    forgets: 'the allocations: restored from a backup taken before them (data dir put back, workers stopped)',
    moment: 'nothing allocated → charges written',
    quick: true,
    runs: 2,
    failpoints: 'submission.ledger-written=delay:2500',
    prepare: emptyBackup,
    inject: (ctx) => restoreFileStore(ctx, { restoreAt: (p) => p.charges >= 2 }),
  },
  {
    store: 'postgres',
    forgets: 'the allocations: restored from a pg_dump taken before them, while the workers run',
    moment: 'nothing allocated → charges written',
    runs: 2,
    failpoints: 'submission.ledger-written=delay:2500',
    prepare: emptyBackup,
    async inject(ctx) {
      const before = await reached(ctx, 'charges written', (p) => p.charges >= 2);
      await server.restore(ctx.database, path.join(ctx.dir, 'backup.dump'));
      return before;
    },
  },
  {
    store: 'file',
    forgets: 'the allocation, and another run took its id meanwhile (allocated while the workers were stopped)',
    moment: 'nothing allocated → references saved',
    quick: true,
    runs: 1,
    workers: 1,
    failpoints: 'submission.reference-saved=delay:1500',
    prepare: emptyBackup,
    inject: (ctx) =>
      restoreFileStore(ctx, {
        restoreAt: (p) => p.references >= 2,
        // Another run asks for an episode of the same week while the store knows nothing: it gets the same id.
        whileStopped: async () => {
          const r = await runCli(['plan', '--key', 'intruder', '--week', ctx.week, '--json'], targetEnv(ctx.target));
          assert.equal((JSON.parse(r.stdout) as { episode_id: string }).episode_id, `${ctx.week}-0`, r.stderr);
        },
      }),
    finish: settleTakenId,
  },
  {
    store: 'file',
    forgets: 'completions after their workflows closed, and all else (backup taken before any run), repaired',
    moment: 'nothing allocated → productions completed',
    quick: true,
    runs: 2,
    failpoints: '',
    prepare: emptyBackup,
    inject: (ctx) => ctx.progress(),
    finish: repairAfterRestore,
  },
  {
    store: 'postgres',
    forgets: 'completions after their workflows closed, and all else (pg_dump taken before any run), repaired',
    moment: 'nothing allocated → productions completed',
    runs: 2,
    failpoints: '',
    prepare: emptyBackup,
    inject: (ctx) => ctx.progress(),
    finish: repairAfterRestore,
  },
];

/** Settles every parked step as the runbook says: read its one line, find its key in the vendor's billing, reconcile. */
async function operator(ctx: Context, env: NodeJS.ProcessEnv, stop: () => boolean): Promise<number> {
  let settled = 0;
  while (!stop()) {
    let episodes: EpisodeState[] = [];
    const store = openTarget(ctx.target);
    try {
      episodes = await store.listEpisodes();
    } catch {
      // mid-restore or restarting: next round
    } finally {
      await store.close();
    }
    for (const e of episodes) {
      for (const [key, r] of Object.entries(e.steps).filter(([, s]) => s.status === 'needs_reconciliation')) {
        const status = await runCli(['status', e.episode_id], env);
        const lines = status.stdout.split('\n').filter((l) => l.includes('PARKED'));
        assert.equal(lines.length, 1, `one line for the parked step:\n${status.stdout}${status.stderr}`);
        assert.ok(lines[0]!.includes(`episodes reconcile ${e.episode_id} --step ${key}`), lines[0]);
        const charge = ctx.vendor.billing().find((c) => c.client_ref === r.idempotency_key);
        const settle = charge ? ['--remote-job', charge.job_id] : ['--not-submitted'];
        const done = await runCli(['reconcile', e.episode_id, '--step', key, ...settle, '--by', 'test-operator'], env);
        assert.equal(done.code, 0, done.stderr);
        settled += 1;
      }
    }
    await sleep(1_000);
  }
  return settled;
}

let server: PostgresFaultServer;
const rowsToRun = ROWS.filter((r) => FULL || r.quick);

describe('the store forgets its last writes: failover to an asynchronous replica, restore from backup', function () {
  this.timeout(30 * 60_000);
  let env: TestWorkflowEnvironment;
  const table: Record<string, string | number>[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  before(async function () {
    this.timeout(10 * 60_000);
    env = await createTestEnv();
    if (rowsToRun.some((r) => r.store === 'postgres')) server = await PostgresFaultServer.start('store-forgets');
  });
  after(async function () {
    this.timeout(5 * 60_000);
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await server?.stop();
    await env?.teardown();
    console.log(`\nthe store forgets\n${formatTable(table)}\n`);
  });

  rowsToRun.forEach((row, index) => {
    it(`${row.store} store ${row.forgets}, at "${row.moment}": every run completes or is reconciled`, async () => {
      const started = Date.now();
      const line: Record<string, string | number> = {
        store: row.store,
        forgets: row.forgets,
        moment: row.moment,
        runs: row.runs,
        outcome: 'failed',
      };
      table.push(line);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'store-forgets-'));
      cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
      const database = `forgets_${index}`;
      let target: StoreTarget = { kind: 'file', dataDir: path.join(dir, 'data') };
      if (row.store === 'postgres') {
        await server.sql(`CREATE DATABASE ${database}`);
        target = { kind: 'postgres', url: databaseUrl(server.url, database), mediaDir: path.join(dir, 'media') };
      }
      const vendor = await startTestVendor();
      cleanups.push(() => vendor.close());
      const taskQueue = uniqueTaskQueue('forgets');
      let workers: WorkerProcess[] = [];
      let generation = 0;
      let observer: EpisodeStore | undefined;
      const ctx: Context = {
        target,
        client: env.client,
        taskQueue,
        week: `2029-W${String(10 + index).padStart(2, '0')}`,
        database,
        vendor,
        dir,
        startWorkers() {
          generation += 1;
          for (let i = 0; i < (row.workers ?? 3); i++) {
            const w = startWorkerProcess(`g${generation}w${i}`, {
              address: env.address,
              taskQueue,
              dataDir: target.kind === 'file' ? target.dataDir : dir,
              store: target,
              vendorUrl: vendor.url,
              failpoints: row.failpoints,
            });
            workers.push(w);
            cleanups.push(() => w.stop());
          }
        },
        async stopWorkers() {
          await Promise.all(workers.map((w) => w.stop()));
          workers = [];
        },
        async progress() {
          observer ??= openTarget(target);
          const episodes = await observer.listEpisodes();
          const steps = episodes.flatMap((e) => Object.values(e.steps));
          return {
            intents: steps.filter((s) => s.status === 'intent').length,
            references: steps.filter((s) => s.remote_job_id !== null).length,
            charges: episodes.reduce((n, e) => n + e.ledger.length, 0),
          };
        },
      };
      const operatorEnv = {
        ...targetEnv(target),
        EPISODES_VENDOR_BASE_URL: vendor.url,
        EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
        EPISODES_VENDOR_API_KEY_FILE: '',
        TEMPORAL_ADDRESS: env.address,
        EPISODES_TASK_QUEUE: taskQueue,
      };
      let finished = false;
      try {
        await row.prepare?.(ctx);
        ctx.startWorkers();
        const week = ctx.week;
        const keys = Array.from({ length: row.runs }, (_, i) => `forgets-${index}-${i}`);
        await Promise.all(
          keys.map((key) =>
            env.client.workflow.start(weeklyEpisodeWorkflow, { workflowId: key, taskQueue, args: [{ week }] }),
          ),
        );
        const before = await row.inject(ctx);
        await observer?.close().catch(() => undefined);
        observer = undefined;
        const after = await until('the store answers again', () => ctx.progress(), momentTimeout);
        line['just before → after'] = describeLoss(before, after);
        const settling = operator(ctx, operatorEnv, () => finished);
        settling.catch(() => undefined); // awaited below
        const expected = await (
          row.finish
            ? row.finish(ctx, { keys, week, taskQueue, operatorEnv })
            : approveAll(ctx, row.runs).then(() => ({ keys, charges: row.runs * 3 }))
        ).finally(() => {
          finished = true;
        });
        line.reconciled = await settling;
        await ctx.stopWorkers();
        const counts = await assertInvariants(target, vendor, { keys: expected.keys, allCompleted: true });
        assert.equal(counts.charges, expected.charges, 'video, cover and assembly charged once per episode');
        Object.assign(line, { outcome: 'completed', ...invariantColumns(counts) });
      } finally {
        finished = true;
        line.seconds = Math.round((Date.now() - started) / 1000);
        await observer?.close().catch(() => undefined);
        await ctx.stopWorkers();
      }
    });
  });
});

/**
 * The operator approves every production as it waits; each must complete. A production that fails meanwhile (one
 * that had not failed already) fails the row at once, with its failure, rather than at the approver's timeout.
 */
async function approveAll(ctx: Context, runs: number): Promise<void> {
  const failedBefore = new Set((await failedProductions(ctx)).map((f) => f.workflowId));
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const failed = (await failedProductions(ctx)).filter((f) => !failedBefore.has(f.workflowId));
      if (failed.length > 0) {
        throw new assert.AssertionError({ message: `productions failed: ${failed.map((f) => f.why).join('; ')}` });
      }
      await sleep(1_000);
    }
  })();
  try {
    const outcomes = await Promise.race([approveProductions(ctx.client, ctx.target, runs, 10 * 60_000), watcher]);
    assert.deepEqual(
      (outcomes ?? []).filter((o) => o.result.outcome !== 'completed').map((o) => o.episodeId),
      [],
      'every production completed',
    );
  } finally {
    watching = false;
    await watcher.catch(() => undefined);
  }
}

async function failedProductions(ctx: Context): Promise<{ workflowId: string; why: string }[]> {
  const query =
    `TaskQueue = "${ctx.taskQueue}" AND WorkflowType = "episodeProductionWorkflow" ` + `AND ExecutionStatus = "Failed"`;
  const failed: { workflowId: string; why: string }[] = [];
  for await (const w of ctx.client.workflow.list({ query })) {
    const e: unknown = await ctx.client.workflow
      .getHandle(w.workflowId, w.runId)
      .result()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    const cause = applicationFailureOf(e);
    failed.push({
      workflowId: w.workflowId,
      why: `${w.workflowId}: ${cause?.type ?? '?'}: ${cause?.message ?? String(e)}`,
    });
  }
  return failed;
}

/**
 * The run's id was taken by another key while the store had forgotten it: its production stops with
 * AllocationConflict, overwriting nothing; the operator then does what the error says (the run gets a new episode,
 * the other key's episode is produced) and both complete, each step charged once (the other key's production finds
 * the steps the first one paid for at the vendor, by idempotency key).
 */
async function settleTakenId(ctx: Context, run: RowRun): Promise<{ keys: string[]; charges: number }> {
  const [key] = run.keys;
  const id = `${run.week}-0`;
  const store = openTarget(ctx.target);
  try {
    const untouched = async () => {
      const state = await store.requireEpisode(parseEpisodeId(id).episodeId);
      assert.deepEqual([state.allocation_key, state.steps, state.ledger], ['intruder', {}, []], 'nothing overwritten');
    };
    // Until the run's production closes, the other run's episode must stay as the other run left it.
    const production = ctx.client.workflow.getHandle(productionWorkflowId(id));
    await until(
      'the production to stop',
      async () => {
        await untouched();
        return (await production.describe()).status.name === 'RUNNING' ? undefined : true;
      },
      momentTimeout,
    );
    const failure: unknown = await production.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    const cause = applicationFailureOf(failure);
    assert.equal(
      cause?.type,
      ErrorType.AllocationConflict,
      `the production stops with the conflict: ${String(failure)}`,
    );
    assert.ok(cause.message.includes(`episodes generate ${id}`), cause.message);
    await untouched();
  } finally {
    await store.close();
  }
  const rerun = await ctx.client.workflow.start(weeklyEpisodeWorkflow, {
    workflowId: key!,
    taskQueue: run.taskQueue,
    args: [{ week: run.week }],
  });
  assert.equal((await rerun.result()).episodeId, `${run.week}-1`, 'the run gets a new episode');
  const generated = await runCli(['generate', id], run.operatorEnv);
  assert.equal(generated.code, 0, generated.stderr);
  await approveAll(ctx, 2);
  return { keys: [key!, 'intruder'], charges: 6 };
}

/**
 * Every production completes; then the store is put back to its backup from before the first run, so that it forgets
 * the allocations, the charges, the completions and history of workflows that have all closed. `episodes repair`
 * (dry run first: nothing written) puts all of it back from Temporal's records and the vendor; a second run has
 * nothing to do.
 */
async function repairAfterRestore(ctx: Context, run: RowRun): Promise<{ keys: string[]; charges: number }> {
  await approveAll(ctx, run.keys.length);
  await ctx.stopWorkers();
  if (ctx.target.kind === 'file') {
    await fs.rm(ctx.target.dataDir, { recursive: true, force: true });
    await fs.cp(path.join(ctx.dir, 'backup'), ctx.target.dataDir, { recursive: true });
  } else await server.restore(ctx.database, path.join(ctx.dir, 'backup.dump'));
  assert.deepEqual(await ctx.progress(), { intents: 0, references: 0, charges: 0 }, 'the store forgot it all');
  const repair = async (...flags: string[]) => {
    const r = await runCli(['repair', '--json', ...flags], run.operatorEnv);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { actions: { episode_id: string; action: string }[] }).actions.map(
      (a) => `${a.episode_id} ${a.action}`,
    );
  };
  const expected = [0, 1].flatMap((s) => [
    `${run.week}-${s} allocation-reasserted`,
    `${run.week}-${s} completion-reapplied`,
  ]);
  assert.deepEqual(await repair('--dry-run'), expected, 'the dry run lists both episodes');
  assert.deepEqual(await ctx.progress(), { intents: 0, references: 0, charges: 0 }, 'the dry run wrote nothing');
  assert.deepEqual(await repair(), expected);
  const store = openTarget(ctx.target);
  try {
    for (const h of await store.listHistory()) {
      const state = await store.requireEpisode(parseEpisodeId(h.episode_id).episodeId);
      assert.deepEqual([state.status, state.ledger], ['completed', h.ledger], `${h.episode_id}: completed as recorded`);
    }
  } finally {
    await store.close();
  }
  assert.deepEqual(await repair(), [], 'a second run has nothing to do');
  return { keys: run.keys, charges: run.keys.length * 3 };
}

function applicationFailureOf(e: unknown): ApplicationFailure | undefined {
  for (let c = e; c instanceof Error; c = c.cause) if (c instanceof ApplicationFailure) return c;
  return undefined;
}

/** What the store showed just before the fault and right after it: the difference is what it forgot (or less). */
function describeLoss(before: Progress, after: Progress): string {
  return `refs ${before.references}→${after.references}, charges ${before.charges}→${after.charges}`;
}
