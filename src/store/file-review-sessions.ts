/**
 * The file store's review sessions: `<data dir>/review/sessions/<sha256 of the id>.json` (0600, written atomically
 * and durably). Every change is made under the directory's lock (the store's DirectoryLock), so a `touch` racing a
 * revocation by the CLI cannot bring the revoked session back, and `create` keeps the bounds across processes. Each
 * write is staged in the lock holder's fence (lock-fence.ts), as the episodes' files are: a desk frozen inside `touch`
 * past the lock's stale time cannot rename its copy back over a revocation made meanwhile.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ensureDirDurable, fsyncDir, jsonText, readJsonFile, stageFile, storageError } from '../files/durable-fs';
import { DirectoryLock, type LockGuard } from './pipeline-lock';
import {
  SESSION_DIGEST,
  reviewSessionSchema,
  sessionsToRemove,
  type ReviewSession,
  type ReviewSessionStore,
  type SessionBounds,
} from './review-sessions';
import { DEFAULT_LOCK_OPTIONS, type LockOptions } from './store-config';

const FILE_NAME = /^([0-9a-f]{64})\.json$/;

export class FileReviewSessions implements ReviewSessionStore {
  readonly description: string;
  private readonly lock: DirectoryLock;

  constructor(
    readonly dir: string,
    lockOptions: LockOptions = DEFAULT_LOCK_OPTIONS,
  ) {
    this.description = `review sessions in ${dir}`;
    this.lock = new DirectoryLock(`${dir}.lock`, 'review sessions lock', lockOptions);
  }

  async create(session: ReviewSession, bounds: SessionBounds): Promise<void> {
    await this.changing(async (guard) => {
      const all = await this.list();
      for (const id of sessionsToRemove(all, session.identity, bounds)) await this.unlink(id);
      await writeFenced(this.file(session.id_sha256), reviewSessionSchema.parse(session), guard);
    });
  }

  get(idSha256: string): Promise<ReviewSession | undefined> {
    if (!SESSION_DIGEST.test(idSha256)) return Promise.resolve(undefined);
    return Promise.resolve(readJsonFile(this.file(idSha256), reviewSessionSchema));
  }

  async touch(idSha256: string, at: Date): Promise<void> {
    await this.changing(async (guard) => {
      const current = await this.get(idSha256);
      if (current === undefined) return;
      await writeFenced(this.file(idSha256), { ...current, last_seen_at: at.toISOString() }, guard);
    });
  }

  delete(idSha256: string): Promise<boolean> {
    if (!SESSION_DIGEST.test(idSha256)) return Promise.resolve(false);
    return this.changing(() => this.unlink(idSha256));
  }

  async list(): Promise<ReviewSession[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw storageError(`cannot list ${this.dir}`, e);
    }
    const sessions: ReviewSession[] = [];
    for (const name of names) {
      const id = FILE_NAME.exec(name)?.[1];
      const s = id === undefined ? undefined : await this.get(id);
      if (s !== undefined) sessions.push(s);
    }
    return sessions;
  }

  private file(idSha256: string): string {
    return path.join(this.dir, `${idSha256}.json`);
  }

  private async changing<T>(body: (guard: LockGuard) => Promise<T>): Promise<T> {
    await ensureDirDurable(this.dir);
    return this.lock.withLock(body);
  }

  private async unlink(idSha256: string): Promise<boolean> {
    try {
      await fs.unlink(this.file(idSha256));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw storageError(`cannot remove session ${idSha256.slice(0, 16)}`, e);
    }
    await fsyncDir(this.dir);
    return true;
  }
}

/** Written out of the lock holder's fence: once the lock has moved, the commit fails and LockCompromised says why. */
async function writeFenced(file: string, value: ReviewSession, guard: LockGuard): Promise<void> {
  try {
    const staged = await stageFile(file, jsonText(value), guard.commitPrefix(file));
    await staged.flush();
    await staged.commit();
  } catch (e) {
    guard.assertHeld();
    throw e;
  }
}
