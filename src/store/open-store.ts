import { PipelineError } from '../domain/errors';
import { ErrorType } from '../shared';
import type { EpisodeStore } from './episode-store';
import { FileEpisodeStore, defaultDataDir } from './file-store';
import { PostgresEpisodeStore, isPostgresUrl } from './postgres-store';
import { lockOptionsFromEnv } from './store-config';

export interface StoreSelection {
  /** File store directory (default: EPISODES_DATA_DIR or ./data). */
  dataDir?: string;
  /** A `postgres://` URL selects the PostgreSQL store (default: EPISODES_STORE_URL). */
  storeUrl?: string;
  /** PostgreSQL store only: root of the media directories (default: EPISODES_MEDIA_DIR or ./data/media). */
  mediaDir?: string;
}

/**
 * The one place that decides which EpisodeStore a process uses: a `postgres://` or `postgresql://` URL selects the
 * shared PostgreSQL store; otherwise the file store, the embedded default. Precedence: `storeUrl`, then an explicit
 * `dataDir` (the file store, even when EPISODES_STORE_URL is set), then EPISODES_STORE_URL, then EPISODES_DATA_DIR.
 */
export function openStore(selection: StoreSelection = {}): EpisodeStore {
  if (selection.storeUrl !== undefined && selection.dataDir !== undefined) {
    throw new PipelineError(ErrorType.InvalidInput, 'give a file store data dir or a store URL, not both');
  }
  const lock = lockOptionsFromEnv();
  const url = selection.storeUrl ?? (selection.dataDir === undefined ? process.env.EPISODES_STORE_URL : undefined);
  if (url) {
    if (!isPostgresUrl(url)) {
      // Never echo the URL: it may carry a password.
      throw new PipelineError(
        ErrorType.InvalidInput,
        'store URL must start with postgres:// or postgresql:// (unset EPISODES_STORE_URL for the file store)',
      );
    }
    return new PostgresEpisodeStore({
      url,
      mediaDir: selection.mediaDir,
      lockTimeoutMs: lock.timeoutMs,
      staleMs: lock.staleMs,
      unsafeDisableLockForTests: lock.unsafeDisableForTests,
    });
  }
  return new FileEpisodeStore(selection.dataDir ?? defaultDataDir(), lock);
}

/** Connects and applies schema migrations now, so that a worker fails at start rather than at its first activity. */
export async function prepareStore(store: EpisodeStore): Promise<void> {
  if (store instanceof PostgresEpisodeStore) await store.ready();
}
