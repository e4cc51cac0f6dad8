/**
 * The desk's media: a file is served only when the episode's own state names it (a `media` record key such as
 * `video-r0`), resolved inside the episode's media directory, and a regular file, not a link. Nothing in a URL ever
 * becomes part of a path.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { EpisodeState } from '../domain/episode-state';
import type { EpisodeId } from '../domain/episode-id';
import type { EpisodeStore } from '../store/episode-store';
import { assertInside } from '../files/durable-fs';

/** A media record key: `video`, `cover` (the final ones) or `<step>-r<round>`. */
export const mediaKeySchema = z.string().regex(/^(video|cover|rework|assembly)(-r(0|[1-9]\d{0,3}))?$/);

const CONTENT_TYPES: Record<string, string> = { '.mp4': 'video/mp4', '.png': 'image/png' };

export interface ResolvedMedia {
  root: string;
  /** Relative to root, as recorded in the state. */
  relative: string;
  contentType: string;
  bytes: number;
}

/** The recorded file of `key`, or undefined when the state has none, or it escapes its directory, or is not a file. */
export async function resolveMedia(
  store: EpisodeStore,
  id: EpisodeId,
  state: EpisodeState,
  key: string,
): Promise<ResolvedMedia | undefined> {
  const record = Object.hasOwn(state.media, key) ? state.media[key] : undefined;
  if (record === undefined) return undefined;
  const root = store.mediaDir(id);
  const contentType = CONTENT_TYPES[path.extname(record.path)];
  if (contentType === undefined) return undefined;
  let file: string;
  try {
    file = assertInside(root, path.resolve(root, record.path));
    if (!(await fs.lstat(file)).isFile()) return undefined;
  } catch {
    return undefined;
  }
  return { root, relative: path.relative(root, file), contentType, bytes: record.bytes };
}

/** Whether the file holds real media (an MP4 `ftyp` box, a PNG signature) rather than the simulator's random bytes. */
export async function isPlayable(media: ResolvedMedia): Promise<boolean> {
  const head = Buffer.alloc(12);
  try {
    const handle = await fs.open(path.join(media.root, media.relative), 'r');
    try {
      await handle.read(head, 0, 12, 0);
    } finally {
      await handle.close();
    }
  } catch {
    return false;
  }
  if (media.contentType === 'image/png') return head.subarray(0, 8).equals(PNG_SIGNATURE);
  return head.subarray(4, 8).toString('latin1') === 'ftyp';
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
