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
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { decideAllocation, type StoredEpisodeRef } from '../domain/allocation';
import type { AllocationKey } from '../domain/allocation-key';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import {
  allocatedBySchema,
  episodeIdSchema,
  episodeStateSchema,
  historyEntrySchema,
  initialState,
  weekIdSchema,
  type AllocatedBy,
  type EpisodeState,
  type HistoryEntry,
} from '../domain/episode-state';
import { PipelineError } from '../domain/errors';
import type { WeekId } from '../domain/week-id';
import { failpoint } from '../failpoints';
import { ErrorType } from '../shared';
import {
  DIR_MODE,
  InsideGuard,
  ensureDirDurable,
  exists,
  fsyncDir,
  jsonText,
  readJsonFile,
  stageFile,
  storageError,
  writeJsonDurable,
  type StagedFile,
} from '../files/durable-fs';
import { checkDataDir } from './data-dir-checks';
import type { AllocationRequest, AllocationResult, EpisodeStore } from './episode-store';
import { DirectoryLock, PipelineLock, type LockGuard } from './pipeline-lock';
import { lockOptionsFromEnv, storeEnvironment, type LockOptions } from './store-config';

export const weekIndexEntrySchema = z.strictObject({
  episode_id: episodeIdSchema,
  sequence: z.number().int().nonnegative(),
  allocation_key: z.string().nullable(),
  created_at: z.iso.datetime({ offset: true }),
  allocated_by: allocatedBySchema,
});
export type WeekIndexEntry = z.infer<typeof weekIndexEntrySchema>;

export const weekIndexSchema = z.strictObject({
  schema: z.literal('week-index/v1'),
  week_id: weekIdSchema,
  episodes: z.array(weekIndexEntrySchema),
});
export type WeekIndex = z.infer<typeof weekIndexSchema>;

export const keyIndexSchema = z.strictObject({
  schema: z.literal('key-index/v1'),
  allocation_key: z.string(),
  episodes: z.array(z.strictObject({ episode_id: episodeIdSchema, week_id: weekIdSchema })),
});
export type KeyIndex = z.infer<typeof keyIndexSchema>;

/** An allocation's new episode, decided but not yet written. */
interface NewEpisode {
  weekId: WeekId;
  key: AllocationKey;
  entry: WeekIndexEntry;
  keyIndex: KeyIndex;
  weekIndex: WeekIndex;
}

export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function defaultDataDir(): string {
  return storeEnvironment().dataDir;
}

export function cliAllocatedBy(): AllocatedBy {
  return { kind: 'cli', hostname: os.hostname(), pid: process.pid, user: os.userInfo().username };
}

export class FileEpisodeStore implements EpisodeStore {
  readonly dataDir: string;
  readonly lock: PipelineLock;
  private readonly lockOptions: LockOptions;
  private readonly guard: InsideGuard;
  private layoutReady = false;
  private tempsSwept = false;

  constructor(dataDir: string = defaultDataDir(), lockOptions: LockOptions = lockOptionsFromEnv()) {
    this.dataDir = path.resolve(dataDir);
    this.lockOptions = lockOptions;
    this.lock = new PipelineLock(this.dataDir, lockOptions);
    this.guard = new InsideGuard(this.dataDir);
  }

  get description(): string {
    return `file store at ${this.dataDir}`;
  }

  // ---- paths (only ever built from parsed ids, so nothing can point outside the data dir) ----
  weekIndexPath(weekId: WeekId): string {
    return path.join(this.dataDir, 'index', 'weeks', `${weekId}.json`);
  }
  keyIndexPath(key: string): string {
    return path.join(this.dataDir, 'index', 'keys', `${keyDigest(key)}.json`);
  }
  episodeDir(id: EpisodeId): string {
    return path.join(this.dataDir, 'episodes', id);
  }
  statePath(id: EpisodeId): string {
    return path.join(this.episodeDir(id), 'state.json');
  }
  historyPath(id: EpisodeId): string {
    return path.join(this.dataDir, 'history', `${id}.json`);
  }
  episodeLockPath(id: EpisodeId): string {
    return path.join(this.episodeDir(id), 'episode.lock');
  }
  /** Media paths recorded in state are relative to the episode's directory (`media/final.mp4`). */
  mediaDir(id: EpisodeId): string {
    return this.episodeDir(id);
  }

  /** Under the pipeline lock: read, decide, and (for a new episode) commit, as one critical section. */
  async allocate(request: AllocationRequest): Promise<AllocationResult> {
    await this.ensureLayout();
    return this.lock.withLock(async (guard) => {
      await this.sweepLeftoverTemps();
      const { result, created } = await this.decide(request, guard);
      if (created) await this.commitAllocation(created, guard);
      return result;
    });
  }

  /** The request's decision against the store; a new episode is only planned here (see commitAllocation). */
  private async decide(
    request: AllocationRequest,
    guard: LockGuard,
  ): Promise<{ result: AllocationResult; created?: NewEpisode }> {
    const { allocationKey: key, weekId } = request;
    const weekIndex = this.readWeekIndex(weekId);
    const keyMatches = this.committedKeyMatches(key, this.readKeyIndex(key), weekIndex, (id) => this.readWeekIndex(id));
    const decision = decideAllocation({
      key,
      weekId,
      keyMatches,
      weekEpisodes: weekIndex.episodes.map((e) => toRef(weekId, e)),
    });
    await this.rollForward(weekIndex, guard);

    if (decision.kind === 'existing') {
      const entry = weekIndex.episodes.find((e) => e.episode_id === decision.episode.episodeId);
      if (entry) await this.ensureState(weekId, entry, guard);
      return { result: { ...identityOf(decision.episode), created: false } };
    }

    const entry: WeekIndexEntry = {
      episode_id: decision.episodeId,
      sequence: decision.sequence,
      allocation_key: key,
      created_at: new Date().toISOString(),
      allocated_by: request.allocatedBy,
    };
    if (exists(this.episodeDir(decision.episodeId))) {
      throw new PipelineError(
        ErrorType.StoreCorrupt,
        `${this.episodeDir(decision.episodeId)} exists but ${this.weekIndexPath(weekId)} does not list it; ` +
          'refusing to overwrite (run `episodes verify`)',
        { episodes: [decision.episodeId] },
      );
    }
    const keyIndex: KeyIndex = {
      schema: 'key-index/v1',
      allocation_key: key,
      episodes: [
        ...keyMatches.map((m) => ({ episode_id: m.episodeId, week_id: m.weekId })),
        { episode_id: decision.episodeId, week_id: weekId },
      ],
    };
    const weekAfter: WeekIndex = { ...weekIndex, episodes: [...weekIndex.episodes, entry] };
    return {
      result: { episodeId: decision.episodeId, weekId, sequence: decision.sequence, created: true },
      created: { weekId, key, entry, keyIndex, weekIndex: weekAfter },
    };
  }

  /**
   * Writes a new episode. Its three files are staged (key file, week index, state, so failpoints count them in that
   * order) and flushed together, then committed in order.
   */
  private async commitAllocation(created: NewEpisode, guard: LockGuard): Promise<void> {
    await failpoint('allocation.decided');
    const { weekId, key, entry } = created;
    const staged: StagedFile[] = [];
    try {
      const keyFile = await this.stage(this.keyIndexPath(key), created.keyIndex);
      staged.push(keyFile);
      const weekFile = await this.stage(this.weekIndexPath(weekId), created.weekIndex);
      staged.push(weekFile);
      // A state's directory does not exist before the commit: its temp file waits in the index directory.
      const temp = path.join(this.dataDir, 'index', 'weeks', `${entry.episode_id}.state`);
      const stateFile = await this.stage(this.statePath(entry.episode_id), stateFromEntry(weekId, entry), temp);
      staged.push(stateFile);
      await Promise.all(staged.map((f) => f.flush()));
      // 1. The key file first, so that from the commit on the key can be found from any week.
      guard.assertHeld();
      await keyFile.commit();
      await failpoint('allocation.key-written');
      // 2. The commit point.
      guard.assertHeld();
      await weekFile.commit();
      await failpoint('allocation.index-written');
      // 3. The episode's directory and state. The bytes are already on disk; the new directory entries are not synced,
      // because losing them to a power cut loses nothing: a committed episode without its state file is rolled
      // forward from the index (and the first change of the episode syncs them, see updateEpisode).
      this.mkdirNow(this.episodeDir(entry.episode_id));
      await stateFile.commit({ syncDir: false });
    } catch (e) {
      await Promise.all(staged.map((f) => f.discard()));
      throw e;
    }
    await failpoint('allocation.state-written');
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
      await this.write(this.statePath(id), next);
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
      await this.write(file, parsed);
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
        }),
      );
    });
  }

  // Every file access goes through these: a path must resolve inside the real data dir, so a symlink planted in it
  // (index/weeks, episodes/<id>, state.json, ...) cannot lead a read or a write elsewhere.
  private inside(p: string): string {
    return this.guard.check(p);
  }
  private read<S extends z.ZodType>(file: string, schema: S): z.output<S> | undefined {
    return readJsonFile(this.inside(file), schema);
  }
  private async write(file: string, value: unknown): Promise<void> {
    await writeJsonDurable(this.inside(file), value);
  }
  /**
   * The target is checked; a temp file is not: it is created with O_EXCL, which never follows a symlink, in a
   * directory checked already (the target's own, or for a new episode's state the week index's, checked just before).
   */
  private async stage(file: string, value: unknown, tempPrefix?: string): Promise<StagedFile> {
    const target = this.inside(file);
    return stageFile(target, jsonText(value), tempPrefix ?? target);
  }
  private async mkdir(dir: string): Promise<void> {
    await ensureDirDurable(this.inside(dir));
  }
  /**
   * mkdir without syncing its parent: only for a new episode's directory, whose loss a roll-forward repairs. Not
   * checked here: allocate has just refused any existing entry by that name and checked the state path within.
   */
  private mkdirNow(dir: string): void {
    try {
      mkdirSync(dir, { mode: DIR_MODE });
    } catch (e) {
      throw storageError(`cannot create directory ${dir}`, e);
    }
  }
  private async list(dir: string): Promise<string[]> {
    return readdirOrEmpty(this.inside(dir));
  }

  async listWeeks(): Promise<WeekId[]> {
    const dir = path.join(this.dataDir, 'index', 'weeks');
    const names = await this.list(dir);
    return names
      .filter((n) => n.endsWith('.json'))
      .map((n) => {
        const week = weekIdSchema.safeParse(n.slice(0, -'.json'.length));
        if (week.success) return week.data;
        const file = path.join(dir, n);
        throw new PipelineError(ErrorType.StoreCorrupt, `${file}: not named after an ISO week`, { file });
      })
      .sort();
  }

  readWeekIndex(weekId: WeekId): WeekIndex {
    const file = this.weekIndexPath(weekId);
    const index = this.read(file, weekIndexSchema);
    if (!index) return { schema: 'week-index/v1', week_id: weekId, episodes: [] };
    if (index.week_id !== weekId) {
      throw new PipelineError(ErrorType.StoreCorrupt, `${file}: holds week ${index.week_id}`, { file });
    }
    return index;
  }

  private readKeyIndex(key: AllocationKey): KeyIndex | undefined {
    const file = this.keyIndexPath(key);
    const index = this.read(file, keyIndexSchema);
    if (index && index.allocation_key !== key) {
      throw new PipelineError(ErrorType.StoreCorrupt, `${file}: belongs to another allocation key`, { file });
    }
    return index;
  }

  /** Key-file entries confirmed by their week's index; the rest are leftovers of allocations that never committed. */
  private committedKeyMatches(
    key: AllocationKey,
    keyIndex: KeyIndex | undefined,
    targetWeek: WeekIndex,
    weekOf: (weekId: WeekId) => WeekIndex,
  ): StoredEpisodeRef[] {
    const refs: StoredEpisodeRef[] = [];
    for (const hint of keyIndex?.episodes ?? []) {
      const week = hint.week_id === targetWeek.week_id ? targetWeek : weekOf(hint.week_id);
      const entry = week.episodes.find((e) => e.episode_id === hint.episode_id);
      if (entry && entry.allocation_key === key) refs.push(toRef(week.week_id, entry));
    }
    return refs;
  }

  /**
   * Committed allocations whose process died before their state files were written: an allocation writes its state
   * right after its commit, and a week only grows once its entries all have states (this runs first), so after a
   * crashed process only a trailing run of entries can lack one (one entry; several from a version that batched). One read when nothing is missing. (After a power cut
   * an earlier entry's unsynced state can be missing too: it is read from the index, and written by the first update
   * of that episode or the next allocation of its key, as before.)
   */
  private async rollForward(weekIndex: WeekIndex, guard: LockGuard): Promise<void> {
    for (const entry of [...weekIndex.episodes].reverse()) {
      if (!(await this.ensureState(weekIndex.week_id, entry, guard))) return;
    }
  }

  /** Writes the entry's state if it is missing (true), else checks the one there (false). */
  private async ensureState(weekId: WeekId, entry: WeekIndexEntry, guard: LockGuard): Promise<boolean> {
    const file = this.statePath(entry.episode_id);
    const state = this.read(file, episodeStateSchema);
    if (state) {
      this.checkIdentity(entry.episode_id, state, file);
      if (state.allocation_key !== entry.allocation_key) {
        throw new PipelineError(
          ErrorType.StoreCorrupt,
          `${file}: allocation key differs from ${this.weekIndexPath(weekId)}`,
          { file },
        );
      }
      return false;
    }
    guard.assertHeld();
    await this.mkdir(this.episodeDir(entry.episode_id));
    await this.write(file, stateFromEntry(weekId, entry));
    return true;
  }

  /**
   * Removes the `.tmp` files that killed writers left in the index directories, once per store object, under the
   * lock. Every write there happens under the lock and ends in a rename or a removal of its temp file, so a temp file
   * seen while holding the lock belongs to nobody. Once, because listing every week's index on every allocation would
   * make its cost grow with history.
   */
  private async sweepLeftoverTemps(): Promise<void> {
    if (this.tempsSwept) return;
    for (const dir of ['index/keys', 'index/weeks'].map((d) => path.join(this.dataDir, d))) {
      for (const name of await this.list(dir)) {
        if (name.endsWith('.tmp')) rmSync(path.join(dir, name), { force: true });
      }
    }
    this.tempsSwept = true;
  }

  private checkIdentity(id: EpisodeId, state: EpisodeState, file: string): void {
    if (state.episode_id !== id || `${state.week_id}-${state.sequence}` !== id) {
      throw new PipelineError(ErrorType.StoreCorrupt, `${file}: identity fields do not match ${id}`, { file });
    }
  }

  /**
   * Creates the layout the first time; afterwards only checks it, on every operation, so a directory replaced by a
   * symlink is refused at once. A directory removed under a running process is not created again: that would hand out
   * sequence 0 of a week once more. The first time, the data dir itself is checked too (data-dir-checks.ts).
   */
  private async ensureLayout(): Promise<void> {
    try {
      if (!this.layoutReady) {
        await ensureDirDurable(this.dataDir);
        await checkDataDir(this.dataDir);
      }
      for (const dir of ['index/weeks', 'index/keys', 'episodes', 'history']) {
        const p = this.inside(path.join(this.dataDir, dir));
        if (!this.layoutReady) await ensureDirDurable(p);
        else if (!exists(p)) {
          throw new PipelineError(
            ErrorType.StorageFailure,
            `${p} has disappeared since this process created or found it; not creating it again (restore it)`,
            { file: p },
          );
        }
      }
    } catch (e) {
      if (e instanceof PipelineError) throw e;
      throw storageError(`cannot prepare data dir ${this.dataDir}`, e);
    }
    this.layoutReady = true;
  }
}

/** A synchronous read as the promise the store interface promises: a throw becomes a rejection. */
function promised<T>(read: () => T): Promise<T> {
  return new Promise((resolve) => resolve(read()));
}

function toRef(weekId: WeekId, e: WeekIndexEntry): StoredEpisodeRef {
  return { episodeId: e.episode_id, weekId, sequence: e.sequence, allocationKey: e.allocation_key };
}

function identityOf(ref: StoredEpisodeRef): Omit<AllocationResult, 'created'> {
  return { episodeId: ref.episodeId, weekId: ref.weekId, sequence: ref.sequence };
}

function stateFromEntry(weekId: WeekId, entry: WeekIndexEntry): EpisodeState {
  return initialState(
    { episodeId: entry.episode_id, weekId, sequence: entry.sequence },
    entry.allocation_key,
    entry.allocated_by,
    entry.created_at,
  );
}

function compareEpisodes(a: { week_id: string; sequence: number }, b: { week_id: string; sequence: number }): number {
  return a.week_id === b.week_id ? a.sequence - b.sequence : a.week_id < b.week_id ? -1 : 1;
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw storageError(`cannot list ${dir}`, e);
  }
}
