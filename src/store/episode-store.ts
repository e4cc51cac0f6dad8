import type { AllocationKey } from '../domain/allocation-key';
import type { EpisodeId } from '../domain/episode-id';
import type { AllocatedBy, EpisodeState, HistoryEntry } from '../domain/episode-state';
import type { WeekId } from '../domain/week-id';

export interface AllocationRequest {
  allocationKey: AllocationKey;
  weekId: WeekId;
  allocatedBy: AllocatedBy;
  /** Ids of the week Temporal records as handed out (`AllocationFacts.recorded`): a new episode goes above them. */
  recorded?: readonly EpisodeId[];
}

/** What Temporal recorded of an allocation the store may have forgot: which run was given which episode, and when. */
export interface AllocationClaim {
  allocationKey: AllocationKey;
  episodeId: EpisodeId;
  allocatedBy: AllocatedBy;
  createdAt: string;
}

export interface AllocationResult {
  episodeId: EpisodeId;
  weekId: WeekId;
  sequence: number;
  /** false when the key already owned this episode (a retry, restart or reset of the same logical run). */
  created: boolean;
}

/**
 * Durable home of episodes. Every implementation serialises `allocate` with the pipeline lock and applies
 * `decideAllocation` (src/domain/allocation.ts) to what it reads inside that lock; `updateEpisode` is serialised with
 * every other write of that episode (the file store: the episode's own lock; PostgreSQL: the pipeline lock and a row
 * lock).
 */
export interface EpisodeStore {
  /** Human-readable location, for logs and errors (never contains credentials). */
  readonly description: string;
  allocate(request: AllocationRequest): Promise<AllocationResult>;
  /**
   * Writes back an allocation the store forgot (a restore, a failover), under the pipeline lock with the allocation's
   * rules (`decideReassertion`): already there → it (`created: false`); free → written with its key (`created: true`);
   * its id or its key given out again meanwhile → `AllocationConflict`, nothing written.
   */
  reassertAllocation(claim: AllocationClaim): Promise<AllocationResult>;
  getEpisode(id: EpisodeId): Promise<EpisodeState | undefined>;
  /** The paid-step guard: the state, or a non-retryable `EpisodeNotFound`. */
  requireEpisode(id: EpisodeId): Promise<EpisodeState>;
  listEpisodes(filter?: { weekId?: WeekId }): Promise<EpisodeState[]>;
  /** Every episode whose status is not `completed` (the review desk's waiting list), without reading the others. */
  listUnfinishedEpisodes(): Promise<EpisodeState[]>;
  /** Read-modify-write of one episode, serialised with every other write of that episode; identity cannot change. */
  updateEpisode(id: EpisodeId, update: (state: EpisodeState) => EpisodeState): Promise<EpisodeState>;
  /** Append-only: writing the same entry again is a no-op, a different one for the same episode is refused. */
  appendHistory(entry: HistoryEntry): Promise<void>;
  listHistory(filter?: { weekId?: WeekId }): Promise<HistoryEntry[]>;
  /** Root of the episode's media files: every `MediaFile.path` in its state is relative to this directory. */
  mediaDir(id: EpisodeId): string;
  close(): Promise<void>;
}
