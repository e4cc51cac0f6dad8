/**
 * The file store's locks: one holder at a time across processes on this machine. The pipeline lock covers an
 * allocation's read-decide-write; an episode lock covers one episode's bookkeeping writes (see file-store.ts).
 *
 * Built on proper-lockfile (an atomic mkdir plus an mtime heartbeat), through the fs of lock-fs.ts. Who may hold the
 * lock, and when a holder may be taken over, is decided from the filesystem and the kernel only:
 *  - a holder whose heartbeat is older than `staleMs` is taken over (a frozen holder finds `LockCompromised` when it
 *    runs again);
 *  - a holder the kernel proves dead (holder-identity.ts: same boot and pid namespace, pid gone or reused) is taken
 *    over at once, without waiting for its heartbeat to go stale.
 * Waiting is polling, woken early when the lock's parent directory changes (inotify through fs.watch): no process
 * talks to another, so no process can talk its way into the lock. Within a process, contenders for one lock queue in
 * order, so each process has at most one contender for the directory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import { PipelineError, ErrorType } from '../domain/errors';
import { failpoint, type FailpointName } from '../failpoints';
import { holderProvenDead, ownHolderEntry } from './holder-identity';
import { LockFence } from './lock-fence';
import { currentHolder, removeIfHolderDead, takeoverSafeFs } from './lock-fs';
import { DEFAULT_LOCK_OPTIONS, type LockOptions } from './store-config';

export { DEFAULT_LOCK_OPTIONS, type LockOptions } from './store-config';

/** Passed to the critical section: every commit under the lock goes through it (see lock-fence.ts). */
export interface LockGuard {
  /** Throws LockCompromised if the heartbeat was lost or the lock was taken over meanwhile. */
  assertHeld(): void;
  /**
   * Where a commit stages its temp file for `file`: inside this holder's fence, so the rename that commits it fails
   * once the lock has moved. Throws LockCompromised if it already has; undefined when there is no lock (tests).
   */
  commitPrefix(file: string): string | undefined;
}

/**
 * A waiter looks at the lock again at least this often: a change of the directory wakes it sooner, but a holder's
 * death changes nothing on disk, and the kernel's word on it is only asked here.
 */
const RECHECK_MS = 100;

/** Per lock directory: the tail of this process's queue of contenders. */
const queues = new Map<string, Promise<void>>();

/**
 * Courtesy, for fairness without a queue: a process that has just released a lock it recently found held (so other
 * processes are likely waiting for it) lets them try first for this long before it tries again. Without it the
 * releasing process, already running, wins the race against waiters its rmdir has only just woken. Only timing: no
 * safety rests on it. Alone, a process never finds the lock held and never waits.
 */
const COURTESY_MS = 20;
const CONTENTION_MEMORY_MS = 1000;
const lastRelease = new Map<string, number>();
const lastFoundHeld = new Map<string, number>();

export class DirectoryLock {
  constructor(
    readonly lockPath: string,
    /** What the lock protects, for messages. */
    readonly what: string,
    private readonly options: LockOptions = DEFAULT_LOCK_OPTIONS,
    /** Where tests stall or kill a holder once it has the lock. */
    private readonly takenPoint: FailpointName = 'episode.lock-taken',
  ) {}

  async withLock<T>(critical: (guard: LockGuard) => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.options.timeoutMs;
    const passOn = await this.awaitTurn(deadline);
    try {
      let compromised: Error | undefined;
      const entry = ownHolderEntry();
      const release = await this.acquire(deadline, entry, (err) => (compromised = err));
      const fence = new LockFence(this.lockPath, entry);
      const lost = (why: string) => new PipelineError(ErrorType.LockCompromised, `${this.what} lost: ${why}`);
      const takenOver = 'taken over by another process while this one was frozen; nothing more is written';
      const guard: LockGuard = {
        assertHeld: () => {
          if (compromised) throw lost(compromised.message);
          if (fence.moved()) throw lost(takenOver);
        },
        commitPrefix: (file) => {
          const prefix = compromised ? undefined : fence.tempPrefix(file);
          if (prefix === undefined) throw lost(compromised?.message ?? takenOver);
          return prefix;
        },
      };
      try {
        await failpoint(this.takenPoint);
        return await critical(guard);
      } finally {
        if (!compromised) await release();
        lastRelease.set(this.lockPath, Date.now());
      }
    } finally {
      passOn();
    }
  }

  /** Waits for this process's earlier contenders for the same lock; the function returned passes the turn on. */
  private async awaitTurn(deadline: number): Promise<() => void> {
    let passOn: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => (passOn = resolve));
    const previous = queues.get(this.lockPath);
    const tail = (previous ?? Promise.resolve()).then(() => mine);
    queues.set(this.lockPath, tail);
    void tail.then(() => {
      if (queues.get(this.lockPath) === tail) queues.delete(this.lockPath);
    });
    if (!previous) return passOn;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      previous.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), Math.max(0, deadline - Date.now())))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      // Giving up: the turn still passes on in order, once the earlier contenders are done.
      void previous.then(passOn);
      throw this.timeout();
    }
    return passOn;
  }

  /** Takes the lock (taking over a stale or dead holder's), or times out; resolves to its release. */
  private async acquire(
    deadline: number,
    entry: string,
    onCompromised: (err: Error) => void,
  ): Promise<() => Promise<void>> {
    const stale = Math.max(2000, this.options.staleMs);
    const provenDead = this.options.holderProvenDead ?? holderProvenDead;
    await courtesyPause(this.lockPath);
    for (;;) {
      if (Date.now() >= deadline) throw this.timeout();
      const shim = takeoverSafeFs(this.lockPath, entry, stale);
      try {
        const release = await lockfile.lock(this.lockPath, {
          lockfilePath: this.lockPath,
          realpath: false,
          stale,
          update: Math.max(1000, Math.floor(this.options.staleMs / 4)),
          retries: 0,
          onCompromised,
          fs: shim.fs,
        });
        return async () => {
          shim.releasing = true;
          await release().catch(() => undefined);
        };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') {
          throw new PipelineError(ErrorType.StorageFailure, `cannot take ${this.what} ${this.lockPath}: ${String(e)}`);
        }
        lastFoundHeld.set(this.lockPath, Date.now());
      }
      const holder = currentHolder(this.lockPath);
      if (holder && provenDead(holder) && (await removeIfHolderDead(this.lockPath, holder, stale, provenDead))) {
        continue;
      }
      await lockChangeOrTimeout(this.lockPath, Math.min(RECHECK_MS, Math.max(0, deadline - Date.now())));
    }
  }

  private timeout(): PipelineError {
    return new PipelineError(
      ErrorType.LockTimeout,
      `${this.what} ${this.lockPath} still held by another process after ${this.options.timeoutMs} ms`,
    );
  }
}

/** The lock allocations take: `<data>/pipeline.lock`. */
export class PipelineLock extends DirectoryLock {
  constructor(
    readonly dataDir: string,
    options: LockOptions = DEFAULT_LOCK_OPTIONS,
  ) {
    super(path.join(dataDir, 'pipeline.lock'), 'pipeline lock', options, 'allocation.lock-taken');
  }
}

/** Waits out the rest of the courtesy pause, if this process just released a lock that others are waiting for. */
async function courtesyPause(lockPath: string): Promise<void> {
  const now = Date.now();
  const sinceRelease = now - (lastRelease.get(lockPath) ?? -Infinity);
  const sinceHeld = now - (lastFoundHeld.get(lockPath) ?? -Infinity);
  if (sinceRelease >= COURTESY_MS || sinceHeld >= CONTENTION_MEMORY_MS) return;
  await new Promise((resolve) => setTimeout(resolve, COURTESY_MS - sinceRelease));
}

/**
 * Resolves when the lock directory is removed (or anything else in its parent changes), or after `ms`. Only a wake-up:
 * the caller looks at the lock again either way. Without inotify (or out of watches) it is a plain timer.
 */
function lockChangeOrTimeout(lockPath: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    let watcher: fs.FSWatcher | undefined;
    const done = () => {
      clearTimeout(timer);
      watcher?.close();
      resolve();
    };
    const timer = setTimeout(done, ms);
    try {
      watcher = fs.watch(path.dirname(lockPath), { persistent: false }, done);
      watcher.on('error', done);
    } catch {
      return;
    }
    // Released between the failed attempt and the watch: no event will come.
    if (!fs.existsSync(lockPath)) done();
  });
}
