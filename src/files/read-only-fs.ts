/**
 * The only file access `episodes verify` and the migration planner use: reads that open nothing for writing and create
 * nothing, so both work on a read-only copy of the data dir and leave no trace (content or mtimes).
 */
import type { Stats } from 'node:fs';
import { promises as fs } from 'node:fs';
import type { z } from 'zod';
import { parseJsonText } from './durable-fs';
import { PipelineError, ErrorType } from '../domain/errors';

/** The result of `read`, or `undefined` when the path does not exist; any other error is thrown. */
async function unlessMissing<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

export function lstatIfExists(p: string): Promise<Stats | undefined> {
  return unlessMissing(() => fs.lstat(p));
}

export async function isDirectory(p: string): Promise<boolean> {
  return (await lstatIfExists(p))?.isDirectory() ?? false;
}

export function readBytesIfExists(file: string): Promise<Buffer | undefined> {
  return unlessMissing(() => fs.readFile(file));
}

/** Sorted entry names; an absent directory has none. */
export async function listNames(dir: string): Promise<string[]> {
  return ((await unlessMissing(() => fs.readdir(dir))) ?? []).sort();
}

/** The data dir must exist: a typo in `--data-dir` is bad usage, not an empty store. */
export async function requireDataDir(dataDir: string): Promise<void> {
  if (!(await isDirectory(dataDir))) {
    throw new PipelineError(ErrorType.InvalidInput, `data dir ${dataDir} does not exist or is not a directory`);
  }
}

export type ParsedFile<T> = { ok: true; value: T } | { ok: false; message: string };

/** Parses bytes as JSON against `schema`; the failure is a message (naming where it went wrong), never a throw. */
export function parseBytes<S extends z.ZodType>(file: string, bytes: Buffer, schema: S): ParsedFile<z.output<S>> {
  try {
    return { ok: true, value: parseJsonText(file, bytes.toString('utf8'), schema) };
  } catch (e) {
    if (e instanceof PipelineError) return { ok: false, message: e.message.replace(`${file}: `, '') };
    throw e;
  }
}
