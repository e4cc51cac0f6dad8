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
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { EpisodeState } from '../../src/domain/episode-state';
import type { EpisodeStore } from '../../src/store/episode-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor, WORKFLOW_TEST_API_KEY } from '../helpers/deps';
import { PostgresFaultServer, databaseUrl } from '../helpers/postgres';
import { runCli } from '../helpers/processes';
import { createTestEnv, uniqueTaskQueue } from '../helpers/temporal';
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
} from '../helpers/reliability';

const FULL = process.env.EPISODES_FAULTS === 'full';
const momentTimeout = 120_000;

interface Context {
  target: StoreTarget;
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
  when: { backupAt: (p: Progress) => boolean; restoreAt: (p: Progress) => boolean; whileStopped?: () => void },
): Promise<Progress> {
  if (ctx.target.kind !== 'file') throw new Error('a file store row');
  await reached(ctx, 'the moment of the backup', when.backupAt);
  const backup = path.join(ctx.dir, 'backup');
  await copyDataDir(ctx.target.dataDir, backup);
  const before = await reached(ctx, 'the moment of the restore', when.restoreAt);
  await ctx.stopWorkers();
  await fs.rm(ctx.target.dataDir, { recursive: true, force: true });
  await fs.cp(backup, ctx.target.dataDir, { recursive: true });
  when.whileStopped?.();
  ctx.startWorkers();
  return before;
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
        const week = `2029-W${String(10 + index).padStart(2, '0')}`;
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
        const outcomes = await approveProductions(env.client, target, row.runs, 10 * 60_000).finally(() => {
          finished = true;
        });
        line.reconciled = await settling;
        assert.deepEqual(
          outcomes.filter((o) => o.result.outcome !== 'completed').map((o) => o.episodeId),
          [],
          'every production completed',
        );
        await ctx.stopWorkers();
        const counts = await assertInvariants(target, vendor, { keys, allCompleted: true });
        assert.equal(counts.charges, row.runs * 3, 'video, cover and assembly charged once per run');
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

/** What the store showed just before the fault and right after it: the difference is what it forgot (or less). */
function describeLoss(before: Progress, after: Progress): string {
  return `refs ${before.references}→${after.references}, charges ${before.charges}→${after.charges}`;
}
