/**
 * The fence of a file store lock: a holder's commits are renames out of a directory that exists only while it holds
 * the lock, so the filesystem refuses a holder's write once the lock has changed hands, however long it was frozen.
 *
 * That directory is `<lock>/<holder entry>/c-<nonce>/`: the holder's own entry (holder-identity.ts), created with the
 * lock directory, plus a name new at every acquisition. Every takeover removes the holder entries (temp files
 * included) before the lock directory, so from then on creating a temp file there, or renaming one out of it, fails
 * with ENOENT. A plain path is enough: no other holder's lock directory ever contains this name (a new holder's holds
 * its own entry), whereas a path to the lock directory itself would resolve to the new holder's.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DIR_MODE } from '../files/durable-fs';

export class LockFence {
  private readonly dir: string;
  private made = false;

  constructor(lockPath: string, entry: string) {
    this.dir = path.join(lockPath, entry, `c-${randomBytes(6).toString('hex')}`);
  }

  /** Where a commit's temp file for `file` goes; undefined if the holder's entry is gone (the lock moved). */
  tempPrefix(file: string): string | undefined {
    if (!this.made) {
      try {
        fs.mkdirSync(this.dir, { mode: DIR_MODE });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      }
      this.made = true;
    }
    return path.join(this.dir, path.basename(file));
  }

  /** True once a takeover has removed this holder's entry (the fence directory with it). */
  moved(): boolean {
    return !fs.existsSync(this.made ? this.dir : path.dirname(this.dir));
  }
}
