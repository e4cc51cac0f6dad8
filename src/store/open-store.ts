import type { EpisodeStore } from './episode-store';
import { FileEpisodeStore, defaultDataDir } from './file-store';

export interface StoreSelection {
  /** File store directory (default: EPISODES_DATA_DIR or ./data). */
  dataDir?: string;
  /** A `postgres://` URL selects the PostgreSQL store (default: EPISODES_STORE_URL). */
  storeUrl?: string;
}

/** The one place that decides which EpisodeStore a process uses; the file store is the embedded default. */
export function openStore(selection: StoreSelection = {}): EpisodeStore {
  const url = selection.storeUrl ?? process.env.EPISODES_STORE_URL;
  if (url) {
    throw new Error('EPISODES_STORE_URL is set but no PostgreSQL store is built into this version');
  }
  return new FileEpisodeStore(selection.dataDir ?? defaultDataDir());
}
