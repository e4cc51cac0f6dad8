/**
 * A store that forgets: it wraps a real store, remembers every state it wrote, and can put an earlier one back, as a
 * failover to an asynchronous replica or a restore from backup does. Deterministic: the tests say when.
 */
import type { EpisodeId } from '../src/domain/episode-id';
import type { EpisodeState, HistoryEntry } from '../src/domain/episode-state';
import type { WeekId } from '../src/domain/week-id';
import type { AllocationClaim, AllocationRequest, AllocationResult, EpisodeStore } from '../src/store/episode-store';

export class RollbackStore implements EpisodeStore {
  /** Every state written through this store, oldest first. */
  readonly written: EpisodeState[] = [];
  private beforeUpdate: (() => Promise<void>) | undefined;

  constructor(private readonly inner: EpisodeStore) {}

  get description(): string {
    return `forgetful ${this.inner.description}`;
  }

  /** Puts back the newest state written that `match` accepts: everything written after it is forgotten. */
  async rollBack(id: EpisodeId, match: (s: EpisodeState) => boolean): Promise<EpisodeState> {
    const earlier = this.written.filter((s) => s.episode_id === id && match(s)).at(-1);
    if (!earlier) throw new Error(`no written state of ${id} to roll back to`);
    await this.inner.updateEpisode(id, () => earlier);
    return earlier;
  }

  /** Runs `fn` once, just before the next `updateEpisode` reads the state (e.g. between an activity's read and write). */
  beforeNextUpdate(fn: () => Promise<void>): void {
    this.beforeUpdate = fn;
  }

  allocate(request: AllocationRequest): Promise<AllocationResult> {
    return this.inner.allocate(request);
  }
  reassertAllocation(claim: AllocationClaim): Promise<AllocationResult> {
    return this.inner.reassertAllocation(claim);
  }
  getEpisode(id: EpisodeId): Promise<EpisodeState | undefined> {
    return this.inner.getEpisode(id);
  }
  requireEpisode(id: EpisodeId): Promise<EpisodeState> {
    return this.inner.requireEpisode(id);
  }
  listEpisodes(filter?: { weekId?: WeekId }): Promise<EpisodeState[]> {
    return this.inner.listEpisodes(filter);
  }
  listUnfinishedEpisodes(): Promise<EpisodeState[]> {
    return this.inner.listUnfinishedEpisodes();
  }
  async updateEpisode(id: EpisodeId, update: (state: EpisodeState) => EpisodeState): Promise<EpisodeState> {
    const hook = this.beforeUpdate;
    this.beforeUpdate = undefined;
    await hook?.();
    const next = await this.inner.updateEpisode(id, update);
    this.written.push(structuredClone(next));
    return next;
  }
  appendHistory(entry: HistoryEntry): Promise<void> {
    return this.inner.appendHistory(entry);
  }
  listHistory(filter?: { weekId?: WeekId }): Promise<HistoryEntry[]> {
    return this.inner.listHistory(filter);
  }
  mediaDir(id: EpisodeId): string {
    return this.inner.mediaDir(id);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
