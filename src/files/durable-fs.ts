/**
 * Durable file primitives. Every write is temp file + fsync + rename followed by an fsync of the directory, so a crash
 * or a full disk leaves either the old or the new file, never a torn one, and the rename survives power loss.
 *
 * Only the calls that wait for the device (fsync, and writes of large files) run on libuv's thread pool. The rest
 * (open, small writes, rename, stat, realpath, reading small JSON) are synchronous: each is a few microseconds of
 * kernel work, while a trip through the thread pool costs tens of microseconds, and a store operation makes dozens of
 * them (the same reasoning as better-sqlite3's synchronous API). The event loop is never held for a device flush.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { z } from 'zod';
import { PipelineError, isPipelineError, ErrorType } from '../domain/errors';
import { unexpectedContent } from '../domain/zod-issue';
import { failpoint } from '../failpoints';

/** State and index files hold episode records and ledgers: owner-only. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

/** Writes up to this size are made synchronously; larger ones (media) go through the thread pool. */
const SYNC_WRITE_LIMIT = 256 * 1024;

function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (e) => (e ? reject(e) : resolve())));
}

function writeFd(fd: number, bytes: Buffer, at: number, length: number): Promise<number> {
  return new Promise((resolve, reject) => fs.write(fd, bytes, at, length, at, (e, n) => (e ? reject(e) : resolve(n))));
}

export async function fsyncDir(dir: string): Promise<void> {
  const fd = fs.openSync(dir, fs.constants.O_RDONLY);
  try {
    await fsyncFd(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** mkdir -p, then fsync every parent whose entry list changed, so the new directory survives a crash. */
export async function ensureDirDurable(dir: string): Promise<void> {
  try {
    const missing: string[] = [];
    for (let d = path.resolve(dir); ; d = path.dirname(d)) {
      if (fs.statSync(d, { throwIfNoEntry: false })) break;
      missing.unshift(d);
      if (path.dirname(d) === d) break;
    }
    for (const d of missing) {
      try {
        fs.mkdirSync(d, { mode: DIR_MODE });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      await fsyncDir(path.dirname(d));
    }
  } catch (e) {
    throw isPipelineError(e) ? e : storageError(`cannot create directory ${dir}`, e);
  }
}

/**
 * Temp file beside the target (never a `.json` name, so readers skip it), every byte written, fsync, rename, fsync of
 * the directory. On failure the temp file is removed and the target is untouched. Not write-file-atomic: it ignores a
 * short write, and a full disk then renamed a truncated file over the good one.
 */
export async function writeFileDurable(file: string, data: string | Buffer): Promise<void> {
  const staged = await stageFile(file, data);
  await staged.flush();
  await staged.commit();
}

/**
 * A durable write in two halves, so that several files can be flushed together and then committed in a chosen order:
 * `stageFile` writes every byte to a temp file (beside the target, or at `tempPrefix`, which must be on the same file
 * system); `flush` fsyncs it; `commit` renames it over the target and, unless told otherwise, fsyncs the target's
 * directory. Any failure removes the temp file and leaves the target untouched; `discard` does the same on purpose.
 */
export interface StagedFile {
  readonly file: string;
  flush(): Promise<void>;
  commit(options?: { syncDir?: boolean }): Promise<void>;
  discard(): Promise<void>;
}

export async function stageFile(file: string, data: string | Buffer, tempPrefix: string = file): Promise<StagedFile> {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const temp = `${tempPrefix}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  let fd: number | undefined;
  let settled = false; // renamed into place, or removed
  const discard = (): Promise<void> => {
    if (settled) return Promise.resolve();
    settled = true;
    closeQuietly(fd);
    fd = undefined;
    try {
      fs.rmSync(temp, { force: true });
    } catch {
      // Best effort: a leftover `.tmp` is never read.
    }
    return Promise.resolve();
  };
  const fail = async (e: unknown): Promise<never> => {
    await discard();
    throw storageError(`cannot write ${file}`, e);
  };
  try {
    fd = fs.openSync(temp, 'wx', FILE_MODE);
    fs.fchmodSync(fd, FILE_MODE); // exact, whatever the umask
    const half = bytes.length >> 1;
    await writeAll(fd, bytes, 0, half);
    await failpoint('fs.write'); // a disk that fails half-way through a file
    await writeAll(fd, bytes, half, bytes.length);
  } catch (e) {
    return fail(e);
  }
  return {
    file,
    async flush() {
      try {
        if (fd === undefined) return;
        await fsyncFd(fd);
        fs.closeSync(fd);
        fd = undefined;
      } catch (e) {
        await fail(e);
      }
    },
    async commit({ syncDir = true } = {}) {
      try {
        if (fd !== undefined || settled) throw new Error(`${temp}: committed before it was flushed, or twice`);
        fs.renameSync(temp, file);
        settled = true;
        if (syncDir) await fsyncDir(path.dirname(file));
      } catch (e) {
        await fail(e);
      }
    },
    discard,
  };
}

function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    fs.closeSync(fd);
  } catch {
    // Already failing: the close error adds nothing.
  }
}

/** Writes bytes [from, to) at their offsets; a short write continues, so a full disk ends in ENOSPC, not a torn file. */
async function writeAll(fd: number, bytes: Buffer, from: number, to: number): Promise<void> {
  const sync = bytes.length <= SYNC_WRITE_LIMIT;
  for (let at = from; at < to;) {
    const written = sync ? fs.writeSync(fd, bytes, at, to - at, at) : await writeFd(fd, bytes, at, to - at);
    if (written <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    at += written;
  }
}

/** How every JSON file of the stores is laid out. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

export async function writeJsonDurable(file: string, value: unknown): Promise<void> {
  await writeFileDurable(file, jsonText(value));
}

export function storageError(what: string, cause: unknown): PipelineError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new PipelineError(
    ErrorType.StorageFailure,
    `${what}: ${code ?? (cause as Error).message}`,
    { code },
    { cause },
  );
}

/**
 * Reads and validates a JSON file. Returns `undefined` only when the file does not exist; a file that exists but is
 * not valid JSON or does not match the schema is `StoreCorrupt`, naming the file.
 */
export function readJsonFile<S extends z.ZodType>(file: string, schema: S): z.output<S> | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw storageError(`cannot read ${file}`, e);
  }
  return parseJsonText(file, text, schema);
}

export function parseJsonText<S extends z.ZodType>(file: string, text: string, schema: S): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new PipelineError(ErrorType.StoreCorrupt, `${file}: not valid JSON (${(e as Error).message})`, { file });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new PipelineError(ErrorType.StoreCorrupt, `${file}: ${unexpectedContent(parsed.error)}`, { file });
  }
  return parsed.data;
}

/**
 * `p`, once it is known to resolve (through every symlink on the way) to `root` or below it, compared as real paths.
 * A path that leaves, or runs into a dangling symlink, is StoreCorrupt naming it: nothing may be read or written there.
 */
export function assertInside(root: string, p: string, knownRealRoot?: string): string {
  const realRoot = knownRealRoot ?? realPathSoFar(root) ?? path.resolve(root);
  const real = realPathSoFar(p);
  const rel = real === null ? null : path.relative(realRoot, real);
  if (rel !== null && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel)) return p;
  throw new PipelineError(
    ErrorType.StoreCorrupt,
    `${p} resolves to ${real ?? 'a dangling symlink'}, outside ${realRoot}; refusing to follow it`,
    { file: p },
  );
}

/**
 * `assertInside` for one root whose real path is looked up once, as soon as the root exists, instead of on every
 * access. A root later moved and replaced by a symlink then fails every check (StoreCorrupt), never passes a wrong one.
 */
export class InsideGuard {
  private realRoot: string | undefined;
  constructor(readonly root: string) {}

  check(p: string): string {
    if (this.realRoot === undefined) {
      try {
        this.realRoot = fs.realpathSync.native(this.root);
      } catch {
        // Not there yet: checked against the resolved path until it is.
      }
    }
    return assertInside(this.root, p, this.realRoot);
  }
}

/** The real path of the longest existing prefix of `p`, plus the rest as is; null if it runs into a dangling symlink. */
function realPathSoFar(p: string): string | null {
  const rest: string[] = [];
  let appeared = 0;
  for (let d = path.resolve(p); ;) {
    try {
      return path.join(fs.realpathSync.native(d), ...rest);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(d) === d || appeared > 3) {
        throw storageError(`cannot resolve ${p}`, e);
      }
      const st = fs.lstatSync(d, { throwIfNoEntry: false });
      if (st?.isSymbolicLink()) return null; // there, yet does not resolve: a dangling symlink
      if (st) {
        appeared++; // created by another process since realpath looked: look again
        continue;
      }
      rest.unshift(path.basename(d));
      d = path.dirname(d);
    }
  }
}

/** Whether anything (a symlink included) is there. */
export function exists(p: string): boolean {
  return fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;
}
