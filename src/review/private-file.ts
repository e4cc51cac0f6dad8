/**
 * A file the desk trusts (the reviewers file, the OIDC client secret) or writes (the audit log): opened without
 * following a symlink, then checked on that same descriptor: a regular file, owned by this process's user, with no
 * permission for group or others (what `chmod 600` gives). Anything else is refused with one line saying what to fix.
 */
import * as fs from 'node:fs';
import { PipelineError } from '../domain/errors';
import { ErrorType } from '../domain/errors';

/** The file's text, or undefined when it does not exist. */
export function readPrivateFile(file: string, what: string): string | undefined {
  const fd = openPrivate(file, what, fs.constants.O_RDONLY);
  if (fd === undefined) return undefined;
  try {
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/** A descriptor for appending to `file` (created 0600), after the same checks; the caller closes it. */
export function openPrivateAppend(file: string, what: string): number {
  const fd = openPrivate(file, what, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT);
  if (fd === undefined) throw new PipelineError(ErrorType.StorageFailure, `cannot open the ${what} ${file}: ENOENT`);
  return fd;
}

/** Opens without following a symlink and checks that descriptor; undefined when the file (or its folder) is missing. */
function openPrivate(file: string, what: string, flags: number): number | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, flags | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK, 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw refused(what, file, 'is a symlink; give the real file');
    throw new PipelineError(ErrorType.StorageFailure, `cannot open the ${what} ${file}: ${code}`);
  }
  try {
    checkPrivate(fd, file, what);
    return fd;
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

function checkPrivate(fd: number, file: string, what: string): void {
  const st = fs.fstatSync(fd);
  if (!st.isFile()) throw refused(what, file, 'is not a regular file');
  const uid = process.geteuid?.();
  if (uid !== undefined && st.uid !== uid)
    throw refused(what, file, `is owned by uid ${st.uid}, not by ${uid}; run chown ${uid} on it`);
  if ((st.mode & 0o077) !== 0) {
    throw refused(what, file, `has mode ${(st.mode & 0o777).toString(8)}; run chmod 600 on it`);
  }
}

function refused(what: string, file: string, problem: string): PipelineError {
  return new PipelineError(ErrorType.InvalidState, `the ${what} ${file} ${problem}`);
}
