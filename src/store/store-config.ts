/**
 * Every store setting from the environment (which store, where its files live, the lock settings), read by the
 * settings table's rules when a store is opened: never at import time, never ad hoc elsewhere. Nothing here can turn a
 * protection off.
 */
import * as path from 'node:path';
import { readSettings } from '../settings/read';
import { settingDefault } from '../settings/table';

export interface LockOptions {
  /** Give up (retryably) after this long. */
  timeoutMs: number;
  /** A lock whose heartbeat is older than this is considered abandoned. proper-lockfile's minimum is 2000. */
  staleMs: number;
  /** Whether a holder is proven dead (default holder-identity.ts); a test injects a weaker one to prove it matters. */
  holderProvenDead?: (entry: string) => boolean;
}

export const DEFAULT_LOCK_OPTIONS: Readonly<LockOptions> = {
  timeoutMs: settingDefault('EPISODES_LOCK_TIMEOUT_MS'),
  staleMs: settingDefault('EPISODES_LOCK_STALE_MS'),
};

export interface StoreEnvironment {
  /** EPISODES_STORE_URL: a PostgreSQL URL selects the shared store. */
  storeUrl?: string;
  /** EPISODES_DATA_DIR (default ./data): the file store. */
  dataDir: string;
  /** EPISODES_MEDIA_DIR (default ./data/media): the PostgreSQL store's episode files. */
  mediaDir: string;
}

/** Which store and where, as the environment says; a malformed value is `InvalidInput` naming the variable. */
export function storeEnvironment(env: NodeJS.ProcessEnv = process.env): StoreEnvironment {
  const s = readSettings(['EPISODES_STORE_URL', 'EPISODES_DATA_DIR', 'EPISODES_MEDIA_DIR'], env);
  return {
    storeUrl: s.EPISODES_STORE_URL,
    dataDir: path.resolve(s.EPISODES_DATA_DIR),
    mediaDir: path.resolve(s.EPISODES_MEDIA_DIR),
  };
}

/** The lock options the environment asks for; a malformed value is `InvalidInput` naming the variable. */
export function lockOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LockOptions {
  const s = readSettings(['EPISODES_LOCK_TIMEOUT_MS', 'EPISODES_LOCK_STALE_MS'], env);
  return { timeoutMs: s.EPISODES_LOCK_TIMEOUT_MS, staleMs: s.EPISODES_LOCK_STALE_MS };
}
