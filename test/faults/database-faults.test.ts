/**
 * Database faults × moments: 3 worker processes (as deployed) on one PostgreSQL server of their own, real Temporal dev
 * server, real vendor simulator. Each row starts weekly runs, waits for a moment of the protocol (held open by a
 * failpoint delay), faults the database there — crash and restart it, terminate the advisory-lock holder or every
 * session of one worker, starve it of connections, time out statements, or have it down when the workers start — and
 * then requires every run to complete, and the invariants: one episode per run, billing = ledger, no charge twice or
 * lost, `episodes verify` clean, no advisory lock or idle-in-transaction session left.
 *
 * `npm test` runs the rows marked `quick`; EPISODES_FAULTS=full (`npm run test:faults`) runs every row. The table
 * printed at the end is the second fault table of docs/reliability.md.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { PIPELINE_LOCK_ID, PostgresEpisodeStore } from '../../src/store/postgres-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor } from '../../testkit/deps';
import { PostgresFaultServer, databaseUrl } from '../../testkit/postgres';
import { createTestEnv, uniqueTaskQueue } from '../../testkit/temporal';
import {
  approveProductions,
  assertInvariants,
  reportTable,
  invariantColumns,
  sleep,
  startWorkerProcess,
  until,
  type StoreTarget,
  type WorkerProcess,
} from '../../testkit/reliability';

const FULL = process.env.EPISODES_FAULTS === 'full';
/**
 * Proofs that the rows can fail: `RELIABILITY_PROOF_NO_LOCK=1` (workers skip the advisory lock) or
 * `RELIABILITY_PROOF_SPLIT_TX=1` (allocation decides and inserts in two transactions). Either also drops the schema's
 * uniqueness constraints, the second layer that would otherwise refuse the duplicate (test/store shows that layer).
 */
const WITHOUT_LOCK = process.env.RELIABILITY_PROOF_NO_LOCK === '1';
const SPLIT_TX = process.env.RELIABILITY_PROOF_SPLIT_TX === '1';
const PROOF = WITHOUT_LOCK || SPLIT_TX;

interface Context {
  server: PostgresFaultServer;
  db: string;
  target: StoreTarget;
  workers: WorkerProcess[];
  /** One admin statement on the scenario's database. */
  sql(statement: string): Promise<string>;
}

interface Scenario {
  fault: string;
  moment: string;
  quick?: boolean;
  runs: number;
  workers?: number;
  /** EPISODES_FAULTS of every worker: holds the moment open long enough to fault it. */
  failpoints?: string;
  /** Before the workers start (e.g. the server down, or fewer connections). */
  prepare?(ctx: Context): Promise<void>;
  /** After the runs started: wait for the moment, inject the fault; returns when the fault is over. */
  inject?(ctx: Context): Promise<void>;
  /** After the workers started: a check on the workers themselves. */
  checkWorkers?(ctx: Context): Promise<void>;
  /** Undo `prepare` once the runs completed. */
  cleanup?(ctx: Context): Promise<void>;
}

const count = async (ctx: Context, statement: string) => Number(await ctx.sql(statement));
const lockWaiters = (ctx: Context) =>
  count(
    ctx,
    `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = ${PIPELINE_LOCK_ID}`,
  );
const momentTimeout = 120_000;

async function crashAndResume(ctx: Context, downMs = 1_500): Promise<void> {
  await ctx.server.crash();
  await sleep(downMs);
  await ctx.server.resume();
}

/** How the database shows that a worker has just passed each point of the submission protocol. */
const SUBMISSION_MOMENTS: Record<string, (ctx: Context) => Promise<boolean>> = {
  'submission.intent-saved': async (ctx) =>
    (await count(ctx, 'SELECT count(*) FROM remote_jobs WHERE remote_job_id IS NULL')) > 0,
  'submission.reference-saved': async (ctx) =>
    (await count(ctx, 'SELECT count(*) FROM remote_jobs WHERE remote_job_id IS NOT NULL')) > 0,
  'submission.ledger-written': async (ctx) => (await count(ctx, 'SELECT count(*) FROM ledger_entries')) > 0,
};

const SCENARIOS: Scenario[] = [
  {
    fault: 'server crash (pg_ctl -m immediate) + restart',
    moment: 'allocations queued behind the advisory lock',
    quick: true,
    runs: 4,
    failpoints: 'allocation.decided=delay:1500',
    async inject(ctx) {
      await until(
        'a waiter behind the lock holder',
        async () => ((await lockWaiters(ctx)) >= 1 ? true : undefined),
        momentTimeout,
      );
      await crashAndResume(ctx);
    },
  },
  {
    fault: 'server crash + restart',
    moment: 'vendor accepted, reference not yet saved (intent saved)',
    runs: 3,
    failpoints: 'submission.accepted=delay:2500',
    async inject(ctx) {
      await until(
        'an intent without a reference',
        async () =>
          (await count(ctx, 'SELECT count(*) FROM remote_jobs WHERE remote_job_id IS NULL')) > 0 ? true : undefined,
        momentTimeout,
      );
      await sleep(800); // past the submit, inside the accepted delay
      await crashAndResume(ctx);
    },
  },
  {
    fault: 'server crash + restart',
    moment: 'artifact saved, ledger not yet written',
    runs: 3,
    failpoints: 'submission.artifact-downloaded=delay:2500',
    async inject(ctx) {
      await until(
        'a downloaded artifact without its charge',
        async () =>
          (await mediaFiles(ctx.target)) > (await count(ctx, 'SELECT count(*) FROM ledger_entries')) ? true : undefined,
        momentTimeout,
      );
      await crashAndResume(ctx);
    },
  },
  {
    fault: 'advisory-lock holder terminated (pg_terminate_backend)',
    moment: 'mid-allocation transaction, others waiting',
    quick: true,
    runs: 4,
    failpoints: 'allocation.decided=delay:2000',
    async inject(ctx) {
      if (PROOF) {
        // Without the lock (or with it released early) nobody waits: fault whoever holds it half-way through the delay.
        await sleep(1_500);
        await ctx.server.terminateLockHolder(PIPELINE_LOCK_ID);
        return;
      }
      await until(
        'a waiter behind the lock holder',
        async () => ((await lockWaiters(ctx)) >= 1 ? true : undefined),
        momentTimeout,
      );
      const holder = await ctx.server.terminateLockHolder(PIPELINE_LOCK_ID);
      assert.match(holder ?? '', /^episodes-worker-/, 'the lock holder is a worker session, named by its process');
    },
  },
  ...Object.entries(SUBMISSION_MOMENTS).map(([point, reached]): Scenario => ({
    fault: 'every session of the worker terminated',
    moment: point,
    runs: 1,
    // One worker, so that the one in the delay after the point is the one whose sessions end.
    workers: 1,
    failpoints: `${point}=delay:2500`,
    async inject(ctx) {
      await until(`${point} reached`, async () => ((await reached(ctx)) ? true : undefined), momentTimeout);
      const w = ctx.workers[0]!;
      const terminated = await ctx.server.terminateApplication(`episodes-worker-${os.hostname()}-${w.child.pid}`);
      assert.ok(terminated >= 1, `${w.name} had sessions to end`);
    },
  })),
  {
    fault: 'server down when the workers start, up 10 s later',
    moment: 'worker start-up',
    quick: true,
    runs: 2,
    async prepare(ctx) {
      await ctx.server.crash();
    },
    async checkWorkers(ctx) {
      // The workers wait (one clear line per attempt) and do not poll Temporal while the store is down.
      await until(
        'every worker says it waits for the store',
        () =>
          Promise.resolve(
            ctx.workers.every((w) => w.output().includes('worker: waiting for the store:')) ? true : undefined,
          ),
        60_000,
      );
      for (const w of ctx.workers) {
        assert.ok(w.alive(), `${w.name} keeps waiting`);
        assert.ok(!w.output().includes('worker: task queue'), `${w.name} does not poll before the store is up`);
        assert.match(
          w.output(),
          /waiting for the store: postgres store at 127\.0\.0\.1:\d+\/\w+ not ready \(StorageFailure: /,
        );
      }
    },
    async inject(ctx) {
      await sleep(10_000);
      await ctx.server.resume();
    },
  },
  {
    fault: 'max_connections 12 for 6 workers (pools of 10)',
    moment: 'whole run',
    quick: true,
    runs: 6,
    workers: 6,
    async prepare(ctx) {
      await ctx.server.configure({ max_connections: 12 });
    },
    async cleanup(ctx) {
      await ctx.server.configure({ max_connections: 200 });
    },
  },
  {
    fault: 'statement_timeout 300 ms, lock held 1 s',
    moment: 'waiting for the advisory lock',
    runs: 4,
    failpoints: 'allocation.decided=delay:1000',
    async prepare(ctx) {
      await ctx.server.sql(`ALTER DATABASE "${new URL(ctx.db).pathname.slice(1)}" SET statement_timeout = '300ms'`);
    },
  },
];

async function mediaFiles(target: StoreTarget): Promise<number> {
  if (target.kind !== 'postgres') return 0;
  const files = await fs.readdir(target.mediaDir, { recursive: true, withFileTypes: true }).catch(() => []);
  return files.filter((f) => f.isFile()).length;
}

const rowsToRun = SCENARIOS.filter((s) => FULL || s.quick);

describe('database faults: 3 worker processes on one PostgreSQL, the server faulted at each moment', function () {
  this.timeout(30 * 60_000);
  let env: TestWorkflowEnvironment;
  let server: PostgresFaultServer;
  const table: Record<string, string | number>[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  before(async function () {
    this.timeout(10 * 60_000);
    env = await createTestEnv();
    server = await PostgresFaultServer.start('db-faults');
  });
  after(async function () {
    this.timeout(5 * 60_000);
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await server?.stop();
    await env?.teardown();
    await reportTable('database faults', table);
  });

  rowsToRun.forEach((scenario, index) => {
    it(`${scenario.fault} at "${scenario.moment}": every run completes, nothing lost or twice`, async () => {
      const started = Date.now();
      const row: Record<string, string | number> = {
        fault: scenario.fault,
        moment: scenario.moment,
        'npm test': scenario.quick ? 'yes' : '',
        runs: scenario.runs,
        outcome: 'failed',
      };
      table.push(row);
      const name = `faults_${index}`;
      await server.sql(`CREATE DATABASE ${name}`);
      const db = databaseUrl(server.url, name);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'db-faults-'));
      cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
      const target: StoreTarget = { kind: 'postgres', url: db, mediaDir: path.join(dir, 'media') };
      const vendor: VendorSimulator = await startTestVendor();
      cleanups.push(() => vendor.close());
      const workers: WorkerProcess[] = [];
      const ctx: Context = {
        server,
        db,
        target,
        workers,
        sql: (statement) => server.sqlOn(name, statement),
      };
      const taskQueue = uniqueTaskQueue('dbfaults');
      try {
        // The schema first (workers would apply it too), so that a proof run can take the second layer away.
        const setup = new PostgresEpisodeStore({ url: db, mediaDir: target.mediaDir });
        await setup.ready().finally(() => setup.close());
        if (PROOF) {
          await ctx.sql(
            'ALTER TABLE episodes DROP CONSTRAINT episodes_week_sequence_key, DROP CONSTRAINT episodes_pkey CASCADE',
          );
        }
        await scenario.prepare?.(ctx);
        for (let i = 0; i < (scenario.workers ?? 3); i++) {
          const w = startWorkerProcess(`w${i}`, {
            address: env.address,
            taskQueue,
            dataDir: dir,
            store: target,
            vendorUrl: vendor.url,
            failpoints: scenario.failpoints,
            unsafe: WITHOUT_LOCK ? 'no-lock' : SPLIT_TX ? 'split-allocation' : undefined,
          });
          workers.push(w);
          cleanups.push(() => w.stop());
        }
        await scenario.checkWorkers?.(ctx);
        // Distinct weeks per row: episode and workflow IDs never collide on the shared dev server.
        const week = `2028-W${String(10 + index).padStart(2, '0')}`;
        const keys = Array.from({ length: scenario.runs }, (_, i) => `db-fault-${index}-${i}`);
        await Promise.all(
          keys.map((key) =>
            env.client.workflow.start(weeklyEpisodeWorkflow, { workflowId: key, taskQueue, args: [{ week }] }),
          ),
        );
        await scenario.inject?.(ctx);
        const faulted = Date.now();
        // Allocation first: a duplicate or a lost run shows here, before any production waits for approval.
        const results = await Promise.all(
          keys.map((key) => env.client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(key).result()),
        );
        assert.deepEqual(
          results.map((r) => r.sequence).sort(),
          [...keys.keys()],
          `the runs got sequences 0..${keys.length - 1} of ${week} (got ${results.map((r) => r.episodeId).join(', ')})`,
        );
        const outcomes = await approveProductions(env.client, target, scenario.runs, 10 * 60_000);
        row['recovery s'] = Math.round((Date.now() - faulted) / 1000);
        assert.deepEqual(
          outcomes.filter((o) => o.result.outcome !== 'completed').map((o) => o.episodeId),
          [],
          'every production completed',
        );
        // Quiet: the workers leave (idle pool sessions with them), then nothing may remain.
        await Promise.all(workers.map((w) => w.stop()));
        const counts = await assertInvariants(target, vendor, { keys, allCompleted: true });
        assert.equal(counts.charges, scenario.runs * 3, 'video, cover and assembly charged once per run');
        Object.assign(row, { outcome: 'completed', ...invariantColumns(counts), leftovers: 0 });
      } finally {
        row.seconds = Math.round((Date.now() - started) / 1000);
        await Promise.all(workers.map((w) => w.stop()));
        await scenario.cleanup?.(ctx).catch(() => undefined);
      }
    });
  });
});
