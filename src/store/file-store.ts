/**
 * The embedded default store: plain files under a data directory.
 *
 *   <data>/pipeline.lock/                 the pipeline lock (allocations; pipeline-lock.ts)
 *   <data>/index/keys/<sha256(key)>.json  which episodes a key points at (written before the commit, so a key is
 *                                         never missed across weeks)
 *   <data>/index/weeks/<week_id>.json     the week's episodes: THE COMMIT POINT of an allocation
 *   <data>/episodes/<episode_id>/state.json   live state; media files beside it
 *   <data>/episodes/<episode_id>/episode.lock/ the episode's lock (its bookkeeping writes)
 *   <data>/history/<episode_id>.json      completed history, one immutable entry per episode
 *
 * An allocation reads one key file and one week file, so its cost does not grow with the number of stored episodes.
 * An episode exists once its week index lists it; a key file entry without one is an uncommitted leftover of a
 * crashed allocation and is ignored, and a committed entry without a state file is rolled forward.
 *
 * Locks: a state file is only ever created under the pipeline lock (by the allocation, its roll-forward, or the first
 * update of an episode whose state is still missing) and only ever replaced under the episode's lock; it is never
 * removed. So an update of an episode whose state exists needs only the episode's lock: no allocation writes that file
 * any more, and allocations write nothing else an update reads or writes (index files, their temp files).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import {
  episodeIdSchema,
  episodeStateSchema,
  historyEntrySchema,
  type AllocatedBy,
  type EpisodeState,
  type HistoryEntry,
} from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import type { WeekId } from '../domain/week-id';
import { failpoint } from '../failpoints';
import { exists, fsyncDir } from '../files/durable-fs';
import type { AllocationClaim, AllocationRequest, AllocationResult, EpisodeStore } from './episode-store';
import { FileAllocator } from './file-allocation';
import { defaultDataDir, FileLayout, stateFromEntry } from './file-layout';
import { DirectoryLock, PipelineLock, type LockGuard } from './pipeline-lock';
import { lockOptionsFromEnv, type LockOptions } from './store-config';

export {
  defaultDataDir,
  keyIndexSchema,
  weekIndexSchema,
  type KeyIndex,
  type WeekIndex,
  type WeekIndexEntry,
} from './file-layout';

export function cliAllocatedBy(): AllocatedBy {
  return { kind: 'cli', hostname: os.hostname(), pid: process.pid, user: os.userInfo().username };
}

/** The file store: allocation (file-allocation.ts) and the records of one episode (here), on one layout. */
export class FileEpisodeStore extends FileLayout implements EpisodeStore {
  readonly lock: PipelineLock;
  private readonly lockOptions: LockOptions;
  private readonly allocator: FileAllocator;

  constructor(dataDir: string = defaultDataDir(), lockOptions: LockOptions = lockOptionsFromEnv()) {
    super(dataDir);
    this.lockOptions = lockOptions;
    this.lock = new PipelineLock(this.dataDir, lockOptions);
    this.allocator = new FileAllocator(this);
  }

  allocate(request: AllocationRequest): Promise<AllocationResult> {
    return this.allocator.allocate(request);
  }

  reassertAllocation(claim: AllocationClaim): Promise<AllocationResult> {
    return this.allocator.reassert(claim);
  }

  getEpisode(id: EpisodeId): Promise<EpisodeState | undefined> {
    return promised(() => this.episodeNow(id));
  }

  private episodeNow(id: EpisodeId): EpisodeState | undefined {
    const state = this.read(this.statePath(id), episodeStateSchema);
    if (state) {
      this.checkIdentity(id, state, this.statePath(id));
      return state;
    }
    // Committed but not yet rolled forward (the allocating process died after the commit): still exists.
    const { weekId } = parseEpisodeId(id);
    const entry = this.readWeekIndex(weekId).episodes.find((e) => e.episode_id === id);
    return entry ? stateFromEntry(weekId, entry) : undefined;
  }

  async requireEpisode(id: EpisodeId): Promise<EpisodeState> {
    const state = await this.getEpisode(id);
    if (!state) {
      throw new PipelineError(ErrorType.EpisodeNotFound, `episode ${id} does not exist in the ${this.description}`, {
        episodeId: id,
      });
    }
    return state;
  }

  async listEpisodes(filter: { weekId?: WeekId } = {}): Promise<EpisodeState[]> {
    const weeks = filter.weekId ? [filter.weekId] : await this.listWeeks();
    const states: EpisodeState[] = [];
    for (const weekId of weeks) {
      for (const entry of this.readWeekIndex(weekId).episodes) {
        states.push((await this.getEpisode(entry.episode_id)) ?? stateFromEntry(weekId, entry));
      }
    }
    return states.sort(compareEpisodes);
  }

  /**
   * From the names alone: an episode with a history file is completed, so only the others' states are read (and
   * parsed, and checked against their name). Their status decides, so a state completed but not yet in history (a
   * crash between completion's two writes) is still left out. An allocation committed in its week index whose
   * directory is not made yet (the allocator died in between) shows here once it is rolled forward.
   */
  async listUnfinishedEpisodes(): Promise<EpisodeState[]> {
    const completed = new Set(await this.list(path.join(this.dataDir, 'history')));
    const states: EpisodeState[] = [];
    for (const name of await this.list(path.join(this.dataDir, 'episodes'))) {
      if (completed.has(`${name}.json`)) continue;
      const id = episodeIdSchema.safeParse(name);
      const state = id.success ? await this.getEpisode(id.data) : undefined;
      if (state && state.status !== 'completed') states.push(state);
    }
    return states.sort(compareEpisodes);
  }

  async updateEpisode(id: EpisodeId, update: (state: EpisodeState) => EpisodeState): Promise<EpisodeState> {
    await this.ensureLayout();
    return this.withEpisodeLock(id, async (guard) => {
      const current = await this.requireEpisode(id);
      const next = episodeStateSchema.parse(update(structuredClone(current)));
      for (const field of ['episode_id', 'week_id', 'sequence', 'allocation_key', 'created_at'] as const) {
        if (next[field] !== current[field]) {
          throw new PipelineError(ErrorType.InvalidState, `refusing to change ${field} of episode ${id}`);
        }
      }
      guard.assertHeld();
      await this.mkdir(this.episodeDir(id));
      // An allocation leaves the directory's own entry unsynced (see allocate): sync it before the state in it
      // becomes worth keeping.
      await fsyncDir(this.inside(path.join(this.dataDir, 'episodes')));
      await this.write(this.statePath(id), next, guard);
      return next;
    });
  }

  async appendHistory(entry: HistoryEntry): Promise<void> {
    const parsed = historyEntrySchema.parse(entry);
    await this.ensureLayout();
    await this.withEpisodeLock(parsed.episode_id, async (guard) => {
      const file = this.historyPath(parsed.episode_id);
      const existing = this.read(file, historyEntrySchema);
      if (existing) {
        if (JSON.stringify(existing) === JSON.stringify(parsed)) return;
        throw new PipelineError(
          ErrorType.InvalidState,
          `history of ${parsed.episode_id} is already written (${file}) and differs; history is append-only`,
        );
      }
      await failpoint('completion.before-history');
      guard.assertHeld();
      await this.write(file, parsed, guard);
      await failpoint('completion.after-history');
    });
  }

  async listHistory(filter: { weekId?: WeekId } = {}): Promise<HistoryEntry[]> {
    const dir = path.join(this.dataDir, 'history');
    const names = await this.list(dir);
    const entries: HistoryEntry[] = [];
    for (const name of names.sort()) {
      if (!name.endsWith('.json')) continue;
      if (filter.weekId && !name.startsWith(`${filter.weekId}-`)) continue;
      const file = path.join(dir, name);
      const entry = this.read(file, historyEntrySchema);
      if (entry) entries.push(entry);
    }
    return entries.sort((a, b) => compareEpisodes(a, b));
  }

  async close(): Promise<void> {
    // Nothing held between calls: the lock is taken and released per operation.
  }

  // ---- internals ----

  /**
   * One episode's read-modify-write. Its lock lives in its directory; while its state file is missing (an episode
   * rolled forward from the index, or one that never existed) the pipeline lock is taken first, because creating the
   * state file is the allocation's business (see the header). Always pipeline, then episode: no lock order cycle.
   */
  private async withEpisodeLock<T>(id: EpisodeId, critical: (guard: LockGuard) => Promise<T>): Promise<T> {
    const episodeLock = () =>
      new DirectoryLock(this.inside(this.episodeLockPath(id)), `lock of ${id}`, this.lockOptions);
    if (exists(this.statePath(id))) return episodeLock().withLock(critical);
    return this.lock.withLock(async (pipeline) => {
      if (!exists(this.episodeDir(id))) return critical(pipeline);
      return episodeLock().withLock((episode) =>
        critical({
          assertHeld() {
            pipeline.assertHeld();
            episode.assertHeld();
          },
          // Committed out of the episode lock's fence: it is the lock of the records written here.
          commitPrefix(file) {
            pipeline.assertHeld();
            return episode.commitPrefix(file);
          },
        }),
      );
    });
  }
}

/** A synchronous read as the promise the store interface promises: a throw becomes a rejection. */
function promised<T>(read: () => T): Promise<T> {
  return new Promise((resolve) => resolve(read()));
}

function compareEpisodes(a: { week_id: string; sequence: number }, b: { week_id: string; sequence: number }): number {
  return a.week_id === b.week_id ? a.sequence - b.sequence : a.week_id < b.week_id ? -1 : 1;
}
