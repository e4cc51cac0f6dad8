import * as os from 'node:os';
import * as path from 'node:path';
import { PipelineError, ErrorType } from '../domain/errors';
import type { EpisodeStore } from './episode-store';
import { FileEpisodeStore } from './file-store';
import { FilePublishedPrices } from './file-published-prices';
import { FileReviewSessions } from './file-review-sessions';
import type { PublishedPricesStore } from './published-prices';
import type { ReviewSessionStore } from './review-sessions';
import { PostgresEpisodeStore } from './postgres-store';
import { isPostgresUrl } from './postgres-url';
import { lockOptionsFromEnv, storeEnvironment } from './store-config';

export interface StoreSelection {
  /** File store directory (default: EPISODES_DATA_DIR or ./data). */
  dataDir?: string;
  /** A `postgres://` URL selects the PostgreSQL store (default: EPISODES_STORE_URL). */
  storeUrl?: string;
  /** PostgreSQL store only: root of the media directories (default: EPISODES_MEDIA_DIR or ./data/media). */
  mediaDir?: string;
  /** PostgreSQL store only: application_name of this process's sessions (see PostgresStoreOptions). */
  applicationName?: string;
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
  const env = storeEnvironment();
  const url = selection.storeUrl ?? (selection.dataDir === undefined ? env.storeUrl : undefined);
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
      applicationName: selection.applicationName,
      lockTimeoutMs: lock.timeoutMs,
      staleMs: lock.staleMs,
    });
  }
  return new FileEpisodeStore(selection.dataDir ?? env.dataDir, lock);
}

/**
 * Connects and applies schema migrations now, so that a worker fails at start rather than at its first activity.
 * A store that is down or full (a retryable error) is waited for: `onRetry` gets one line per attempt, the wait
 * doubles up to `maxDelayMs`. A non-retryable error (a newer schema, bad credentials) is thrown at once.
 */
export async function prepareStore(
  store: EpisodeStore,
  options: { onRetry?: (line: string) => void; initialDelayMs?: number; maxDelayMs?: number } = {},
): Promise<void> {
  if (!(store instanceof PostgresEpisodeStore)) return;
  let delay = options.initialDelayMs ?? 1_000;
  for (let attempt = 1; ; attempt++) {
    try {
      await store.ready();
      return;
    } catch (e) {
      if (!options.onRetry || !(e instanceof PipelineError) || !e.retryable) throw e;
      options.onRetry(
        `${store.description} not ready (${e.type}: ${e.message}); attempt ${attempt}, retrying in ${delay} ms`,
      );
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, options.maxDelayMs ?? 10_000);
    }
  }
}

/** application_name of a process's store sessions: kind (worker, cli-<command>), host and pid. */
export function storeApplicationName(kind: string): string {
  return `episodes-${kind}-${os.hostname()}-${process.pid}`;
}

/** The review desk's sessions beside the episodes: `<data dir>/review/sessions/` or the database's table. */
export function openReviewSessions(store: EpisodeStore): ReviewSessionStore {
  if (store instanceof PostgresEpisodeStore) return store.reviewSessions();
  if (store instanceof FileEpisodeStore) {
    return new FileReviewSessions(path.join(store.dataDir, 'review', 'sessions'), lockOptionsFromEnv());
  }
  throw new PipelineError(ErrorType.InvalidInput, `${store.description} keeps no review sessions`);
}

/** The vendor's price list as workers publish it: `<data dir>/vendor-prices.json` or the database's row. */
export function openPublishedPrices(store: EpisodeStore): PublishedPricesStore {
  if (store instanceof PostgresEpisodeStore) return store.publishedPrices();
  if (store instanceof FileEpisodeStore) return new FilePublishedPrices(store.dataDir);
  throw new PipelineError(ErrorType.InvalidInput, `${store.description} keeps no price list`);
}
