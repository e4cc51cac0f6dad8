/** Checks of a file store's tree used by the storage-fault, path-safety and permission tests. */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { z } from 'zod';
import { episodeStateSchema, historyEntrySchema } from '../src/domain/episode-state';
import { FileEpisodeStore, keyIndexSchema, weekIndexSchema } from '../src/store/file-store';

export interface TreeEntry {
  rel: string;
  kind: 'file' | 'dir' | 'symlink' | 'other';
  mode: number;
}

/** Every entry below `root` (not following symlinks), sorted. */
export async function listTree(root: string): Promise<TreeEntry[]> {
  const out: TreeEntry[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await fs.readdir(dir)).sort()) {
      const p = path.join(dir, name);
      const st = await fs.lstat(p);
      const kind = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
      out.push({ rel: path.relative(root, p), kind, mode: st.mode & 0o7777 });
      if (kind === 'dir') await walk(p);
    }
  };
  await walk(root);
  return out;
}

/** Which schema a store file must satisfy, by where it lives; `undefined` for a file the store never writes. */
function schemaFor(rel: string): z.ZodType | undefined {
  const parts = rel.split(path.sep);
  if (parts.length === 3 && parts[0] === 'index' && parts[1] === 'weeks' && parts[2]!.endsWith('.json')) {
    return weekIndexSchema;
  }
  if (parts.length === 3 && parts[0] === 'index' && parts[1] === 'keys' && parts[2]!.endsWith('.json')) {
    return keyIndexSchema;
  }
  if (parts.length === 3 && parts[0] === 'episodes' && parts[2] === 'state.json') return episodeStateSchema;
  if (parts.length === 2 && parts[0] === 'history' && parts[1]!.endsWith('.json')) return historyEntrySchema;
  return undefined;
}

/**
 * No temp file, no lock left behind, no half-written file: every file is a store file that parses completely with its
 * schema (media files under `episodes/<id>/media/` are allowed when `media` is set).
 */
export async function assertOnlyWholeStoreFiles(dataDir: string, options: { media?: boolean } = {}): Promise<void> {
  for (const e of await listTree(dataDir)) {
    assert.notEqual(e.rel, 'pipeline.lock', 'the pipeline lock was left behind');
    if (e.kind === 'dir') continue;
    assert.equal(e.kind, 'file', `${e.rel} is a ${e.kind}`);
    const parts = e.rel.split(path.sep);
    if (options.media && parts[0] === 'episodes' && parts[2] === 'media' && parts.length === 4) {
      assert.match(parts[3]!, /^[a-z]+-r\d+\.(mp4|png)$/, `unexpected media file ${e.rel}`);
      continue;
    }
    const schema = schemaFor(e.rel);
    assert.ok(schema, `unexpected file ${e.rel} (a temp file left behind?)`);
    const text = await fs.readFile(path.join(dataDir, e.rel), 'utf8');
    let json: unknown;
    assert.doesNotThrow(() => (json = JSON.parse(text)), `${e.rel} is not whole JSON: ${text.slice(-40)}`);
    const parsed = schema.safeParse(json);
    assert.ok(parsed.success, `${e.rel} does not match its schema`);
  }
}

/** The allocation invariants, read through the store: contiguous sequences per week, one episode per key. */
export async function assertAllocationInvariants(dataDir: string): Promise<{ id: string; key: string | null }[]> {
  const store = new FileEpisodeStore(dataDir);
  const episodes = await store.listEpisodes();
  const byWeek = new Map<string, number[]>();
  for (const e of episodes) byWeek.set(e.week_id, [...(byWeek.get(e.week_id) ?? []), e.sequence]);
  for (const [week, seqs] of byWeek) assert.deepEqual(seqs, [...seqs.keys()], `sequences of ${week}`);
  const keys = episodes.map((e) => e.allocation_key).filter((k) => k !== null);
  assert.equal(new Set(keys).size, keys.length, 'a key owns more than one episode');
  return episodes.map((e) => ({ id: e.episode_id, key: e.allocation_key }));
}
