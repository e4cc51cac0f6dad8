/**
 * `verifyStore` over any EpisodeStore through its read interface only (listEpisodes, listHistory, mediaDir): how a
 * PostgreSQL store can be verified. It has no view of the storage's structure, so a record that does not parse stops
 * the listing and is one `store-unreadable` problem; the file store has `fileStoreSource` for per-file findings.
 */
import type { EpisodeState, HistoryEntry } from '../domain/episode-state';
import type { EpisodeStore } from '../store/episode-store';
import { ProblemCode, problem, type Problem } from '../domain/problem';
import type { LoadedStore, VerifySource } from './source';

export function episodeStoreSource(store: EpisodeStore, options: { evidenceBase: string }): VerifySource {
  return {
    description: store.description,
    evidenceBase: options.evidenceBase,
    // The EpisodeStore contract: every recorded media path is relative to mediaDir(id).
    episodeDir: (id) => store.mediaDir(id),
    load: async (): Promise<LoadedStore> => {
      const problems: Problem[] = [];
      const episodes = await listed(store, problems, () => store.listEpisodes());
      const history = await listed(store, problems, () => store.listHistory());
      return {
        episodes: episodes.map((value) => ({ value, file: `${store.description}: episode ${value.episode_id}` })),
        history: history.map((value) => ({ value, file: `${store.description}: history ${value.episode_id}` })),
        problems,
      };
    },
  };
}

async function listed<T extends EpisodeState | HistoryEntry>(
  store: EpisodeStore,
  problems: Problem[],
  list: () => Promise<T[]>,
): Promise<T[]> {
  try {
    return await list();
  } catch (e) {
    problems.push(problem(ProblemCode.StoreUnreadable, (e as Error).message, { file: store.description }));
    return [];
  }
}
