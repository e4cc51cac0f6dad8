/**
 * What `verifyStore` needs from a store, so that the same generic checks run over any EpisodeStore: the file store
 * (file-store-source.ts, with its per-file and structural checks) and PostgreSQL or any other (store-source.ts, through
 * the store's read interface). The records it holds, where each came from, and where media and evidence live.
 */
import type { EpisodeId } from '../domain/episode-id';
import type { EpisodeState, HistoryEntry } from '../domain/episode-state';
import type { Problem } from '../domain/problem';

/** A record and where it was read from (a file path, or a row description for a database). */
export interface Located<T> {
  value: T;
  file: string;
}

export interface LoadedStore {
  episodes: Located<EpisodeState>[];
  history: Located<HistoryEntry>[];
  /** Records that could not be read or parsed, and problems of the storage's own structure. */
  problems: Problem[];
}

export interface VerifySource {
  readonly description: string;
  load(): Promise<LoadedStore>;
  /** The directory that the episode's recorded media paths are relative to (`EpisodeStore.mediaDir`). */
  episodeDir(id: EpisodeId): string;
  /** The directory that `migration.evidence_dir` is relative to (the data dir). */
  readonly evidenceBase: string;
}
