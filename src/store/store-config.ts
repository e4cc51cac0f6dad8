/**
 * Every store setting from the environment (which store, where its files live, the lock settings), parsed with zod when
 * a store is opened: never read at import time, never read ad hoc elsewhere. Nothing here can turn a protection off.
 */
import * as path from 'node:path';
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';

export interface LockOptions {
  /** Give up (retryably) after this long. */
  timeoutMs: number;
  /** A lock whose heartbeat is older than this is considered abandoned. proper-lockfile's minimum is 2000. */
  staleMs: number;
  /** Whether a holder is proven dead (default holder-identity.ts); a test injects a weaker one to prove it matters. */
  holderProvenDead?: (entry: string) => boolean;
}

export const DEFAULT_LOCK_OPTIONS: Readonly<LockOptions> = { timeoutMs: 30_000, staleMs: 10_000 };

const lockEnvSchema = z.object({
  EPISODES_LOCK_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_LOCK_OPTIONS.timeoutMs),
  EPISODES_LOCK_STALE_MS: z.coerce.number().int().positive().default(DEFAULT_LOCK_OPTIONS.staleMs),
});

export interface StoreEnvironment {
  /** EPISODES_STORE_URL: a PostgreSQL URL selects the shared store. */
  storeUrl?: string;
  /** EPISODES_DATA_DIR (default ./data): the file store. */
  dataDir: string;
  /** EPISODES_MEDIA_DIR (default ./data/media): the PostgreSQL store's episode files. */
  mediaDir: string;
}

const storeEnvSchema = z.object({
  EPISODES_STORE_URL: z.string().optional(),
  EPISODES_DATA_DIR: z.string().optional(),
  EPISODES_MEDIA_DIR: z.string().optional(),
});

/** Which store and where, as the environment says; a malformed value is `InvalidInput` naming the variable. */
export function storeEnvironment(env: NodeJS.ProcessEnv = process.env): StoreEnvironment {
  const e = parseEnv(storeEnvSchema, env, 'store settings');
  return {
    storeUrl: e.EPISODES_STORE_URL || undefined,
    // An empty variable means unset, as `VAR= cmd` is usually meant.
    dataDir: path.resolve(e.EPISODES_DATA_DIR || './data'),
    mediaDir: path.resolve(e.EPISODES_MEDIA_DIR || './data/media'),
  };
}

function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv, what: string): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const { at, message } = firstIssue(parsed.error, what);
    throw new PipelineError(ErrorType.InvalidInput, `${at}: ${message}`);
  }
  return parsed.data;
}

/** The lock options the environment asks for; a malformed value is `InvalidInput` naming the variable. */
export function lockOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LockOptions {
  const e = parseEnv(lockEnvSchema, env, 'lock settings');
  return {
    timeoutMs: e.EPISODES_LOCK_TIMEOUT_MS,
    staleMs: e.EPISODES_LOCK_STALE_MS,
  };
}
