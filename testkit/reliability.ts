/**
 * Shared by the reliability tests: worker processes as deployed (`node dist/src/worker.js`), an operator that
 * approves every production once it waits for approval, and `assertInvariants`, the one definition of "nothing lost,
 * nothing paid twice" that every fault scenario must end in.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { isGrpcServiceError, ServiceError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { EpisodeState } from '../src/domain/episode-state';
import { productionWorkflowId } from '../src/domain/names';
import type { EpisodeStore } from '../src/store/episode-store';
import { FileEpisodeStore } from '../src/store/file-store';
import { DEFAULT_LOCK_OPTIONS } from '../src/store/pipeline-lock';
import { PostgresEpisodeStore } from '../src/store/postgres-store';
import type { VendorSimulator } from '../src/vendor-sim/simulator';
import type { VerifyReport } from '../src/verify/verify-store';
import type { EpisodeProductionResult } from '../src/workflows/episode-production';
import { approveSignal, statusQuery } from '../src/workflows/messages';
import { WORKFLOW_TEST_API_KEY } from './deps';
import { recordDocTablePart } from './doc-tables';
import { freshDatabase, withDatabase } from './postgres';
import { DIST_ROOT, runCli } from './processes';
import type { UnsafeVariant } from './unsafe-stores';

import { sleep, until } from './wait';

export { sleep, until };

// ---- the store under test ----

/** Where a scenario's episodes live: a file store data dir, or a PostgreSQL database with a media root. */
export type StoreTarget = { kind: 'file'; dataDir: string } | { kind: 'postgres'; url: string; mediaDir: string };
export type StoreKind = StoreTarget['kind'];
export const STORE_KINDS: readonly StoreKind[] = ['file', 'postgres'];

/** A bare string is a file store data dir (what the file-only scenarios pass). */
function asTarget(t: string | StoreTarget): StoreTarget {
  return typeof t === 'string' ? { kind: 'file', dataDir: t } : t;
}

/** A fresh, empty store of that kind; `dir` holds its files (the data dir, or the PostgreSQL store's media). */
export async function newStoreTarget(kind: StoreKind, dir: string, prefix: string): Promise<StoreTarget> {
  if (kind === 'file') return { kind, dataDir: dir };
  return { kind, url: await freshDatabase(prefix), mediaDir: path.join(dir, 'media') };
}

export function openTarget(
  t: string | StoreTarget,
  options: { lockTimeoutMs?: number; staleMs?: number } = {},
): EpisodeStore {
  const target = asTarget(t);
  if (target.kind === 'file') {
    return new FileEpisodeStore(target.dataDir, {
      timeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_OPTIONS.timeoutMs,
      staleMs: options.staleMs ?? DEFAULT_LOCK_OPTIONS.staleMs,
    });
  }
  return new PostgresEpisodeStore({ url: target.url, mediaDir: target.mediaDir, poolSize: 4, ...options });
}

/** The environment that points a worker or the CLI at the target. */
export function targetEnv(t: string | StoreTarget): NodeJS.ProcessEnv {
  const target = asTarget(t);
  return target.kind === 'file'
    ? { EPISODES_DATA_DIR: target.dataDir, EPISODES_STORE_URL: '' }
    : { EPISODES_STORE_URL: target.url, EPISODES_MEDIA_DIR: target.mediaDir };
}

export function describeTarget(t: string | StoreTarget): string {
  return asTarget(t).kind === 'file' ? 'file store' : 'postgres store';
}

// ---- worker processes ----

export interface WorkerProcessOptions {
  address: string;
  taskQueue: string;
  dataDir: string;
  /** The store, when it is not the file store in `dataDir` (EPISODES_STORE_URL, EPISODES_MEDIA_DIR). */
  store?: StoreTarget;
  vendorUrl: string;
  /** EPISODES_FAILPOINTS, e.g. `submission.accepted=kill`. */
  failpoints?: string;
  /** EPISODES_LOCK_STALE_MS: how soon a SIGKILLed holder's lock is taken over (default 10 s). */
  lockStaleMs?: number;
  /** Test-only: the worker runs on a store without this protection (unsafe-worker.ts), to show a test fails then. */
  unsafe?: UnsafeVariant;
  /** Any other setting, e.g. EPISODES_BUILD_ID. */
  extraEnv?: NodeJS.ProcessEnv;
}

export interface WorkerProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Settles when the process has exited, with its exit code or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
  alive(): boolean;
  waitUntilPolling(timeoutMs?: number): Promise<void>;
  /** SIGTERM (the worker drains), SIGKILL after 20 s. */
  stop(): Promise<void>;
}

/** A worker process with only the environment it is given: no store, vendor or failpoint setting leaks in. */
export function startWorkerProcess(name: string, o: WorkerProcessOptions): WorkerProcess {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(EPISODES_|TEMPORAL_|VENDOR_)/.test(k)) env[k] = v;
  }
  Object.assign(env, {
    TEMPORAL_ADDRESS: o.address,
    TEMPORAL_NAMESPACE: 'default',
    EPISODES_TASK_QUEUE: o.taskQueue,
    EPISODES_DATA_DIR: o.dataDir,
    EPISODES_VENDOR_BASE_URL: o.vendorUrl,
    EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
    // A test's (or the campaign's) worker: failpoints work in it (src/failpoints/).
    EPISODES_TEST_PROCESS: '1',
    ...(o.failpoints ? { EPISODES_FAILPOINTS: o.failpoints } : {}),
    ...(o.lockStaleMs ? { EPISODES_LOCK_STALE_MS: String(o.lockStaleMs) } : {}),
    ...(o.store?.kind === 'postgres' ? targetEnv(o.store) : {}),
    ...o.extraEnv,
  });
  const entry = o.unsafe ? ['testkit/unsafe-worker.js', o.unsafe] : ['src/worker.js'];
  const child = spawn(process.execPath, [path.join(DIST_ROOT, entry[0]!), ...entry.slice(1)], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    child,
    exited,
    output: () => out,
    alive,
    async waitUntilPolling(timeoutMs = 120_000) {
      const ready = until(
        'worker start',
        () => Promise.resolve(out.includes('worker: task queue') || undefined),
        timeoutMs,
      );
      const died = exited.then((e) => {
        throw new Error(`worker ${name} exited (${e.code ?? e.signal}) before polling:\n${out}`);
      });
      await Promise.race([ready, died]);
    },
    async stop() {
      if (!alive()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---- the operator ----

export interface ProductionOutcome {
  episodeId: string;
  result: EpisodeProductionResult;
}

/**
 * Acts as the operator for every episode that appears in `dataDir`: approves each production once it waits for
 * approval, and returns when `expected` productions have finished. The store says when to ask; the workflow's
 * `statusQuery` says when a signal counts (it ignores approvals before its approval phase).
 */
export async function approveProductions(
  client: Client,
  target: string | StoreTarget,
  expected: number,
  timeoutMs: number,
): Promise<ProductionOutcome[]> {
  const store = openTarget(target);
  try {
    return await approveFrom(store, client, expected, timeoutMs);
  } finally {
    await store.close();
  }
}

const GRPC_UNAVAILABLE = 14;

/**
 * A production's result, waited for across a server outage: one `result()` call gives up once the client's retries
 * run out, and a dev server that restarts on a loaded machine can be gone longer than that.
 */
async function resultAcrossOutages(handle: WorkflowHandle, deadline: number): Promise<EpisodeProductionResult> {
  for (;;) {
    try {
      return (await handle.result()) as EpisodeProductionResult;
    } catch (e) {
      const code: number | undefined =
        e instanceof ServiceError && isGrpcServiceError(e.cause) ? e.cause.code : undefined;
      if (code !== GRPC_UNAVAILABLE || Date.now() > deadline) throw e;
      await sleep(1_000);
    }
  }
}

async function approveFrom(
  store: EpisodeStore,
  client: Client,
  expected: number,
  timeoutMs: number,
): Promise<ProductionOutcome[]> {
  const deadline = Date.now() + timeoutMs;
  const approved = new Map<string, Promise<ProductionOutcome>>();
  while (approved.size < expected) {
    if (Date.now() > deadline) {
      throw new Error(`approved ${approved.size}/${expected} productions within ${timeoutMs} ms`);
    }
    let episodes: EpisodeState[] = [];
    try {
      episodes = await store.listEpisodes();
    } catch {
      // A file mid-rename on a slow disk, a database restarting: next round.
    }
    const waiting = episodes.filter(
      (e) => !approved.has(e.episode_id) && e.status === 'awaiting_approval' && e.approval?.status === 'pending',
    );
    await Promise.all(
      waiting.map(async (e) => {
        const handle = client.workflow.getHandle(productionWorkflowId(e.episode_id));
        try {
          if ((await handle.query(statusQuery)).phase !== 'awaiting_approval') return;
          await handle.signal(approveSignal, { by: 'reliability-test' });
        } catch {
          return; // no worker answers right now (one was just killed): ask again next round
        }
        const outcome = resultAcrossOutages(handle, deadline).then((r) => ({
          episodeId: e.episode_id,
          result: r,
        }));
        outcome.catch(() => undefined); // reported by the Promise.all below, not as an unhandled rejection
        approved.set(e.episode_id, outcome);
      }),
    );
    await sleep(250);
  }
  const all = Promise.all(approved.values());
  const timer = sleep(Math.max(1, deadline - Date.now())).then(() => {
    throw new Error(`productions did not finish within ${timeoutMs} ms`);
  });
  return Promise.race([all, timer]);
}

// ---- the invariants ----

export interface InvariantCounts {
  episodes: number;
  weeks: number;
  completed: number;
  historyEntries: number;
  /** Vendor charges (billing), ledger entries across all episodes. */
  charges: number;
  ledgerEntries: number;
  /** Always 0 when this returns: each is asserted. Counted first so that a failure message says how many. */
  duplicateEpisodes: number;
  duplicateCharges: number;
  chargesLost: number;
  verifyProblems: number;
}

/** The columns every fault report prints from the invariant counts. */
export function invariantColumns(counts: InvariantCounts): Record<string, number> {
  return {
    completed: counts.completed,
    charges: counts.charges,
    'ledger entries': counts.ledgerEntries,
    duplicates: counts.duplicateEpisodes + counts.duplicateCharges,
    'charges lost': counts.chargesLost,
    'verify problems': counts.verifyProblems,
  };
}

export interface InvariantOptions {
  /** Allocation keys of every run: each must own exactly one episode, and no other episode may exist. */
  keys?: readonly string[];
  /** Every episode completed, with its history entry. */
  allCompleted?: boolean;
}

/**
 * The invariants after any fault, on a quiet store:
 *  - exactly one episode per allocation key, unique ids, per-week sequences contiguous from 0, no lost run;
 *  - at most one vendor charge per (episode, step, round);
 *  - the vendor's billing equals the ledger (no charge lost, none invented);
 *  - `episodes verify` (the CLI, read-only) finds nothing;
 *  - no leftover pipeline lock (PostgreSQL: no advisory lock, no session idle inside a transaction).
 */
export async function assertInvariants(
  t: string | StoreTarget,
  vendor: VendorSimulator,
  options: InvariantOptions = {},
): Promise<InvariantCounts> {
  const target = asTarget(t);
  const store = openTarget(target);
  let episodes: EpisodeState[];
  let history: Awaited<ReturnType<EpisodeStore['listHistory']>>;
  try {
    episodes = await store.listEpisodes();
    history = await store.listHistory();
  } finally {
    await store.close();
  }

  // Identity: one episode per key and per id; sequences 0..n-1 in every week.
  const byKey = groupBy(episodes, (e) => e.allocation_key ?? '(none)');
  const byId = groupBy(episodes, (e) => e.episode_id);
  const duplicateEpisodes =
    [...byKey.values()].reduce((n, g) => n + g.length - 1, 0) +
    [...byId.values()].reduce((n, g) => n + g.length - 1, 0);
  assert.equal(duplicateEpisodes, 0, `duplicate episodes: ${describeGroups(byKey)} ${describeGroups(byId)}`);
  const weeks = groupBy(episodes, (e) => e.week_id);
  for (const [week, list] of weeks) {
    const seqs = list.map((e) => e.sequence).sort((a, b) => a - b);
    assert.deepEqual(seqs, [...seqs.keys()], `week ${week}: sequences contiguous from 0`);
  }
  if (options.keys) {
    assert.deepEqual(
      [...byKey.keys()].sort(),
      [...options.keys].sort(),
      'every run owns exactly one episode, and no episode belongs to anything else (no lost run)',
    );
  }

  // Money: at most one charge per (episode, step, round), and billing = ledger.
  const charges = vendor.billing();
  const perStep = groupBy(charges, (c) => c.client_ref ?? `(no reference: ${c.job_id})`);
  for (const c of charges) {
    assert.ok(
      c.client_ref?.startsWith(`${c.episode_id}:${c.kind}:r`),
      `charge ${c.job_id} carries its step's idempotency key (got ${String(c.client_ref)})`,
    );
  }
  const duplicateCharges = [...perStep.values()].reduce((n, g) => n + g.length - 1, 0);
  assert.equal(duplicateCharges, 0, `at most one charge per (episode, step, round): ${describeGroups(perStep)}`);
  const billed = charges.map((c) => `${c.episode_id} ${c.job_id} ${c.amount_cents} ${c.currency}`).sort();
  const ledger = episodes
    .flatMap((e) => e.ledger.map((l) => `${e.episode_id} ${l.remote_job_id} ${l.amount_cents} ${l.currency}`))
    .sort();
  const chargesLost = billed.filter((b) => !ledger.includes(b)).length;
  assert.equal(
    chargesLost,
    0,
    `charges the ledger does not record: ${billed.filter((b) => !ledger.includes(b)).join(', ')}`,
  );
  assert.deepEqual(ledger, billed, 'ledger = vendor billing');

  let completed = 0;
  if (options.allCompleted) {
    for (const e of episodes) assert.equal(e.status, 'completed', `${e.episode_id} completed`);
    completed = episodes.length;
    assert.deepEqual(
      history.map((h) => h.episode_id),
      episodes.map((e) => e.episode_id),
      'one history entry per completed episode',
    );
  } else {
    completed = episodes.filter((e) => e.status === 'completed').length;
  }

  // The store checker, as an operator runs it.
  const verify = await runCli(
    target.kind === 'file' ? ['--data-dir', target.dataDir, 'verify', '--json'] : ['verify', '--json'],
    targetEnv(target),
  );
  let report: VerifyReport;
  try {
    report = JSON.parse(verify.stdout) as VerifyReport;
  } catch {
    throw new Error(`episodes verify printed no report (exit ${verify.code}): ${verify.stderr}`);
  }
  assert.deepEqual(report.problems, [], 'episodes verify finds no problem');
  assert.equal(verify.code, 0, verify.stderr);
  assert.equal(report.episodes_checked, episodes.length, 'verify saw every episode');

  if (target.kind === 'file') {
    const lock = path.join(target.dataDir, 'pipeline.lock');
    await assert.rejects(fs.stat(lock), { code: 'ENOENT' }, `leftover lock ${lock}`);
  } else {
    assert.deepEqual(await postgresLeftovers(target.url), { advisoryLocks: 0, idleInTransaction: 0 }, 'leftovers');
  }

  return {
    episodes: episodes.length,
    weeks: weeks.size,
    completed,
    historyEntries: history.length,
    charges: charges.length,
    ledgerEntries: ledger.length,
    duplicateEpisodes,
    duplicateCharges,
    chargesLost,
    verifyProblems: report.problems.length,
  };
}

/** Advisory locks held and sessions idle inside a transaction on the target's database (this check's own excluded). */
export async function postgresLeftovers(url: string): Promise<{ advisoryLocks: number; idleInTransaction: number }> {
  return withDatabase(url, async (c) => {
    const { rows } = await c.query<{ locks: number; idle: number }>(
      `SELECT (SELECT count(*)::int FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                WHERE l.locktype = 'advisory' AND d.datname = current_database()) AS locks,
              (SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database()
                AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()) AS idle`,
    );
    return { advisoryLocks: rows[0]!.locks, idleInTransaction: rows[0]!.idle };
  });
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    groups.set(k, [...(groups.get(k) ?? []), item]);
  }
  return groups;
}

function describeGroups<T>(groups: Map<string, T[]>): string {
  return [...groups]
    .filter(([, g]) => g.length > 1)
    .map(([k, g]) => `${k} ×${g.length}`)
    .join(', ');
}

/**
 * Prints a scenario's table at the end of its file and keeps its rows for the fault tables of docs/reliability.md
 * (`npm run test:faults -- --write-docs`; testkit/fault-tables.ts).
 */
export async function reportTable(title: string, rows: readonly object[]): Promise<void> {
  console.log(`\n${title}\n${formatTable(rows)}\n`);
  const name = title
    .replace(/[^a-z0-9]+/gi, '-')
    .replace(/^-|-$/g, '')
    .toLowerCase();
  await recordDocTablePart(name, { full: process.env.EPISODES_FAULTS === 'full', rows });
}

/** Fixed-width text table for the `after` hooks. */
export function formatTable(rows: readonly object[]): string {
  if (rows.length === 0) return '(no rows)';
  const cells = rows.map((r) => r as Record<string, unknown>);
  const cols = Object.keys(cells[0]!);
  const text = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
  const width = cols.map((c) => Math.max(c.length, ...cells.map((r) => text(r[c]).length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(width[i]!)).join('  ');
  return [
    line(cols),
    line(width.map((w) => '-'.repeat(w))),
    ...cells.map((r) => line(cols.map((c) => text(r[c])))),
  ].join('\n');
}
