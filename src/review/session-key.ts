/**
 * The desk's session key: 32 random bytes in a file beside the reviewers file (`session-key`, this user's, 0600),
 * made at the desk's first start. Every session record carries an HMAC under it (sessions.ts), so whoever can write
 * the store (with PostgreSQL, every worker host's database role) still cannot make up or alter a session: only the
 * desk's host holds the key.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorType, PipelineError } from '../domain/errors';
import { readPrivateFile } from './private-file';

const KEY_TEXT = /^[0-9a-f]{64}\n?$/;

export function sessionKeyFile(reviewersFile: string): string {
  return path.join(path.dirname(path.resolve(reviewersFile)), 'session-key');
}

/** The key in `file`, made there (0600, never through a symlink) when there is none. */
export function loadSessionKey(file: string): Buffer {
  for (;;) {
    const text = readPrivateFile(file, 'session key file');
    if (text !== undefined) {
      if (!KEY_TEXT.test(text)) {
        throw new PipelineError(ErrorType.InvalidState, `the session key file ${file} is not 64 hex digits; remove it`);
      }
      return Buffer.from(text.trim(), 'hex');
    }
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    try {
      // O_EXCL: never through a symlink, and of two desks starting at once only one writes it.
      fs.writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}
