/**
 * Writes a file store's files directly, in exactly the on-disk format of src/store/file-store.ts (through its own path
 * functions and types), because 100,000 real allocations would take an hour of fsyncs. Nothing is fsynced while
 * seeding; one syncfs at the end, so that the measured allocations do not pay for flushing the seed.
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { DIR_MODE, FILE_MODE } from '../src/files/durable-fs';
import { FileEpisodeStore, type KeyIndex, type WeekIndex, type WeekIndexEntry } from '../src/store/file-store';
import type { SeedWeek } from './seed-data';

export async function seedFileStore(dataDir: string, weeks: readonly SeedWeek[]): Promise<FileEpisodeStore> {
  const store = new FileEpisodeStore(dataDir);
  for (const dir of ['index/weeks', 'index/keys', 'episodes', 'history']) {
    await fs.mkdir(path.join(store.dataDir, dir), { recursive: true, mode: DIR_MODE });
  }
  await forEachLimited(weeks, 16, async (week) => {
    const entries: WeekIndexEntry[] = [];
    for (const { state, history } of week.episodes) {
      entries.push({
        episode_id: state.episode_id,
        sequence: state.sequence,
        allocation_key: state.allocation_key,
        created_at: state.created_at,
        allocated_by: state.allocated_by,
      });
      const key = state.allocation_key!;
      await writeJson(store.keyIndexPath(key), {
        schema: 'key-index/v1',
        allocation_key: key,
        episodes: [{ episode_id: state.episode_id, week_id: week.weekId }],
      } satisfies KeyIndex);
      await fs.mkdir(store.episodeDir(state.episode_id), { mode: DIR_MODE });
      await writeJson(store.statePath(state.episode_id), state);
      if (history) await writeJson(store.historyPath(state.episode_id), history);
    }
    // Last, as in a real allocation: the week index is the commit point.
    await writeJson(store.weekIndexPath(week.weekId), {
      schema: 'week-index/v1',
      week_id: week.weekId,
      episodes: entries,
    } satisfies WeekIndex);
  });
  execFileSync('sync', ['-f', store.dataDir]);
  return store;
}

/** The store's own serialisation (writeJsonDurable): two-space JSON and a final newline, owner-only. */
async function writeJson(file: string, value: unknown): Promise<void> {
  await fs.writeFile(file, JSON.stringify(value, null, 2) + '\n', { mode: FILE_MODE });
}

export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}
