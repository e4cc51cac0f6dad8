/**
 * Playable artifacts for the simulator: with ffmpeg on the machine, a video job yields a few seconds of a test pattern
 * (H.264 in MP4, which Chromium plays) and a cover job a PNG, both with the episode, step and round drawn on them, so a
 * reviewer can look at what they approve. Without ffmpeg (or if a render fails) the simulator keeps its synthetic
 * bytes, with one notice per process. Renders are deterministic (bit-exact flags, one thread): the same episode, step
 * and round give the same bytes on every run; they are kept in a small process-wide cache and run one at a time, so a
 * test suite with many simulators pays for each picture once and never loads both cores with encoders.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import type { JobKind } from '../vendor-api/api';

export interface RenderRequest {
  kind: JobKind;
  episodeId: string;
  /**
   * The review round the picture comes from: a step's own round, from its idempotency key (`<episode>:<step>:r<round>`),
   * and for an assembly the round of the cut it assembles (its `video_job`); null when that is not known.
   */
  round: number | null;
}

export interface MediaRenderer {
  /** The rendered artifact, or null: the caller then serves its synthetic bytes. */
  render(request: RenderRequest): Promise<Buffer | null>;
}

const RENDER_TIMEOUT_MS = 30_000;
const CACHE_LIMIT = 128;
const cache = new Map<string, Promise<Buffer | null>>();
const noticed = new Set<string>();
let queue: Promise<unknown> = Promise.resolve();

/** `ffmpeg` is looked up on PATH unless a path is given (the CLI and the demo pass EPISODES_SIM_FFMPEG). */
export function createMediaRenderer(options: { ffmpeg?: string; notice?: (line: string) => void } = {}): MediaRenderer {
  const ffmpeg = options.ffmpeg ?? 'ffmpeg';
  const notice = options.notice ?? ((line: string) => process.stderr.write(`vendor-sim: ${line}\n`));
  return {
    render(request) {
      const args = ffmpegArgs(request);
      const key = createHash('sha256')
        .update(JSON.stringify([ffmpeg, args]))
        .digest('hex');
      let rendered = cache.get(key);
      if (rendered === undefined) {
        rendered = serialized(() => runFfmpeg(ffmpeg, args)).catch((e: unknown) => {
          // One notice per ffmpeg and cause, not one per job: the fallback is expected on machines without it.
          const cause = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : 'failed';
          if (!noticed.has(`${ffmpeg}:${cause}`)) {
            noticed.add(`${ffmpeg}:${cause}`);
            notice(`ffmpeg ${cause} (${ffmpeg}): artifacts are synthetic bytes, not playable media`);
          }
          return null;
        });
        if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
        cache.set(key, rendered);
      }
      return rendered;
    },
  };
}

/** The round encoded in a step's idempotency key (src/domain/names.ts `idempotencyKey`), or null. */
export function roundOfClientRef(clientRef: string | null): number | null {
  const m = /:r(\d{1,4})$/.exec(clientRef ?? '');
  return m ? Number(m[1]) : null;
}

/** Only letters, digits, dash and space reach the filter graph: no escaping rules to get wrong. */
function caption(request: RenderRequest): string {
  const episode = request.episodeId.replace(/[^A-Za-z0-9-]/g, '_').slice(0, 40);
  const round = request.round ?? '-';
  // An assembly's own round counts assemblies (reassembly r1, r2); what it shows is the review round of its cut.
  return request.kind === 'assembly'
    ? `${episode}  assembly of round ${round}`
    : `${episode}  ${request.kind}  round ${round}`;
}

function ffmpegArgs(request: RenderRequest): string[] {
  const exact = ['-flags', '+bitexact', '-fflags', '+bitexact', '-map_metadata', '-1', '-threads', '1'];
  const text = (size: number, y: string) =>
    `drawtext=font=DejaVu Sans:text='${caption(request)}':fontsize=${size}:fontcolor=white:` +
    `box=1:boxcolor=black@0.6:boxborderw=6:x=(w-tw)/2:y=${y}`;
  if (request.kind === 'cover') {
    return [
      ...['-f', 'lavfi', '-i', 'color=c=0x1d3557:size=640x360'],
      ...['-vf', text(28, '(h-th)/2'), '-frames:v', '1', ...exact, '-c:v', 'png', '-f', 'image2'],
    ];
  }
  const seconds = request.kind === 'assembly' ? 4 : 3;
  return [
    ...['-f', 'lavfi', '-i', `testsrc2=size=320x180:rate=15:duration=${seconds}`, '-vf', text(16, '(h-th)/2')],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '32', '-pix_fmt', 'yuv420p', ...exact],
    ...['-movflags', '+faststart', '-f', 'mp4'],
  ];
}

/** MP4 needs a seekable output (faststart moves the index to the front), so ffmpeg writes a file in a private dir. */
async function runFfmpeg(ffmpeg: string, args: string[]): Promise<Buffer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'episodes-sim-media-'));
  const out = path.join(dir, 'artifact');
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(
        ffmpeg,
        ['-nostdin', '-hide_banner', '-loglevel', 'error', ...args, '-y', out],
        { timeout: RENDER_TIMEOUT_MS, maxBuffer: 64 * 1024 },
        (e: Error | null) => (e ? reject(e) : resolve()),
      );
    });
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function serialized<T>(work: () => Promise<T>): Promise<T> {
  const run = queue.then(work, work);
  queue = run.catch(() => undefined);
  return run;
}
