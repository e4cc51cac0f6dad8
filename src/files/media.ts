/** Read-only checks of recorded media files: used by `episodes verify` and by the migration pre-flight. */
import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ProblemCode, problem, type Problem } from '../domain/problem';

export interface RecordedMedia {
  path: string;
  sha256: string;
  bytes: number;
}

export function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Media paths are recorded relative to the episode directory. `undefined` for a path that is absolute, empty or
 * leaves that directory: such a path is never opened.
 */
export function resolveInside(baseDir: string, relative: string): string | undefined {
  if (relative.length === 0 || relative.includes('\u0000') || path.isAbsolute(relative)) return undefined;
  const resolved = path.resolve(baseDir, relative);
  const rel = path.relative(baseDir, resolved);
  if (rel.length === 0 || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return undefined;
  return resolved;
}

/** Presence, kind (a regular file, not a link), size and sha256 of one recorded media file. */
export async function checkMediaFile(
  baseDir: string,
  name: string,
  recorded: RecordedMedia,
  episodeId: string,
): Promise<Problem[]> {
  const where = { episode_id: episodeId };
  const file = resolveInside(baseDir, recorded.path);
  if (file === undefined) {
    return [
      problem(
        ProblemCode.MediaPathInvalid,
        `media ${name}: path ${JSON.stringify(recorded.path)} is not inside ${baseDir}`,
        { ...where, file: baseDir },
      ),
    ];
  }
  let stat;
  try {
    stat = await fs.lstat(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return [problem(ProblemCode.MediaMissing, `media ${name}: cannot stat (${code ?? String(e)})`, { ...where, file })];
  }
  if (!stat.isFile()) {
    return [problem(ProblemCode.MediaNotRegularFile, `media ${name}: not a regular file`, { ...where, file })];
  }
  const problems: Problem[] = [];
  if (stat.size !== recorded.bytes) {
    problems.push(
      problem(ProblemCode.MediaSizeMismatch, `media ${name}: ${stat.size} bytes, recorded ${recorded.bytes}`, {
        ...where,
        file,
      }),
    );
  }
  let actual: string;
  try {
    actual = await sha256OfFile(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return [problem(ProblemCode.MediaMissing, `media ${name}: cannot read (${code ?? String(e)})`, { ...where, file })];
  }
  if (actual !== recorded.sha256) {
    problems.push(
      problem(ProblemCode.MediaHashMismatch, `media ${name}: sha256 ${actual}, recorded ${recorded.sha256}`, {
        ...where,
        file,
      }),
    );
  }
  return problems;
}
