/**
 * The crash matrix: for every failpoint a weekly run reaches, a real weekly episode on the dev server whose worker
 * PROCESS is SIGKILLed exactly there; a fresh worker then finishes the run, and the invariants must hold (one episode
 * for the key, billing = ledger, one charge per step and round, `episodes verify` clean, no leftover lock), on both
 * stores: the file store, and PostgreSQL (whose killed worker's connections die with it, mid-transaction).
 * `npm test` runs one row per store for each protocol point (PROTOCOL); EPISODES_FAULTS=full (`npm run
 * test:faults`) runs every point on both stores.
 * Migration failpoints are not on this path; test/faults/migration-crash.test.ts kills `episodes migrate-legacy` at each of them.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor, testDeps } from '../../testkit/deps';
import { createTestEnv, createTestWorker, REPO_ROOT, uniqueTaskQueue, workflowBundle } from '../../testkit/temporal';
import {
  approveProductions,
  assertInvariants,
  reportTable,
  sleep,
  newStoreTarget,
  openTarget,
  startWorkerProcess,
  type InvariantCounts,
  type StoreKind,
  type StoreTarget,
  type WorkerProcess,
} from '../../testkit/reliability';
import { FAILPOINT_NAMES, type FailpointName } from '../../src/failpoints';

/** A failpoint, optionally `@n`: the n-th time the point is reached. */
type Point = FailpointName | `${FailpointName}@${number}`;
const stage = (prefix: string): FailpointName[] => FAILPOINT_NAMES.filter((n) => n.startsWith(prefix));

/** Every durable step of a weekly run, in the order a run meets them (FAILPOINT_NAMES lists them in that order). */
const POINTS: Point[] = [
  ...stage('allocation.'),
  // Inside an episode's own lock (file store), at its first write: the submission intent.
  'episode.lock-taken',
  ...stage('submission.'),
  // Production bookkeeping: the 2nd record is "awaiting approval" (stored, the workflow not told yet), the 3rd the
  // approval itself.
  'progress.recorded@2',
  'progress.recorded@3',
  // The third submission is the assembly, after approval: the paid path once an operator has acted.
  'submission.accepted@3',
  ...stage('completion.'),
  // Half-way through a durable file write (a torn temp file left behind): the 2nd write of a run is its week index,
  // the allocation's commit point; the 12th is a state write mid-production.
  'fs.write@2',
  'fs.write@12',
];
/** The points a weekly run on the PostgreSQL store reaches (no index files, no durable-fs writes). */
const POSTGRES_POINTS: Point[] = POINTS.filter(
  (p) =>
    !['allocation.key-written', 'allocation.index-written', 'episode.lock-taken'].includes(p) &&
    !p.startsWith('fs.write'),
);
/**
 * In `npm test`, one row per store for each point of the protocol: the allocation's decision and commit, the
 * submission's intent, the vendor's accept, the saved reference and the ledger, and the completion either side of
 * its history. The repeats (`@n`), the torn writes and the download run in `npm run test:faults`.
 */
const PROTOCOL: Point[] = [
  'allocation.decided',
  'allocation.state-written',
  'submission.intent-saved',
  'submission.accepted',
  'submission.reference-saved',
  'submission.ledger-written',
  'completion.state-written',
  'completion.before-history',
];
const FULL = process.env.EPISODES_FAULTS === 'full';
const ROWS: Record<StoreKind, string[]> = {
  file: FULL ? POINTS : PROTOCOL,
  postgres: FULL ? POSTGRES_POINTS : PROTOCOL,
};
/** Weeks per store, so that episode and workflow IDs never collide on the shared dev server. */
const FIRST_WEEK: Record<StoreKind, number> = { file: 10, postgres: 30 };
const MIGRATION_CRASH_TEST = 'test/faults/migration-crash.test.ts';
/** Review notices are sent beside a run only when a webhook is set; that test kills a worker just after sending. */
const REVIEW_NOTICE_CRASH_TEST = 'test/integration/workflows/review-notice.test.ts';
/** Points run a few at a time: most of a row is waiting for Temporal to time out the dead worker's tasks. */
const CONCURRENCY = 4;

interface Row {
  store: string;
  point: string;
  died: string;
  billedAtDeath: number | string;
  outcome: string;
  charges: number | string;
  ledger: number | string;
  verify: string;
  lock: string;
  seconds: number | string;
}

describe('crash matrix: a worker process SIGKILLed at each failpoint of a weekly run', function () {
  this.timeout(20 * 60_000);
  let env: TestWorkflowEnvironment;
  const rows = new Map<string, Row>();
  const dirs: string[] = [];
  const vendors: VendorSimulator[] = [];
  const doomedWorkers: WorkerProcess[] = [];
  const runs = new Map<StoreKind, Map<string, Promise<InvariantCounts>>>();

  before(async function () {
    this.timeout(5 * 60_000);
    env = await createTestEnv();
    await workflowBundle();
  });
  after(async () => {
    for (const r of runs.values()) await Promise.allSettled(r.values());
    await Promise.all(doomedWorkers.map((w) => w.stop()));
    await Promise.all(vendors.map((v) => v.close()));
    await env?.teardown();
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
    const migrationRows = migrationPoints().map((point) => ({
      store: 'file',
      point,
      died: 'n/a',
      billedAtDeath: '',
      outcome: `not on a weekly run: killed by ${MIGRATION_CRASH_TEST}`,
      charges: '',
      ledger: '',
      verify: '',
      lock: '',
      seconds: '',
    }));
    const table = (kind: StoreKind) => ROWS[kind].map((p) => rows.get(`${kind} ${p}`) ?? notRun(kind, p));
    await reportTable('crash matrix', [...table('file'), ...migrationRows, ...table('postgres')]);
  });

  it('covers every failpoint in src/: weekly-run points here, migration points in the migration crash test', () => {
    const inSource = failpointsInSource();
    const covered = new Set(POINTS.map((p) => p.split('@')[0]));
    const elsewhere = (p: string) => p.startsWith('migration.') || p.startsWith('review-notice.');
    assert.deepEqual(
      inSource.filter((p) => !elsewhere(p) && !covered.has(p)),
      [],
      'every failpoint of a weekly run has a row',
    );
    const noticeTest = readFileSync(path.join(REPO_ROOT, REVIEW_NOTICE_CRASH_TEST), 'utf8');
    const notices = inSource.filter((p) => p.startsWith('review-notice.') && !noticeTest.includes(`'${p}=kill`));
    assert.deepEqual(notices, [], `every review-notice failpoint is killed in ${REVIEW_NOTICE_CRASH_TEST}`);
    const migrationTest = readFileSync(path.join(REPO_ROOT, MIGRATION_CRASH_TEST), 'utf8');
    const steps = migrationPoints().filter((p) => !migrationTest.includes(p.slice('migration.'.length)));
    assert.deepEqual(steps, [], `every migration failpoint is killed in ${MIGRATION_CRASH_TEST}`);
    assert.ok(migrationPoints().length >= 5, 'the migration has failpoints at each step');
  });

  for (const kind of ['file', 'postgres'] as const) {
    describe(`${kind} store`, () => {
      before(() => {
        runs.set(
          kind,
          inPool(ROWS[kind], CONCURRENCY, (point, index) => runPoint(kind, point, index)),
        );
      });
      for (const point of ROWS[kind]) {
        it(`killed at ${point}: a fresh worker completes the run; invariants hold`, async () => {
          await runs.get(kind)?.get(point);
        });
      }
    });
  }

  async function runPoint(kind: StoreKind, point: string, index: number): Promise<InvariantCounts> {
    const started = Date.now();
    const row: Row = {
      store: kind,
      point,
      died: 'no',
      billedAtDeath: '',
      outcome: 'failed',
      charges: '',
      ledger: '',
      verify: '',
      lock: '',
      seconds: '',
    };
    rows.set(`${kind} ${point}`, row);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'crash-'));
    dirs.push(dir);
    const target: StoreTarget = await newStoreTarget(kind, dir, 'crash');
    const vendor = await startTestVendor();
    vendors.push(vendor);
    const taskQueue = uniqueTaskQueue('crash');
    // A week of its own per point: episode and workflow IDs never collide on the shared dev server.
    const week = `2027-W${String(FIRST_WEEK[kind] + index).padStart(2, '0')}`;
    const key = `crash-matrix-${kind}-${point}`;
    const [name, nth] = point.split('@');

    const doomed = startWorkerProcess(`doomed-${point}`, {
      address: env.address,
      taskQueue,
      dataDir: dir,
      store: target,
      vendorUrl: vendor.url,
      failpoints: `${name}=kill${nth ? `@${nth}` : ''}`,
    });
    doomedWorkers.push(doomed);
    await doomed.waitUntilPolling();
    await env.client.workflow.start(weeklyEpisodeWorkflow, { workflowId: key, taskQueue, args: [{ week }] });
    // The operator approves whenever the production waits for it, before and after the crash alike.
    const productions = approveProductions(env.client, target, 1, 10 * 60_000);
    productions.catch(() => undefined);

    const ended = await Promise.race([
      doomed.exited,
      productions.then(() => 'finished without reaching the point' as const),
      sleep(5 * 60_000).then(() => 'timed out' as const),
    ]);
    if (typeof ended === 'string' || ended.signal !== 'SIGKILL') {
      await doomed.stop();
      row.died = typeof ended === 'string' ? `no (${ended})` : `no (exit ${ended.code ?? ended.signal})`;
      assert.fail(`${point}: the worker did not die there: ${row.died}\n${doomed.output()}`);
    }
    row.died = 'yes (SIGKILL)';
    row.billedAtDeath = vendor.billing().length;

    // A fresh worker, with a short lock staleness so that a lock held by the dead process is taken over quickly (on
    // PostgreSQL the dead process's sessions end with it, and so do their transactions and the advisory lock).
    const store = openTarget(target, { lockTimeoutMs: 30_000, staleMs: 2_000 });
    const worker = await createTestWorker({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createActivities(testDeps(store, vendor)),
    });
    const [production] = await worker.runUntil(productions).finally(() => store.close());
    const weekly = await env.client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(key).result();
    assert.ok(production, 'the production finished');
    row.outcome = production.result.outcome;
    assert.equal(weekly.episodeId, `${week}-0`, 'the run got the first episode of its week');
    assert.equal(production.episodeId, weekly.episodeId);
    assert.equal(production.result.outcome, 'completed');

    try {
      const counts = await assertInvariants(target, vendor, { keys: [key], allCompleted: true });
      row.charges = counts.charges;
      row.ledger = counts.ledgerEntries;
      row.verify = counts.verifyProblems === 0 ? 'clean' : `${counts.verifyProblems} problems`;
      row.lock = 'released';
      assert.deepEqual(
        vendor
          .billing()
          .map((c) => c.kind)
          .sort(),
        ['assembly', 'cover', 'video'],
        'each paid step charged exactly once',
      );
      return counts;
    } catch (e) {
      row.verify = 'FAILED';
      throw e;
    } finally {
      row.seconds = Math.round((Date.now() - started) / 1000);
    }
  }
});

/** Runs `fn` over `items` with at most `limit` at once; one promise per item, keyed by the item. */
function inPool<R>(items: string[], limit: number, fn: (item: string, index: number) => Promise<R>) {
  const results = new Map<string, Promise<R>>();
  let active = 0;
  const waiting: (() => void)[] = [];
  items.forEach((item, index) => {
    const run = (async () => {
      if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
      active += 1;
      try {
        return await fn(item, index);
      } finally {
        active -= 1;
        waiting.shift()?.();
      }
    })();
    run.catch(() => undefined); // reported by the test that awaits it
    results.set(item, run);
  });
  return results;
}

function failpointsInSource(): string[] {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.ts')) {
        for (const m of readFileSync(file, 'utf8').matchAll(/failpoint\('([a-z0-9.-]+)'\)/g)) names.add(m[1]!);
      }
    }
  };
  walk(path.join(REPO_ROOT, 'src'));
  return [...names].sort();
}

function migrationPoints(): string[] {
  return failpointsInSource().filter((p) => p.startsWith('migration.'));
}

function notRun(store: StoreKind, point: string): Row {
  return {
    store,
    point,
    died: '-',
    billedAtDeath: '',
    outcome: 'not run',
    charges: '',
    ledger: '',
    verify: '',
    lock: '',
    seconds: '',
  };
}
