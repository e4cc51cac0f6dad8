/** The physical floor of one allocation: a single durable atomic write of a state-sized file, with raw fs calls. */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { parseEpisodeId } from '../src/domain/episode-id';
import { fsyncDir, FILE_MODE } from '../src/files/durable-fs';
import { initialState } from '../src/domain/episode-state';

/** Exactly the bytes an allocation writes as the new episode's state.json. */
export function stateSizedPayload(): string {
  const { episodeId, weekId, sequence } = parseEpisodeId('2026-W32-3');
  const state = initialState(
    { episodeId, weekId, sequence },
    'weekly-media-2026-08-03T09:00:00Z',
    {
      kind: 'workflow',
      workflow_id: 'weekly-media-2026-08-03T09:00:00Z',
      run_id: '0196a5c2-7d1e-7c4b-9a43-5e2d1f0c8b7a',
      namespace: 'default',
    },
    '2026-08-03T09:00:01.234Z',
  );
  return JSON.stringify(state, null, 2) + '\n';
}

/** temp file, write, fsync, close, rename: the definition of the floor. */
export async function floorWrite(dir: string, data: string): Promise<void> {
  const tmp = path.join(dir, 'state.json.tmp');
  await writeSynced(tmp, data);
  await fs.rename(tmp, path.join(dir, 'state.json'));
}

async function writeSynced(file: string, data: string): Promise<void> {
  const handle = await fs.open(file, 'w', FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The same plus an fsync of the directory, without which the rename itself may not survive power loss. */
export async function floorWriteWithDirSync(dir: string, data: string): Promise<void> {
  await floorWrite(dir, data);
  await fsyncDir(dir);
}

/**
 * The file store's commit protocol and nothing else, with the floor's own calls: three temp files (key index, week
 * index, state) written and fsynced together; the key file renamed and its directory fsynced (durable before the
 * commit); the week index renamed and its directory fsynced (the commit); a new directory and the state renamed into
 * it. No lock, no reads, no checks: what any implementation of this protocol pays on this disk. `dir` holds `keys/`,
 * `weeks/` and `episodes/` already.
 */
export async function protocolFloorWrite(dir: string, round: number, data: string): Promise<void> {
  const keys = path.join(dir, 'keys');
  const weeks = path.join(dir, 'weeks');
  const episode = path.join(dir, 'episodes', `e${round}`);
  const temps = [path.join(keys, `k${round}.tmp`), path.join(weeks, 'week.tmp'), path.join(weeks, `s${round}.tmp`)];
  await Promise.all(temps.map((temp) => writeSynced(temp, data)));
  await fs.rename(temps[0]!, path.join(keys, `k${round}.json`));
  await fsyncDir(keys);
  await fs.rename(temps[1]!, path.join(weeks, 'week.json'));
  await fsyncDir(weeks);
  await fs.mkdir(episode);
  await fs.rename(temps[2]!, path.join(episode, 'state.json'));
}
