/**
 * Durable file primitives. Every write is temp file + fsync + rename followed by an fsync of the directory, so a crash
 * or a full disk leaves either the old or the new file, never a torn one, and the rename survives power loss.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs, constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import type { z } from 'zod';
import { PipelineError, isPipelineError } from '../domain/errors';
import { failpoint } from '../failpoints';
import { ErrorType } from '../shared';

/** State and index files hold episode records and ledgers: owner-only. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, fsConstants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** mkdir -p, then fsync every parent whose entry list changed, so the new directory survives a crash. */
export async function ensureDirDurable(dir: string): Promise<void> {
  try {
    const missing: string[] = [];
    for (let d = path.resolve(dir); ; d = path.dirname(d)) {
      try {
        await fs.stat(d);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        missing.unshift(d);
        if (path.dirname(d) === d) break;
      }
    }
    for (const d of missing) {
      await fs.mkdir(d, { mode: DIR_MODE }).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
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
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const temp = `${file}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(temp, 'wx', FILE_MODE);
    await handle.chmod(FILE_MODE); // exact, whatever the umask
    const half = bytes.length >> 1;
    await writeAll(handle, bytes, 0, half);
    await failpoint('fs.write'); // a disk that fails half-way through a file
    await writeAll(handle, bytes, half, bytes.length);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await fs.rename(temp, file);
    await fsyncDir(path.dirname(file));
  } catch (e) {
    await handle?.close().catch(() => undefined);
    await fs.rm(temp, { force: true }).catch(() => undefined);
    throw storageError(`cannot write ${file}`, e);
  }
}

/** Writes bytes [from, to) at their offsets; a short write continues, so a full disk ends in ENOSPC, not a torn file. */
async function writeAll(handle: fs.FileHandle, bytes: Buffer, from: number, to: number): Promise<void> {
  for (let at = from; at < to;) {
    const { bytesWritten } = await handle.write(bytes, at, to - at, at);
    if (bytesWritten <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    at += bytesWritten;
  }
}

export async function writeJsonDurable(file: string, value: unknown): Promise<void> {
  await writeFileDurable(file, JSON.stringify(value, null, 2) + '\n');
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
export async function readJsonFile<S extends z.ZodType>(file: string, schema: S): Promise<z.output<S> | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
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
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : '(root)';
    throw new PipelineError(
      ErrorType.StoreCorrupt,
      `${file}: unexpected content at ${where}: ${issue?.message ?? 'schema mismatch'}`,
      { file },
    );
  }
  return parsed.data;
}

/**
 * `p`, once it is known to resolve (through every symlink on the way) to `root` or below it, compared as real paths.
 * A path that leaves, or runs into a dangling symlink, is StoreCorrupt naming it: nothing may be read or written there.
 */
export async function assertInside(root: string, p: string): Promise<string> {
  const realRoot = (await realPathSoFar(root)) ?? path.resolve(root);
  const real = await realPathSoFar(p);
  const rel = real === null ? null : path.relative(realRoot, real);
  if (rel !== null && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel)) return p;
  throw new PipelineError(
    ErrorType.StoreCorrupt,
    `${p} resolves to ${real ?? 'a dangling symlink'}, outside ${realRoot}; refusing to follow it`,
    { file: p },
  );
}

/** The real path of the longest existing prefix of `p`, plus the rest as is; null if it runs into a dangling symlink. */
async function realPathSoFar(p: string): Promise<string | null> {
  const rest: string[] = [];
  let appeared = 0;
  for (let d = path.resolve(p); ;) {
    try {
      return path.join(await fs.realpath(d), ...rest);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(d) === d || appeared > 3) {
        throw storageError(`cannot resolve ${p}`, e);
      }
      const st = await fs.lstat(d).catch(() => undefined);
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

export async function exists(p: string): Promise<boolean> {
  try {
    await fs.lstat(p);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}
