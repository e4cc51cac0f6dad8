/**
 * The PostgreSQL store's review sessions: the `review_sessions` table (migration 002), reached through the episode
 * store's pool. `create` runs in one transaction under a row-independent advisory lock, so the bounds hold with
 * several desks on one database; `touch` is one UPDATE, so it can never bring back a deleted row.
 */
import type { QueryResult } from 'pg';
import { z } from 'zod';
import {
  SESSION_DIGEST,
  reviewSessionSchema,
  sessionsToRemove,
  type ReviewSession,
  type ReviewSessionStore,
  type SessionBounds,
} from './review-sessions';

/** One statement, on the pool or inside `transaction`'s connection, errors mapped to the store's types. */
export type SessionQuery = (what: string, text: string, values?: unknown[]) => Promise<QueryResult>;

/** Serialises `create` of every desk on the database (the pipeline lock's key + 2). */
export const REVIEW_SESSIONS_LOCK_ID = 0x45504953 + 2;

const recordRow = z.object({ record: z.unknown() });

export class PostgresReviewSessions implements ReviewSessionStore {
  constructor(
    readonly description: string,
    private readonly query: SessionQuery,
    private readonly transaction: <T>(body: (query: SessionQuery) => Promise<T>) => Promise<T>,
  ) {}

  create(session: ReviewSession, bounds: SessionBounds): Promise<void> {
    const s = reviewSessionSchema.parse(session);
    return this.transaction(async (q) => {
      await q('lock review sessions', 'SELECT pg_advisory_xact_lock($1)', [REVIEW_SESSIONS_LOCK_ID]);
      const all = parseRecords(await q('list review sessions', 'SELECT record FROM review_sessions'));
      const remove = [...sessionsToRemove(all, s.identity, bounds)];
      if (remove.length > 0) {
        await q('remove review sessions', 'DELETE FROM review_sessions WHERE id_sha256 = ANY($1::text[])', [remove]);
      }
      await q(
        'create review session',
        `INSERT INTO review_sessions (id_sha256, identity, last_seen_at, expires_at, record)
         VALUES ($1, $2, $3, $4, $5::jsonb)`,
        [s.id_sha256, s.identity, s.last_seen_at, s.expires_at, JSON.stringify(s)],
      );
    });
  }

  async get(idSha256: string): Promise<ReviewSession | undefined> {
    if (!SESSION_DIGEST.test(idSha256)) return undefined;
    const rows = parseRecords(
      await this.query('read review session', 'SELECT record FROM review_sessions WHERE id_sha256 = $1', [idSha256]),
    );
    return rows[0];
  }

  async touch(idSha256: string, at: Date): Promise<void> {
    await this.query(
      'touch review session',
      `UPDATE review_sessions SET last_seen_at = $2, record = jsonb_set(record, '{last_seen_at}', to_jsonb($3::text))
        WHERE id_sha256 = $1`,
      [idSha256, at, at.toISOString()],
    );
  }

  async delete(idSha256: string): Promise<boolean> {
    if (!SESSION_DIGEST.test(idSha256)) return false;
    const r = await this.query('delete review session', 'DELETE FROM review_sessions WHERE id_sha256 = $1', [idSha256]);
    return (r.rowCount ?? 0) > 0;
  }

  async list(): Promise<ReviewSession[]> {
    return parseRecords(
      await this.query('list review sessions', 'SELECT record FROM review_sessions ORDER BY last_seen_at'),
    );
  }
}

function parseRecords(result: QueryResult): ReviewSession[] {
  return result.rows.map((row) => reviewSessionSchema.parse(recordRow.parse(row).record));
}
