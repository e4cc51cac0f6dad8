/**
 * PostgreSQL and network failures → the store's typed PipelineErrors: never an untyped error, never a password (the
 * caller's `what` names the store by host:port/database only). Each carries `details.reason`, so that a test or an
 * operator tells "server restarting" from "too many connections" without reading the message.
 *
 *   reason                 SQLSTATE / node error                              type             retry
 *   connection-lost        08xxx, ECONNRESET/EPIPE, "Connection terminated"   StorageFailure   yes
 *   unreachable            ECONNREFUSED/ETIMEDOUT/ENOTFOUND, connect timeout  StorageFailure   yes
 *   session-ended          57P01 admin/terminated, 57P02 crash, 57P03 cannot  StorageFailure   yes
 *                          connect now, 25P03 idle-in-transaction timeout
 *   too-many-connections   53300                                              StorageFailure   yes
 *   server-resources       53xxx (disk full, out of memory), 58xxx            StorageFailure   yes
 *   statement-timeout      57014 (statement_timeout or a cancel)              StorageFailure   yes
 *   lock-timeout           55P03 (lock_timeout on the pipeline lock)          LockTimeout      yes
 *   serialization          40001                                              StorageFailure   yes
 *   deadlock               40P01                                              StorageFailure   yes
 *   concurrent-writer      23505 (a row another writer committed first)       LockCompromised  yes
 *   constraint             other 23xxx (check, foreign key, not null)         StoreCorrupt     no
 *   schema-mismatch        42xxx (missing table/column, wrong type)           StoreCorrupt     no
 *   access-denied          28xxx (authentication), 42501                      InvalidState     no
 *   other                  anything else                                      StorageFailure   yes
 *
 * Every retryable case rolled the whole transaction back (the server does that for a failed or ended session), so
 * nothing was written and a retry starts over. A failed COMMIT leaves the outcome unknown; every write is idempotent.
 */
import { DatabaseError } from 'pg';
import { PipelineError, ErrorType } from '../domain/errors';

export type StoreErrorReason =
  | 'connection-lost'
  | 'unreachable'
  | 'session-ended'
  | 'too-many-connections'
  | 'server-resources'
  | 'statement-timeout'
  | 'lock-timeout'
  | 'serialization'
  | 'deadlock'
  | 'concurrent-writer'
  | 'constraint'
  | 'schema-mismatch'
  | 'access-denied'
  | 'other';

export function isUniqueViolation(e: unknown): boolean {
  return e instanceof PipelineError && e.details.sqlstate === '23505';
}

const LOST_NODE_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);
const UNREACHABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** node-postgres reports a dropped or timed-out connection as a plain Error with one of these messages. */
const LOST_MESSAGES = /connection terminated|not queryable|connection ended|query read timeout|client was closed/i;
const CONNECT_TIMEOUT_MESSAGES = /timeout exceeded when trying to connect|connection timeout/i;

const SQLSTATE_REASONS: readonly [RegExp, StoreErrorReason][] = [
  [/^08/, 'connection-lost'],
  [/^(57P0[123]|25P03)$/, 'session-ended'],
  [/^53300$/, 'too-many-connections'],
  [/^5[38]/, 'server-resources'],
  [/^57014$/, 'statement-timeout'],
  [/^55P03$/, 'lock-timeout'],
  [/^40001$/, 'serialization'],
  [/^40P01$/, 'deadlock'],
  [/^23505$/, 'concurrent-writer'],
  [/^23/, 'constraint'],
  [/^(28|42501$)/, 'access-denied'],
  [/^42/, 'schema-mismatch'],
];

const TYPE_OF: Record<StoreErrorReason, ErrorType> = {
  'connection-lost': ErrorType.StorageFailure,
  unreachable: ErrorType.StorageFailure,
  'session-ended': ErrorType.StorageFailure,
  'too-many-connections': ErrorType.StorageFailure,
  'server-resources': ErrorType.StorageFailure,
  'statement-timeout': ErrorType.StorageFailure,
  'lock-timeout': ErrorType.LockTimeout,
  serialization: ErrorType.StorageFailure,
  deadlock: ErrorType.StorageFailure,
  'concurrent-writer': ErrorType.LockCompromised,
  constraint: ErrorType.StoreCorrupt,
  'schema-mismatch': ErrorType.StoreCorrupt,
  'access-denied': ErrorType.InvalidState,
  other: ErrorType.StorageFailure,
};

const EXPLAIN: Record<StoreErrorReason, string> = {
  'connection-lost': 'connection to the server lost; nothing was committed, retry',
  unreachable: 'server unreachable; retry once it is up',
  'session-ended': 'session ended by the server (shutdown, restart or terminated); nothing was committed, retry',
  'too-many-connections': 'server has no free connection (max_connections); retry once connections free up',
  'server-resources': 'server out of resources; retry',
  'statement-timeout': 'statement cancelled (statement_timeout); nothing was committed, retry',
  'lock-timeout': 'pipeline lock still held by another process',
  serialization: 'serialization failure; nothing was committed, retry',
  deadlock: 'deadlock detected; this transaction was rolled back, retry',
  'concurrent-writer':
    'another writer committed this row first (outside the pipeline lock); nothing was written, retry',
  constraint: 'a constraint refused the write',
  'schema-mismatch': 'schema mismatch',
  'access-denied': 'access denied by the server (check the store URL credentials and grants)',
  other: 'database error',
};

/** The reason of a node-postgres or network error, by SQLSTATE first, then by errno code or node-postgres message. */
export function storeErrorReason(e: unknown): StoreErrorReason {
  if (e instanceof DatabaseError) {
    const sqlstate = e.code ?? '';
    return SQLSTATE_REASONS.find(([pattern]) => pattern.test(sqlstate))?.[1] ?? 'other';
  }
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (code && LOST_NODE_CODES.has(code)) return 'connection-lost';
  if (code && UNREACHABLE_NODE_CODES.has(code)) return 'unreachable';
  const message = e instanceof Error ? e.message : String(e);
  if (CONNECT_TIMEOUT_MESSAGES.test(message)) return 'unreachable';
  if (LOST_MESSAGES.test(message)) return 'connection-lost';
  return 'other';
}

export function toStoreError(e: unknown, what: string): PipelineError {
  if (e instanceof PipelineError) return e;
  const reason = storeErrorReason(e);
  const explain =
    reason === 'constraint' && e instanceof DatabaseError
      ? `constraint ${e.constraint ?? '?'} refused the write`
      : EXPLAIN[reason];
  if (e instanceof DatabaseError) {
    const sqlstate = e.code ?? '';
    const details = { reason, sqlstate, constraint: e.constraint ?? null, table: e.table ?? null };
    return new PipelineError(TYPE_OF[reason], `${what}: ${explain} (SQLSTATE ${sqlstate}: ${e.message})`, details, {
      cause: e,
    });
  }
  const code = (e as NodeJS.ErrnoException | undefined)?.code ?? null;
  const message = e instanceof Error ? e.message : String(e);
  // An errno message may carry the address, never credentials; the store URL itself is never part of it.
  return new PipelineError(TYPE_OF[reason], `${what}: ${explain} (${code ?? message})`, { reason, code }, { cause: e });
}
