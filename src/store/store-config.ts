/**
 * The lock settings of the file store (and the PostgreSQL store's lock timeout and staleness), from the environment,
 * parsed with zod when a store is opened: never read at import time, never read ad hoc elsewhere.
 */
import { z } from 'zod';
import { PipelineError } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import { ErrorType } from '../shared';

export interface LockOptions {
  /** Give up (retryably) after this long. */
  timeoutMs: number;
  /** A lock whose heartbeat is older than this is considered abandoned. proper-lockfile's minimum is 2000. */
  staleMs: number;
  /** Test-only: no lock at all, so the concurrency tests can show that their assertions then fail. */
  unsafeDisableForTests?: boolean;
  /**
   * Test-only: `poll` waits as before the handoff (no in-process queue, no holder notification: jittered polling);
   * `no-death-detection` keeps the handoff but never takes over a holder seen to die before its lock is stale.
   */
  unsafeWaitForTests?: 'poll' | 'no-death-detection';
}

export const DEFAULT_LOCK_OPTIONS: Readonly<LockOptions> = { timeoutMs: 30_000, staleMs: 10_000 };

const flag = z.enum(['0', '1', '']).transform((v) => v === '1');
const lockEnvSchema = z.object({
  EPISODES_LOCK_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_LOCK_OPTIONS.timeoutMs),
  EPISODES_LOCK_STALE_MS: z.coerce.number().int().positive().default(DEFAULT_LOCK_OPTIONS.staleMs),
  EPISODES_UNSAFE_DISABLE_LOCK_FOR_TESTS: flag.default(false),
  EPISODES_UNSAFE_LOCK_WAIT_FOR_TESTS: z.enum(['poll', 'no-death-detection', '']).default(''),
});

/** The lock options the environment asks for; a malformed value is `InvalidInput` naming the variable. */
export function lockOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LockOptions {
  const parsed = lockEnvSchema.safeParse(env);
  if (!parsed.success) {
    const { at, message } = firstIssue(parsed.error, 'lock settings');
    throw new PipelineError(ErrorType.InvalidInput, `${at}: ${message}`);
  }
  const e = parsed.data;
  return {
    timeoutMs: e.EPISODES_LOCK_TIMEOUT_MS,
    staleMs: e.EPISODES_LOCK_STALE_MS,
    unsafeDisableForTests: e.EPISODES_UNSAFE_DISABLE_LOCK_FOR_TESTS,
    unsafeWaitForTests: e.EPISODES_UNSAFE_LOCK_WAIT_FOR_TESTS || undefined,
  };
}
