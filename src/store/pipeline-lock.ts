/**
 * The pipeline lock: one holder at a time across processes on this machine, covering a whole read-decide-write.
 * Built on proper-lockfile (an atomic mkdir plus an mtime heartbeat): a holder killed with SIGKILL stops refreshing the
 * heartbeat, and the next contender takes the lock over once it is older than `staleMs`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import { PipelineError } from '../domain/errors';
import { ErrorType } from '../shared';
import { failpoint } from '../failpoints';

export interface LockOptions {
  /** Give up (retryably) after this long. */
  timeoutMs: number;
  /** A lock whose heartbeat is older than this is considered abandoned. proper-lockfile's minimum is 2000. */
  staleMs: number;
}

export const DEFAULT_LOCK_OPTIONS: LockOptions = {
  timeoutMs: Number(process.env.EPISODES_LOCK_TIMEOUT_MS ?? 30_000),
  staleMs: Number(process.env.EPISODES_LOCK_STALE_MS ?? 10_000),
};

/** Passed to the critical section so that it can refuse to commit if the heartbeat was lost mid-way. */
export interface LockGuard {
  assertHeld(): void;
}

/** Test-only: lets the concurrency test show that its assertions fail without the lock. Never set it in production. */
const UNSAFE_DISABLE = process.env.EPISODES_UNSAFE_DISABLE_LOCK_FOR_TESTS === '1';

export class PipelineLock {
  readonly lockPath: string;

  constructor(
    readonly dataDir: string,
    private readonly options: LockOptions = DEFAULT_LOCK_OPTIONS,
  ) {
    this.lockPath = path.join(dataDir, 'pipeline.lock');
  }

  async withLock<T>(critical: (guard: LockGuard) => Promise<T>): Promise<T> {
    if (UNSAFE_DISABLE) return critical({ assertHeld: () => undefined });
    let compromised: Error | undefined;
    const release = await this.acquire((err) => {
      compromised = err;
    });
    const guard: LockGuard = {
      assertHeld() {
        if (compromised) {
          throw new PipelineError(ErrorType.LockCompromised, `pipeline lock lost: ${compromised.message}`);
        }
      },
    };
    try {
      await failpoint('allocation.lock-taken');
      return await critical(guard);
    } finally {
      if (!compromised) await release().catch(() => undefined);
    }
  }

  private async acquire(onCompromised: (err: Error) => void): Promise<() => Promise<void>> {
    const deadline = Date.now() + this.options.timeoutMs;
    const stale = Math.max(2000, this.options.staleMs);
    for (let attempt = 0; ; attempt++) {
      const takeover = takeoverSafeFs(this.lockPath, stale);
      try {
        const release = await lockfile.lock(this.dataDir, {
          lockfilePath: this.lockPath,
          realpath: false,
          stale,
          update: Math.max(1000, Math.floor(this.options.staleMs / 4)),
          retries: 0,
          onCompromised,
          fs: takeover.fs,
        });
        return () => {
          takeover.releasing = true;
          return release();
        };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') {
          throw new PipelineError(ErrorType.StorageFailure, `cannot take pipeline lock ${this.lockPath}: ${String(e)}`);
        }
        if (Date.now() >= deadline) {
          throw new PipelineError(
            ErrorType.LockTimeout,
            `pipeline lock ${this.lockPath} still held by another process after ${this.options.timeoutMs} ms`,
          );
        }
        // Jittered backoff capped low: critical sections are milliseconds long.
        const wait = Math.min(50, 2 + attempt) * (0.5 + Math.random());
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}

/**
 * The fs proper-lockfile works through, with one change: its takeover of a stale lock (rmdir, then mkdir) removes the
 * directory only under a second mkdir lock, `pipeline.lock.reclaim`, and only if it is still stale when looked at
 * again there. Without that, two contenders that both judged the dead holder's lock stale can both end up holding it:
 * the later rmdir removes the lock the earlier one has just created (proper-lockfile issue #121).
 */
function takeoverSafeFs(lockPath: string, staleMs: number): { fs: typeof fs; releasing: boolean } {
  const takeover = {
    releasing: false,
    // Everything else is node:fs, reached through the prototype (no copy of the module per lock taken).
    fs: Object.assign(Object.create(NODE_FS) as typeof fs, {
      // proper-lockfile's own calls (mkdir, the mtime probe, the heartbeat) are microseconds of metadata work: made
      // synchronously and answered on the next tick, rather than through libuv's thread pool.
      mkdir: (p: fs.PathLike, callback: Callback<void>) => answer(callback, () => fs.mkdirSync(p)),
      stat: (p: fs.PathLike, callback: Callback<fs.Stats>) => answer(callback, () => fs.statSync(p)),
      utimes: (p: fs.PathLike, atime: Date, mtime: Date, callback: Callback<void>) =>
        answer(callback, () => fs.utimesSync(p, atime, mtime)),
      rmdir(p: fs.PathLike, callback: Callback<void>): void {
        if (takeover.releasing || path.resolve(String(p)) !== path.resolve(lockPath)) {
          return answer(callback, () => fs.rmdirSync(p));
        }
        void removeIfStillStale(lockPath, staleMs).then(
          () => callback(null),
          (e: NodeJS.ErrnoException) => callback(e),
        );
      },
    }),
  };
  return takeover;
}

/** node:fs as plain data properties (the module's own are getters), the prototype of every takeover-safe fs. */
const NODE_FS: typeof fs = { ...fs };

type Callback<T> = (err: NodeJS.ErrnoException | null, value?: T) => void;

/** Runs a synchronous fs call and answers its callback on the next tick, as the asynchronous call would. */
function answer<T>(callback: Callback<T>, run: () => T): void {
  let value: T | undefined;
  let error: NodeJS.ErrnoException | null = null;
  try {
    value = run();
  } catch (e) {
    error = e as NodeJS.ErrnoException;
  }
  process.nextTick(() => callback(error, value));
}

async function removeIfStillStale(lockPath: string, staleMs: number): Promise<void> {
  const busy = () =>
    Object.assign(new Error(`${lockPath} is being taken over by another process`), { code: 'ELOCKED' });
  const mutex = `${lockPath}.reclaim`;
  try {
    await fs.promises.mkdir(mutex);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    // A process killed inside this short section left the mutex: it goes stale like the lock, then is removed.
    if (((await age(mutex)) ?? 0) > staleMs) await fs.promises.rmdir(mutex).catch(() => undefined);
    throw busy();
  }
  try {
    // Gone already: nothing to remove (removing now could hit a new holder's lock). Fresh: someone holds it.
    const lockAge = await age(lockPath);
    if (lockAge === undefined) return;
    if (lockAge <= staleMs) throw busy();
    // Still the stale lock: only a takeover removes it, and takeovers take turns here.
    await fs.promises.rmdir(lockPath);
  } finally {
    await fs.promises.rmdir(mutex).catch(() => undefined);
  }
}

/** Milliseconds since the directory's mtime (the holder's heartbeat); undefined if it does not exist. */
async function age(dir: string): Promise<number | undefined> {
  try {
    return Date.now() - (await fs.promises.stat(dir)).mtimeMs;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}
