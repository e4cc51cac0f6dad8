/**
 * What the driver knows of the system while it runs, from the outside only: the vendor's requests (accepted
 * submissions are the campaign's logical clock), and a snapshot of the store's episodes read every second.
 */
import type { EpisodeState } from '../src/domain/episode-state';
import type { EpisodeStore } from '../src/store/episode-store';
import { openTarget, type StoreTarget } from '../testkit/reliability';
import type { VendorEvent } from './vendors';

export class VendorClock {
  private count = 0;
  private readonly jobs = new Set<string>();
  private readonly listeners = new Set<(e: VendorEvent) => void>();
  private waiters: { n: number; resolve: () => void }[] = [];
  private readonly onTick: (n: number) => void;

  constructor(onTick: (n: number) => void) {
    this.onTick = onTick;
  }

  /** Every simulator's `onRequest`. A job not seen before that a vendor accepted (answered or not) ticks the clock. */
  readonly observe = (e: VendorEvent): void => {
    for (const l of [...this.listeners]) l(e);
    const job = `${e.adapter}:${e.jobId}`;
    if (!e.accepted || e.jobId === null || this.jobs.has(job)) return;
    this.jobs.add(job);
    this.count += 1;
    this.waiters = this.waiters.filter((w) => (w.n <= this.count ? (w.resolve(), false) : true));
    this.onTick(this.count);
  };

  accepted(): number {
    return this.count;
  }

  until(n: number): Promise<void> {
    if (n <= this.count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  on(listener: (e: VendorEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The campaign is over: whatever still waits for the clock is released. */
  release(): void {
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }
}

/** The store's episodes, re-read every second; the last good read stays while the store is down. */
export class StoreSnapshot {
  episodes: EpisodeState[] = [];
  /** Episodes ever seen waiting for a decision or completed (the wave pacing's "video and cover done"). */
  readonly reachedReview = new Set<string>();
  /** Episodes with a step parked for the operator, and since when (cleared once none is). */
  private readonly parkedAt = new Map<string, number>();
  private store: EpisodeStore | undefined;
  private storeKey = '';
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly target: () => StoreTarget) {}

  start(): void {
    const tick = async () => {
      await this.refresh();
      if (!this.stopped) this.timer = setTimeout(() => void tick(), 1_000);
    };
    void tick();
  }

  async refresh(): Promise<void> {
    const target = this.target();
    const key = JSON.stringify(target);
    if (key !== this.storeKey) {
      await this.store?.close().catch(() => undefined);
      this.store = openTarget(target);
      this.storeKey = key;
    }
    try {
      this.episodes = await this.store!.listEpisodes();
      for (const e of this.episodes) {
        if (e.status === 'awaiting_approval' || e.status === 'completed') this.reachedReview.add(e.episode_id);
        const parked = Object.values(e.steps).some((s) => s.status === 'needs_reconciliation');
        if (!parked) this.parkedAt.delete(e.episode_id);
        else if (!this.parkedAt.has(e.episode_id)) this.parkedAt.set(e.episode_id, Date.now());
      }
    } catch {
      // A restore or a restart under way: keep the last good read.
    }
  }

  byKey(key: string): EpisodeState | undefined {
    return this.episodes.find((e) => e.allocation_key === key);
  }

  /** How long the episode has had a step parked for the operator (0 when none is). */
  parkedFor(episodeId: string): number {
    const at = this.parkedAt.get(episodeId);
    return at === undefined ? 0 : Date.now() - at;
  }

  unfinished(): string[] {
    return this.episodes.filter((e) => e.status !== 'completed').map((e) => e.episode_id);
  }

  awaiting(): string[] {
    return this.episodes.filter((e) => e.status === 'awaiting_approval').map((e) => e.episode_id);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.store?.close().catch(() => undefined);
  }
}
