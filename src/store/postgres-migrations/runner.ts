/**
 * Applies pending schema migrations, in order, inside the caller's transaction: one process migrates while the others
 * wait on the migration lock and then find nothing left to do.
 */
import type { QueryResult } from 'pg';
import { z } from 'zod';
import { PipelineError, ErrorType } from '../../domain/errors';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './index';

/** Serialises schema migrations of processes starting at the same time (the pipeline lock's key + 1). */
export const MIGRATION_LOCK_ID = 0x45504953 + 1;

/** One statement on the transaction's connection, errors already mapped to the store's types. */
export type TxQuery = (what: string, text: string, values?: unknown[]) => Promise<QueryResult<Record<string, unknown>>>;

export async function applyMigrations(query: TxQuery, storeDescription: string): Promise<void> {
  MIGRATIONS.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new Error(`postgres migration ${m.name} has version ${m.version}, expected ${i + 1}`);
  });
  await query('take migration lock', 'SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
  await query(
    'migrate schema',
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       version    integer PRIMARY KEY,
       name       text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  const { rows } = await query('migrate schema', 'SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((r) => z.number().int().parse(r.version)));
  const newest = Math.max(0, ...applied);
  if (newest > LATEST_SCHEMA_VERSION) {
    throw new PipelineError(
      ErrorType.InvalidState,
      `the ${storeDescription} has schema version ${newest}, newer than this build knows ` +
        `(${LATEST_SCHEMA_VERSION}); upgrade this process`,
    );
  }
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    await query(`apply migration ${m.version}`, m.sql);
    await query(`apply migration ${m.version}`, 'INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
      m.version,
      m.name,
    ]);
  }
}
