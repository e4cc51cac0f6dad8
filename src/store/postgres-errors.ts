/** PostgreSQL and network failures → the store's typed PipelineErrors (never an untyped error, never a password). */
import { DatabaseError } from 'pg';
import { PipelineError } from '../domain/errors';
import { ErrorType } from '../shared';

export function isUniqueViolation(e: unknown): boolean {
  return e instanceof PipelineError && e.details.sqlstate === '23505';
}

/** Connection-level trouble a retry can fix: network errors, server restarts, too many connections. */
const RETRYABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATE → ErrorType. Integrity violations and schema mismatches are StoreCorrupt (a retry cannot fix them);
 * lock_not_available is LockTimeout; everything else, connection errors first, is a retryable StorageFailure.
 */
export function toStoreError(e: unknown, what: string): PipelineError {
  if (e instanceof PipelineError) return e;
  if (e instanceof DatabaseError) {
    const sqlstate = e.code ?? '';
    const details = { sqlstate, constraint: e.constraint ?? null, table: e.table ?? null };
    if (sqlstate === '55P03') {
      return new PipelineError(ErrorType.LockTimeout, `${what}: pipeline lock still held by another process`, details, {
        cause: e,
      });
    }
    if (sqlstate.startsWith('23') || sqlstate.startsWith('42')) {
      const why = sqlstate.startsWith('23') ? `constraint ${e.constraint ?? '?'} refused the write` : 'schema mismatch';
      return new PipelineError(
        ErrorType.StoreCorrupt,
        `${what}: ${why} (SQLSTATE ${sqlstate}: ${e.message})`,
        details,
        {
          cause: e,
        },
      );
    }
    return new PipelineError(ErrorType.StorageFailure, `${what}: SQLSTATE ${sqlstate}: ${e.message}`, details, {
      cause: e,
    });
  }
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return new PipelineError(
    ErrorType.StorageFailure,
    `${what}: ${code && RETRYABLE_NODE_CODES.has(code) ? code : message}`,
    { code: code ?? null },
    { cause: e },
  );
}
