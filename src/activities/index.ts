import type { EpisodeStore } from '../store/episode-store';
import { createAllocationActivities } from './allocation';

/** Everything activities need from the outside world; only worker.ts and tests build the real thing. */
export interface ActivityDeps {
  store: EpisodeStore;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createAllocationActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
