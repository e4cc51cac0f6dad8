/**
 * The shared store: PostgreSQL, for workers on several machines (the file store's lock only spans one machine).
 *
 * The pipeline lock is `pg_advisory_xact_lock(PIPELINE_LOCK_ID)`, taken first in the transaction that reads the facts,
 * applies `decideAllocation` and inserts the episode; COMMIT releases it. The schema enforces the same invariants a
 * second time (unique episode_id, unique (week_id, sequence), unique non-null allocation_key), so a writer that skipped
 * the lock gets a unique violation instead of a duplicate (reported as a retryable LockCompromised: nothing written).
 *
 *   episodes        one row per episode: identity columns, status, JSONB for allocated_by/approval/media/...
 *   remote_jobs     the state's paid-step records (`steps`), one row per '<step>-r<round>'
 *   ledger_entries  the state's charges, in order
 *   history         completed history, one immutable JSONB entry per episode
 *
 * Media never enter the database: they stay on the file system under `<media root>/<episode_id>/` (root:
 * EPISODES_MEDIA_DIR, default ./data/media; on several hosts, a shared mount), and the row records that path. Schema
 * migrations (postgres-migrations/runner.ts) are applied on first use, under their own lock. Rows are mapped in
 * postgres-rows.ts, errors in postgres-errors.ts.
 */
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Pool, type PoolClient, type QueryResult, type QueryResultRow } from 'pg';
import { z } from 'zod';
import {
  decideAllocation,
  decideReassertion,
  type AllocationDecision,
  type AllocationFacts,
} from '../domain/allocation';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import {
  episodeStateSchema,
  historyEntrySchema,
  initialState,
  type EpisodeState,
  type HistoryEntry,
} from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import type { WeekId } from '../domain/week-id';
import { failpoint } from '../failpoints';
import type { AllocationRequest, AllocationResult, EpisodeStore, AllocationClaim } from './episode-store';
import { checkPrivateDirPath } from './data-dir-checks';
import { DEFAULT_LOCK_OPTIONS } from './pipeline-lock';
import { isUniqueViolation, toStoreError } from './postgres-errors';
import { applyMigrations } from './postgres-migrations/runner';
import { PostgresPublishedPrices } from './postgres-published-prices';
import { PostgresReviewSessions, type SessionQuery } from './postgres-review-sessions';
import { EPISODE_COLUMNS, historyValues, json, jsonOrNull, parseRow, stateFromRow, toRef } from './postgres-rows';
import { defaultMediaDir, describePostgresUrl } from './postgres-url';

/** Key of the one pipeline-wide advisory lock ("EPIS" in ASCII). Every process of every version must agree on it. */
export const PIPELINE_LOCK_ID = 0x45504953;

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (credentials never appear in `description` or errors). */
  url: string;
  /** Root of the episodes' file directories, `<root>/<id>/` (default: EPISODES_MEDIA_DIR or ./data/media). */
  mediaDir?: string;
  /** Give up waiting for the pipeline lock after this long, retryably (default: EPISODES_LOCK_TIMEOUT_MS or 30 s). */
  lockTimeoutMs?: number;
  /**
   * The server ends a session idle inside a transaction for this long, releasing the lock of a frozen holder
   * (default: EPISODES_LOCK_STALE_MS or 10 s, as the file lock's staleness).
   */
  staleMs?: number;
  poolSize?: number;
  /**
   * The sessions' application_name (pg_stat_activity), one per process so that an operator or a test can tell whose
   * connection holds the lock: `episodes-worker-<host>-<pid>`, `episodes-cli-<command>-<pid>`.
   */
  applicationName?: string;
}

type Db = Pool | PoolClient;

export class PostgresEpisodeStore implements EpisodeStore {
  readonly description: string;
  readonly mediaRoot: string;
  private readonly pool: Pool;
  private readonly lockTimeoutMs: number;
  private migrated?: Promise<void>;
  private closed = false;

  constructor(options: PostgresStoreOptions) {
    this.description = `postgres store at ${describePostgresUrl(options.url)}`;
    this.mediaRoot = path.resolve(options.mediaDir ?? defaultMediaDir());
    this.lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_OPTIONS.timeoutMs;
    this.pool = new Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 10_000,
      idle_in_transaction_session_timeout: Math.max(2_000, options.staleMs ?? DEFAULT_LOCK_OPTIONS.staleMs),
      application_name: (options.applicationName ?? `episodes-${process.pid}`).slice(0, 63),
      keepAlive: true,
    });
    // An idle client losing its connection is reported here; the next query on a fresh client reports it properly.
    this.pool.on('error', () => undefined);
  }

  /** The episode's own directory: its recorded media paths (`media/final.mp4`) are relative to it. */
  mediaDir(id: EpisodeId): string {
    return path.join(this.mediaRoot, id);
  }

  /** Applies pending schema migrations (once per process; a failure is retried on the next call). */
  ready(): Promise<void> {
    // The media dir first: the episodes' files are trusted as this store's own (data-dir-checks.ts).
    this.migrated ??= Promise.resolve()
      .then(() => checkPrivateDirPath(this.mediaRoot, 'media dir (EPISODES_MEDIA_DIR)', ErrorType.InvalidState))
      .then(() => this.migrate())
      .catch((e: unknown) => {
        this.migrated = undefined;
        throw e;
      });
    return this.migrated;
  }

  /** The review desk's sessions in this database (postgres-review-sessions.ts), on this store's pool. */
  reviewSessions(): PostgresReviewSessions {
    const onPool = this.onPool();
    return new PostgresReviewSessions(`review sessions in the ${this.description}`, onPool, async (body) => {
      await this.ready();
      return this.transaction('review sessions', (c) =>
        body((what, text, values) => this.query(c, what, text, values)),
      );
    });
  }

  /** The vendor's price list as workers publish it (postgres-published-prices.ts), on this store's pool. */
  publishedPrices(): PostgresPublishedPrices {
    return new PostgresPublishedPrices(`published vendor prices in the ${this.description}`, this.onPool());
  }

  /** One statement on the pool, once the schema is migrated. */
  private onPool(): SessionQuery {
    return async (what, text, values) => {
      await this.ready();
      return this.query(this.pool, what, text, values);
    };
  }

  /** The schema version of the database (0 before the first migration). */
  async schemaVersion(): Promise<number> {
    await this.ready();
    const { rows } = await this.query(
      this.pool,
      'read schema version',
      'SELECT max(version) AS v FROM schema_migrations',
    );
    return z.object({ v: z.number().int().nullable() }).parse(rows[0]).v ?? 0;
  }

  async allocate(request: AllocationRequest): Promise<AllocationResult> {
    await this.ready();
    let result: AllocationResult;
    try {
      result = await this.allocateOnce(request);
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      // Under the lock our read saw every committed episode, so a conflicting insert came from a writer that skipped
      // the lock. The constraint kept the store correct; a retry re-reads and decides again.
      throw new PipelineError(
        ErrorType.LockCompromised,
        `allocation of ${request.allocationKey} in ${request.weekId} conflicted with a writer outside the pipeline ` +
          `lock (${e instanceof PipelineError ? String(e.details.constraint) : '?'}); nothing was written, retry`,
        e instanceof PipelineError ? e.details : {},
        { cause: e },
      );
    }
    // Same point as the file store's last step: the allocation is durable but not yet returned.
    if (result.created) await failpoint('allocation.state-written');
    return result;
  }

  async reassertAllocation(claim: AllocationClaim): Promise<AllocationResult> {
    await this.ready();
    const { weekId, sequence } = parseEpisodeId(claim.episodeId);
    const request = { allocationKey: claim.allocationKey, weekId, allocatedBy: claim.allocatedBy };
    try {
      return await this.transaction('re-assert allocation', async (client) => {
        const decision = await this.decide(client, request, (facts) =>
          decideReassertion(facts, { episodeId: claim.episodeId, sequence }),
        );
        if (decision.kind === 'existing') return existingResult(decision);
        const state = initialState(decision, claim.allocationKey, claim.allocatedBy, claim.createdAt);
        await this.insertEpisode(client, state);
        return { episodeId: decision.episodeId, weekId, sequence, created: true };
      });
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      throw new PipelineError(
        ErrorType.LockCompromised,
        `re-assertion of ${claim.episodeId} conflicted with a writer outside the pipeline lock; nothing was written, retry`,
        e instanceof PipelineError ? e.details : {},
        { cause: e },
      );
    }
  }

  async getEpisode(id: EpisodeId): Promise<EpisodeState | undefined> {
    await this.ready();
    return this.readEpisode(this.pool, id, false);
  }

  async requireEpisode(id: EpisodeId): Promise<EpisodeState> {
    return (await this.getEpisode(id)) ?? this.notFound(id);
  }

  async listEpisodes(filter: { weekId?: WeekId } = {}): Promise<EpisodeState[]> {
    await this.ready();
    const { rows } = await this.query(
      this.pool,
      'list episodes',
      `SELECT ${EPISODE_COLUMNS} FROM episodes e WHERE $1::text IS NULL OR e.week_id = $1
       ORDER BY e.week_id COLLATE "C", e.sequence`,
      [filter.weekId ?? null],
    );
    return rows.map((row) => stateFromRow(row));
  }

  /** By status, in one query: the row's status is written with its state, in the same transaction. */
  async listUnfinishedEpisodes(): Promise<EpisodeState[]> {
    await this.ready();
    const { rows } = await this.query(
      this.pool,
      'list unfinished episodes',
      `SELECT ${EPISODE_COLUMNS} FROM episodes e WHERE e.status <> 'completed'
       ORDER BY e.week_id COLLATE "C", e.sequence`,
      [],
    );
    return rows.map((row) => stateFromRow(row));
  }

  async updateEpisode(id: EpisodeId, update: (state: EpisodeState) => EpisodeState): Promise<EpisodeState> {
    await this.ready();
    return this.transaction('update episode', async (client) => {
      await this.takePipelineLock(client);
      // FOR UPDATE as well: even a writer that skipped the advisory lock cannot interleave with this one.
      const current = (await this.readEpisode(client, id, true)) ?? this.notFound(id);
      const next = episodeStateSchema.parse(update(structuredClone(current)));
      for (const field of ['episode_id', 'week_id', 'sequence', 'allocation_key', 'created_at'] as const) {
        if (next[field] !== current[field]) {
          throw new PipelineError(ErrorType.InvalidState, `refusing to change ${field} of episode ${id}`);
        }
      }
      await this.query(
        client,
        'update episode',
        `UPDATE episodes SET allocated_by = $2, status = $3, approval = $4, media = $5, completed_at = $6,
                migration = $7, legacy = $8, updated_at = now()
          WHERE episode_id = $1`,
        [
          id,
          json(next.allocated_by),
          next.status,
          jsonOrNull(next.approval),
          json(next.media),
          next.completed_at,
          jsonOrNull(next.migration),
          jsonOrNull(next.legacy),
        ],
      );
      await this.writeStepsAndLedger(client, next);
      return next;
    });
  }

  async appendHistory(entry: HistoryEntry): Promise<void> {
    const parsed = historyEntrySchema.parse(entry);
    await this.ready();
    await failpoint('completion.before-history');
    // No pipeline lock needed: the primary key lets exactly one writer insert; everyone else compares.
    const inserted = await this.query(
      this.pool,
      'append history',
      `INSERT INTO history (episode_id, week_id, sequence, allocation_key, completed_at, total_cost_cents, currency,
                            entry)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)
       ON CONFLICT (episode_id) DO NOTHING`,
      historyValues(parsed),
    );
    if (inserted.rowCount !== 1) {
      // A separate statement, so that its snapshot sees a concurrent writer that won the insert.
      const { rows } = await this.query(
        this.pool,
        'compare history',
        'SELECT entry = $2::jsonb AS same FROM history WHERE episode_id = $1',
        [parsed.episode_id, json(parsed)],
      );
      if (z.object({ same: z.boolean() }).safeParse(rows[0]).data?.same !== true) {
        throw new PipelineError(
          ErrorType.InvalidState,
          `history of ${parsed.episode_id} is already written in the ${this.description} and differs; ` +
            'history is append-only',
        );
      }
    }
    await failpoint('completion.after-history');
  }

  async listHistory(filter: { weekId?: WeekId } = {}): Promise<HistoryEntry[]> {
    await this.ready();
    const { rows } = await this.query(
      this.pool,
      'list history',
      `SELECT episode_id, entry FROM history WHERE $1::text IS NULL OR week_id = $1
       ORDER BY week_id COLLATE "C", sequence`,
      [filter.weekId ?? null],
    );
    return rows.map((row) => {
      const entry = parseRow(`history row ${String(row.episode_id)}`, historyEntrySchema, row.entry);
      if (entry.episode_id !== row.episode_id) {
        throw new PipelineError(ErrorType.StoreCorrupt, `history row ${String(row.episode_id)} holds another episode`);
      }
      return entry;
    });
  }

  /**
   * Writes episodes and history exactly as given (ids and sequences included), in one transaction under the pipeline
   * lock: `episodes store copy`. Re-running is safe: a row already holding the same content is left alone, one holding
   * different content is refused and nothing is written.
   */
  async importEpisodes(data: { episodes: readonly EpisodeState[]; history: readonly HistoryEntry[] }): Promise<{
    episodesWritten: number;
    episodesUnchanged: number;
    historyWritten: number;
    historyUnchanged: number;
  }> {
    await this.ready();
    return this.transaction('import episodes', async (client) => {
      await this.takePipelineLock(client);
      const counts = { episodesWritten: 0, episodesUnchanged: 0, historyWritten: 0, historyUnchanged: 0 };
      /** Writes `incoming` unless the same content is already there; refuses different content (rolls back all). */
      const copyOne = async <T>(id: string, existing: T | undefined, incoming: T, insert: () => Promise<void>) => {
        if (existing === undefined) {
          await insert();
          return true;
        }
        if (isDeepStrictEqual(existing, incoming)) return false;
        throw new PipelineError(
          ErrorType.StoreCorrupt,
          `the ${this.description} already holds different data for ${id}; nothing was copied`,
          { episodes: [id] },
        );
      };
      for (const raw of data.episodes) {
        const state = episodeStateSchema.parse(raw);
        const existing = await this.readEpisode(client, state.episode_id, true);
        const written = await copyOne(state.episode_id, existing, state, () => this.insertEpisode(client, state));
        counts[written ? 'episodesWritten' : 'episodesUnchanged']++;
      }
      for (const raw of data.history) {
        const entry = historyEntrySchema.parse(raw);
        const { rows } = await this.query(client, 'read history', 'SELECT entry FROM history WHERE episode_id = $1', [
          entry.episode_id,
        ]);
        const existing = rows[0] && parseRow(`history row ${entry.episode_id}`, historyEntrySchema, rows[0].entry);
        const written = await copyOne(entry.episode_id, existing, entry, () => this.insertHistory(client, entry));
        counts[written ? 'historyWritten' : 'historyUnchanged']++;
      }
      return counts;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  // ---- internals ----
  // The allocation's steps are protected, not private: testkit/unsafe-stores.ts derives the variants without the
  // lock or with two transactions, the proofs that each matters. No option or variable of this class turns them off.

  private notFound(id: EpisodeId): never {
    throw new PipelineError(ErrorType.EpisodeNotFound, `episode ${id} does not exist in the ${this.description}`, {
      episodeId: id,
    });
  }

  protected async allocateOnce(request: AllocationRequest): Promise<AllocationResult> {
    return this.transaction('allocate', async (client) => {
      const decision = await this.decide(client, request);
      if (decision.kind === 'existing') return existingResult(decision);
      await failpoint('allocation.decided');
      await this.insertEpisode(client, this.newState(request, decision));
      return { episodeId: decision.episodeId, weekId: request.weekId, sequence: decision.sequence, created: true };
    });
  }

  /** Takes the pipeline lock and decides from the committed facts (inside the caller's transaction). */
  protected async decide(
    client: PoolClient,
    request: AllocationRequest,
    rule: (facts: AllocationFacts) => AllocationDecision = decideAllocation,
  ): Promise<AllocationDecision> {
    const { allocationKey: key, weekId } = request;
    await this.takePipelineLock(client);
    const { rows } = await this.query(
      client,
      'read allocation facts',
      `SELECT episode_id, week_id, sequence, allocation_key FROM episodes WHERE allocation_key = $1 OR week_id = $2`,
      [key, weekId],
    );
    const refs = rows.map((row) => toRef(row));
    return rule({
      key,
      weekId,
      keyMatches: refs.filter((r) => r.allocationKey === key),
      weekEpisodes: refs.filter((r) => r.weekId === weekId),
      recorded: request.recorded,
    });
  }

  protected newState(request: AllocationRequest, decision: Extract<AllocationDecision, { kind: 'new' }>): EpisodeState {
    return initialState(decision, request.allocationKey, request.allocatedBy, new Date().toISOString());
  }

  protected async takePipelineLock(client: PoolClient): Promise<void> {
    // lock_timeout bounds the wait; SET LOCAL semantics (is_local = true) end it with the transaction.
    await this.query(client, 'set lock timeout', `SELECT set_config('lock_timeout', $1, true)`, [
      `${this.lockTimeoutMs}ms`,
    ]);
    await this.query(client, 'take pipeline lock', 'SELECT pg_advisory_xact_lock($1)', [PIPELINE_LOCK_ID]);
    await failpoint('allocation.lock-taken');
  }

  private async readEpisode(db: Db, id: EpisodeId, forUpdate: boolean): Promise<EpisodeState | undefined> {
    const { rows } = await this.query(
      db,
      'read episode',
      `SELECT ${EPISODE_COLUMNS} FROM episodes e WHERE e.episode_id = $1${forUpdate ? ' FOR UPDATE OF e' : ''}`,
      [id],
    );
    const row = rows[0];
    if (!row) return undefined;
    const state = stateFromRow(row);
    if (state.episode_id !== id) {
      throw new PipelineError(ErrorType.StoreCorrupt, `episodes row ${id} holds ${state.episode_id}`);
    }
    return state;
  }

  protected async insertEpisode(client: PoolClient, state: EpisodeState): Promise<void> {
    await this.query(
      client,
      'insert episode',
      `INSERT INTO episodes (episode_id, week_id, sequence, allocation_key, allocated_by, created_at, status, approval,
                             media, completed_at, migration, legacy, media_dir)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        state.episode_id,
        state.week_id,
        state.sequence,
        state.allocation_key,
        json(state.allocated_by),
        state.created_at,
        state.status,
        jsonOrNull(state.approval),
        json(state.media),
        state.completed_at,
        jsonOrNull(state.migration),
        jsonOrNull(state.legacy),
        this.mediaDir(state.episode_id),
      ],
    );
    await this.writeStepsAndLedger(client, state);
  }

  /** Replaces the episode's remote-job and ledger rows by the state's (one statement each way, inside the caller's tx). */
  private async writeStepsAndLedger(client: PoolClient, state: EpisodeState): Promise<void> {
    const id = state.episode_id;
    await this.query(client, 'write remote jobs', 'DELETE FROM remote_jobs WHERE episode_id = $1', [id]);
    await this.query(
      client,
      'write remote jobs',
      `INSERT INTO remote_jobs (episode_id, step_key, step, round, status, idempotency_key, remote_job_id, record)
       SELECT $1, s.key, s.value->>'step', (s.value->>'round')::int, s.value->>'status', s.value->>'idempotency_key',
              s.value->>'remote_job_id', s.value
         FROM jsonb_each($2::jsonb) AS s`,
      [id, json(state.steps)],
    );
    await this.query(client, 'write ledger', 'DELETE FROM ledger_entries WHERE episode_id = $1', [id]);
    await this.query(
      client,
      'write ledger',
      `INSERT INTO ledger_entries (episode_id, position, step, round, remote_job_id, amount_cents, currency,
                                   recorded_at)
       SELECT $1, (t.ord - 1)::int, t.v->>'step', (t.v->>'round')::int, t.v->>'remote_job_id',
              (t.v->>'amount_cents')::bigint, t.v->>'currency', t.v->>'recorded_at'
         FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(v, ord)`,
      [id, json(state.ledger)],
    );
  }

  private async insertHistory(client: PoolClient, entry: HistoryEntry): Promise<void> {
    await this.query(
      client,
      'insert history',
      `INSERT INTO history (episode_id, week_id, sequence, allocation_key, completed_at, total_cost_cents, currency,
                            entry)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)`,
      historyValues(entry),
    );
  }

  private async migrate(): Promise<void> {
    await this.transaction('migrate schema', (client) =>
      applyMigrations((what, text, values) => this.query(client, what, text, values), this.description),
    );
  }

  protected async transaction<T>(what: string, body: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw toStoreError(e, `${what}: cannot connect to the ${this.description}`);
    }
    let broken = false;
    // A checked-out client has no 'error' listener: a connection lost between two statements (server restart, or
    // idle_in_transaction_session_timeout ending a frozen holder) would crash the process instead of failing the
    // next statement, which is then a retryable StorageFailure.
    const onError = () => {
      broken = true;
    };
    client.on('error', onError);
    try {
      await this.query(client, what, 'BEGIN');
      const result = await body(client);
      // A COMMIT that fails on a lost connection leaves the outcome unknown; callers retry idempotently.
      await this.query(client, what, 'COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw e;
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  private async query(
    db: Db,
    what: string,
    text: string,
    values: unknown[] = [],
  ): Promise<QueryResult<Record<string, unknown>>> {
    try {
      return await db.query<Record<string, unknown> & QueryResultRow>(text, values);
    } catch (e) {
      throw toStoreError(e, `${what} on the ${this.description}`);
    }
  }
}

function existingResult(decision: Extract<AllocationDecision, { kind: 'existing' }>): AllocationResult {
  const { episodeId, weekId, sequence } = decision.episode;
  return { episodeId, weekId, sequence, created: false };
}
