/**
 * The file store's layout (see file-store.ts for the tree): its index schemas, every path, and the one way each file is
 * read or written (inside the real data dir, durably). Shared by the allocation (file-allocation.ts) and the records of
 * one episode (file-store.ts).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { EpisodeId } from '../domain/episode-id';
import {
  allocatedBySchema,
  episodeIdSchema,
  initialState,
  weekIdSchema,
  type EpisodeState,
} from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import type { WeekId } from '../domain/week-id';
import { checkDataDir } from './data-dir-checks';
import {
  DIR_MODE,
  InsideGuard,
  ensureDirDurable,
  exists,
  jsonText,
  readJsonFile,
  stageFile,
  storageError,
  type StagedFile,
} from '../files/durable-fs';
import type { LockGuard } from './pipeline-lock';
import { storeEnvironment } from './store-config';

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

export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function defaultDataDir(): string {
  return storeEnvironment().dataDir;
}

export class FileLayout {
  readonly dataDir: string;
  private readonly guard: InsideGuard;
  private layoutReady = false;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
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

  // Every file access goes through these: a path must resolve inside the real data dir, so a symlink planted in it
  // (index/weeks, episodes/<id>, state.json, ...) cannot lead a read or a write elsewhere.
  inside(p: string): string {
    return this.guard.check(p);
  }
  read<S extends z.ZodType>(file: string, schema: S): z.output<S> | undefined {
    return readJsonFile(this.inside(file), schema);
  }
  /** A durable write under a lock, committed out of the holder's fence (lock-fence.ts). */
  async write(file: string, value: unknown, guard: LockGuard): Promise<void> {
    const staged = await this.stage(file, value, guard);
    await staged.flush();
    await staged.commit();
  }
  /**
   * The target is checked; the temp file is not: it is created with O_EXCL, which never follows a symlink, in the
   * holder's fence inside the lock directory, which the lock created 0700. Any failure once the lock has moved is
   * LockCompromised (retryable: the retry reads again under the lock), whatever errno the refusal came with.
   */
  async stage(file: string, value: unknown, guard: LockGuard): Promise<StagedFile> {
    const target = this.inside(file);
    const staged = await fenced(guard, () => stageFile(target, jsonText(value), guard.commitPrefix(target)));
    return {
      file: staged.file,
      flush: () => fenced(guard, () => staged.flush()),
      commit: (options) => fenced(guard, () => staged.commit(options)),
      discard: () => staged.discard(),
    };
  }
  async mkdir(dir: string): Promise<void> {
    await ensureDirDurable(this.inside(dir));
  }
  /**
   * mkdir without syncing its parent: only for a new episode's directory, whose loss a roll-forward repairs. Not
   * checked here: allocate has just refused any existing entry by that name and checked the state path within.
   */
  mkdirNow(dir: string): void {
    try {
      mkdirSync(dir, { mode: DIR_MODE });
    } catch (e) {
      throw storageError(`cannot create directory ${dir}`, e);
    }
  }
  async list(dir: string): Promise<string[]> {
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

  checkIdentity(id: EpisodeId, state: EpisodeState, file: string): void {
    if (state.episode_id !== id || `${state.week_id}-${state.sequence}` !== id) {
      throw new PipelineError(ErrorType.StoreCorrupt, `${file}: identity fields do not match ${id}`, { file });
    }
  }

  /**
   * Creates the layout the first time; afterwards only checks it, on every operation, so a directory replaced by a
   * symlink is refused at once. A directory removed under a running process is not created again: that would hand out
   * sequence 0 of a week once more. The first time, the data dir itself is checked too (data-dir-checks.ts).
   */
  async ensureLayout(): Promise<void> {
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

/** Runs one step of a fenced write; a failure after the lock moved is reported as the lock lost. */
async function fenced<T>(guard: LockGuard, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    guard.assertHeld();
    throw e;
  }
}

export function stateFromEntry(weekId: WeekId, entry: WeekIndexEntry): EpisodeState {
  return initialState(
    { episodeId: entry.episode_id, weekId, sequence: entry.sequence },
    entry.allocation_key,
    entry.allocated_by,
    entry.created_at,
  );
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw storageError(`cannot list ${dir}`, e);
  }
}
