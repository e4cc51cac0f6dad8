/**
 * The desk's media: a file is served only when the episode's own state names it (a `media` record key such as
 * `video-r0`), and it is opened once: without following a symlink (O_NOFOLLOW), checked on that descriptor (a regular
 * file, and, on Linux, really inside the episode's media directory: /proc/self/fd tells where the opened file is),
 * then read and streamed from that same descriptor. A link swapped in after a check has nothing to race: there is no
 * second open by path. Nothing in a URL ever becomes part of a path.
 */
import { constants, promises as fs, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import parseRange from 'range-parser';
import { z } from 'zod';
import type { EpisodeState } from '../domain/episode-state';
import type { EpisodeId } from '../domain/episode-id';
import type { EpisodeStore } from '../store/episode-store';

/** A media record key: `video`, `cover` (the final ones) or `<step>-r<round>`. */
export const mediaKeySchema = z.string().regex(/^(video|cover|rework|assembly)(-r(0|[1-9]\d{0,3}))?$/);

const CONTENT_TYPES: Record<string, string> = { '.mp4': 'video/mp4', '.png': 'image/png' };

export interface OpenedMedia {
  handle: FileHandle;
  stat: Stats;
  contentType: string;
}

/** The recorded file of `key`, opened; undefined when the state has none, it is a link, not a file, or outside. */
export async function openMedia(
  store: EpisodeStore,
  id: EpisodeId,
  state: EpisodeState,
  key: string,
): Promise<OpenedMedia | undefined> {
  const record = Object.hasOwn(state.media, key) ? state.media[key] : undefined;
  const contentType = record === undefined ? undefined : CONTENT_TYPES[path.extname(record.path)];
  if (record === undefined || contentType === undefined) return undefined;
  const root = path.resolve(store.mediaDir(id));
  const file = path.resolve(root, record.path);
  if (!isInside(root, file)) return undefined;
  let handle: FileHandle;
  try {
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    if (stat.isFile() && (await openedInside(handle, root, file))) return { handle, stat, contentType };
  } catch {
    // closed below
  }
  await handle.close();
  return undefined;
}

/** Where the descriptor really is, from the kernel (Linux); elsewhere, the real path of the directory it was in. */
async function openedInside(handle: FileHandle, root: string, file: string): Promise<boolean> {
  const realRoot = await fs.realpath(root);
  let real: string;
  try {
    real = await fs.readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    real = path.join(await fs.realpath(path.dirname(file)), path.basename(file));
  }
  return isInside(realRoot, real);
}

function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** Whether the file holds real media (an MP4 `ftyp` box, a PNG signature) rather than the simulator's random bytes. */
export async function isPlayable(media: OpenedMedia): Promise<boolean> {
  const head = Buffer.alloc(12);
  await media.handle.read(head, 0, 12, 0);
  if (media.contentType === 'image/png') return head.subarray(0, 8).equals(PNG_SIGNATURE);
  return head.subarray(4, 8).toString('latin1') === 'ftyp';
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export type MediaResponse =
  | { status: 200 | 206; headers: Record<string, string>; body: Readable }
  | { status: 416; headers: Record<string, string>; body: null };

/**
 * The response for a GET with this Range header, streamed from the opened descriptor (which the stream closes). One
 * range is answered with 206; several are answered with the whole file (200), as RFC 9110 allows.
 */
export function mediaResponse(media: OpenedMedia, range: string | undefined): MediaResponse {
  const size = media.stat.size;
  const headers = { 'content-type': media.contentType, 'accept-ranges': 'bytes' };
  const ranges = range === undefined ? undefined : parseRange(size, range, { combine: true });
  if (ranges === -1) {
    void media.handle.close();
    return { status: 416, headers: { ...headers, 'content-range': `bytes */${size}` }, body: null };
  }
  if (Array.isArray(ranges) && ranges.type === 'bytes' && ranges.length === 1) {
    const { start, end } = ranges[0]!;
    return {
      status: 206,
      headers: {
        ...headers,
        'content-range': `bytes ${start}-${end}/${size}`,
        'content-length': String(end - start + 1),
      },
      body: media.handle.createReadStream({ start, end }),
    };
  }
  return {
    status: 200,
    headers: { ...headers, 'content-length': String(size) },
    body: media.handle.createReadStream(),
  };
}
