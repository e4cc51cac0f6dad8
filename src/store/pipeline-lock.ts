/**
 * The file store's locks: one holder at a time across processes on this machine. The pipeline lock covers an
 * allocation's read-decide-write; an episode lock covers one episode's bookkeeping writes (see file-store.ts).
 *
 * Built on proper-lockfile (an atomic mkdir plus an mtime heartbeat): a holder killed with SIGKILL stops refreshing the
 * heartbeat, and the next contender takes the lock over once it is older than `staleMs`. On top of it, waiting is
 * prompt and roughly first come, first served:
 *  - within a process, contenders for one lock queue in order, so each process has at most one contender for the
 *    directory;
 *  - across processes, a waiter connects to the holder's socket (lock-handoff.ts) and is told when the lock is free,
 *    longest waiter first; a holder whose process dies while waiters are connected is taken over at once, not after
 *    `staleMs`. A holder that was already dead when nobody was connected (or whose socket cannot be reached) is taken
 *    over when stale, as before; a frozen holder too, and it finds `LockCompromised` when it runs again.
 * With a `Delegation`, a waiting process also hands its request to the holder it waits for, and the holder's critical
 * section may do it together with its own work (`guard.takeRequests()`): the waiter then gets the holder's answer and
 * never takes the lock. Whatever the holder does not answer, the waiter does itself, exactly as without delegation.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import { PipelineError } from '../domain/errors';
import { ErrorType } from '../shared';
import { failpoint } from '../failpoints';
import {
  abandon,
  handOff,
  isHolderEntry,
  nextHolderName,
  parseHolderEntry,
  takeRequests,
  waitForHolder,
  type DelegatedRequest,
  type HolderName,
} from './lock-handoff';
import { DEFAULT_LOCK_OPTIONS, type LockOptions } from './store-config';

export { DEFAULT_LOCK_OPTIONS, type LockOptions } from './store-config';

/** Passed to the critical section so that it can refuse to commit if the heartbeat was lost mid-way. */
export interface LockGuard {
  assertHeld(): void;
  /**
   * Up to `max` requests of the processes waiting for this holding, oldest first, that no earlier call took. Each must
   * be answered or declined before the critical section ends; any left are declined then, and their waiters do the
   * work themselves.
   */
  takeRequests?(max: number): DelegatedRequest[];
}

export type { DelegatedRequest } from './lock-handoff';

/** What a contender would do under the lock, for a holder that can do it on its behalf (see the header). */
export interface Delegation<T> {
  request: string;
  /** The holder's answer; undefined when it cannot be used (the contender then waits and does the work itself). */
  accept(reply: string): { value: T } | undefined;
}

/** While connected to a holder, look at the lock again this often anyway (a frozen holder never answers). */
const RECHECK_MS = 250;

/** Per lock directory: the tail of this process's queue of contenders. */
const queues = new Map<string, Promise<void>>();

export class DirectoryLock {
  constructor(
    readonly lockPath: string,
    /** What the lock protects, for messages. */
    readonly what: string,
    private readonly options: LockOptions = DEFAULT_LOCK_OPTIONS,
  ) {}

  async withLock<T>(critical: (guard: LockGuard) => Promise<T>, delegation?: Delegation<T>): Promise<T> {
    if (this.options.unsafeDisableForTests) return critical({ assertHeld: () => undefined });
    const deadline = Date.now() + this.options.timeoutMs;
    const polling = this.options.unsafeWaitForTests === 'poll';
    const turn = polling ? { after: (_: Promise<void>) => undefined } : await this.awaitTurn(deadline);
    let handedOff: Promise<void> = Promise.resolve();
    try {
      let compromised: Error | undefined;
      let request = delegation?.request;
      let held: Awaited<ReturnType<DirectoryLock['acquire']>>;
      for (;;) {
        held = await this.acquire(
          deadline,
          (err) => {
            compromised = err;
          },
          request,
        );
        if (!('served' in held)) break;
        const answer = delegation!.accept(held.served);
        if (answer) return answer.value;
        request = undefined; // an answer it cannot use: do the work itself
      }
      const { holder } = held;
      const taken: DelegatedRequest[] = [];
      const guard: LockGuard = {
        assertHeld: () => {
          if (compromised) {
            throw new PipelineError(ErrorType.LockCompromised, `${this.what} lost: ${compromised.message}`);
          }
        },
        takeRequests: (max) => {
          if (polling) return [];
          const more = takeRequests(holder.holdingId, max);
          taken.push(...more);
          return more;
        },
      };
      try {
        await failpoint('allocation.lock-taken');
        return await critical(guard);
      } finally {
        for (const r of taken) r.decline(); // no-op for those answered
        if (compromised) abandon(holder.holdingId);
        else handedOff = held.release();
      }
    } finally {
      turn.after(handedOff);
    }
  }

  /** Waits for this process's earlier contenders for the same lock; `after` passes the turn on. */
  private async awaitTurn(deadline: number): Promise<{ after: (handedOff: Promise<void>) => void }> {
    let passOn: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => (passOn = resolve));
    const previous = queues.get(this.lockPath);
    const tail = (previous ?? Promise.resolve()).then(() => mine);
    queues.set(this.lockPath, tail);
    void tail.then(() => {
      if (queues.get(this.lockPath) === tail) queues.delete(this.lockPath);
    });
    const after = (handedOff: Promise<void>) => void handedOff.then(passOn, passOn);
    if (!previous) return { after };
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      previous.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), Math.max(0, deadline - Date.now())))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      // Giving up: the turn still passes on in order, once the earlier contenders are done.
      after(previous);
      throw this.timeout();
    }
    return { after };
  }

  /** Takes the lock, or (with a `request`) gets the answer of a holder that did the request instead. */
  private async acquire(
    deadline: number,
    onCompromised: (err: Error) => void,
    delegated?: string,
  ): Promise<{ holder: HolderName; release: () => Promise<void> } | { served: string }> {
    const stale = Math.max(2000, this.options.staleMs);
    const mode = this.options.unsafeWaitForTests;
    const arrival = performance.timeOrigin + performance.now();
    // Declined once by a holder: done here from then on, not handed to every holder again.
    let request = delegated;
    const wait = async (target: HolderName, maxMs: number, self: HolderName | undefined) => {
      const waited = await waitForHolder(target, arrival, maxMs, self, request);
      if (waited.outcome === 'declined') request = undefined;
      return waited;
    };
    let movedBy: string | undefined;
    // Kept across failed attempts: waiters sent to queue behind this process find it under this name.
    let holder: HolderName | undefined;
    // A holder that released the lock named the process it went to: wait there rather than try the lock.
    let successor: HolderName | undefined;
    try {
      for (let attempt = 0; ; attempt++) {
        const left = deadline - Date.now();
        if (left <= 0) throw this.timeout();
        if (successor && mode !== 'poll') {
          const next = successor;
          const waited = await wait(next, Math.min(RECHECK_MS, left), holder);
          const { outcome, next: after } = waited;
          if (outcome === 'served') return { served: waited.reply! };
          // Told to go, to look again, or timed out: try the lock. Sent on again: queue there. Died: it may have
          // taken the lock first, so the usual takeover (which does nothing if it never did).
          successor = outcome === 'moved' ? after : undefined;
          if (outcome === 'died' && mode !== 'no-death-detection') {
            await removeIfHolderStill(this.lockPath, next.entry, stale);
          }
          continue;
        }
        holder ??= await nextHolderName();
        const takeover = takeoverSafeFs(this.lockPath, holder.entry, stale);
        try {
          const release = await lockfile.lock(this.lockPath, {
            lockfilePath: this.lockPath,
            realpath: false,
            stale,
            update: Math.max(1000, Math.floor(this.options.staleMs / 4)),
            retries: 0,
            onCompromised,
            fs: takeover.fs,
          });
          const held = holder;
          holder = undefined;
          return {
            holder: held,
            release: async () => {
              takeover.releasing = true;
              await release().catch(() => undefined);
              return mode === 'poll' ? abandon(held.holdingId) : handOff(held.holdingId);
            },
          };
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') {
            throw new PipelineError(
              ErrorType.StorageFailure,
              `cannot take ${this.what} ${this.lockPath}: ${String(e)}`,
            );
          }
        }
        const current = mode === 'poll' ? undefined : currentHolder(this.lockPath);
        const waited = current
          ? await wait(current, Math.min(RECHECK_MS, Math.max(0, deadline - Date.now())), holder)
          : { outcome: 'unreachable' as const, next: undefined, reply: undefined };
        const { outcome, next } = waited;
        if (outcome === 'served') return { served: waited.reply! };
        successor = next;
        if (outcome === 'died' && mode !== 'no-death-detection') {
          await removeIfHolderStill(this.lockPath, current!.entry, stale);
        } else if (!next && (outcome === 'unreachable' || (outcome === 'moved' && movedBy === current?.entry))) {
          // No holder to listen to (one from before the handoff, dead on arrival, or out of reach): poll, as before.
          const wait = Math.min(50, 2 + attempt) * (0.5 + Math.random());
          await new Promise((resolve) => setTimeout(resolve, Math.min(wait, Math.max(0, deadline - Date.now()))));
        }
        // Told twice by the same holder to look again, yet it still holds the lock: poll rather than spin.
        movedBy = outcome === 'moved' ? current?.entry : undefined;
      }
    } finally {
      // Not taken (timed out, or failed): waiters queued behind this process look again.
      if (holder) abandon(holder.holdingId);
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
    super(path.join(dataDir, 'pipeline.lock'), 'pipeline lock', options);
  }
}

/** The holder named in the lock directory, if any. */
function currentHolder(lockPath: string): HolderName | undefined {
  try {
    for (const entry of fs.readdirSync(lockPath)) {
      const holder = parseHolderEntry(entry);
      if (holder) return holder;
    }
  } catch {
    // Gone (released meanwhile) or unreadable: the next attempt says which.
  }
  return undefined;
}

/**
 * The fs proper-lockfile works through, with three changes:
 *  - creating the lock directory also creates the holder's entry in it (before proper-lockfile records the mtime);
 *  - its release removes that entry first;
 *  - its takeover of a stale lock (rmdir, then mkdir) removes the directory only under a second mkdir lock,
 *    `<lock>.reclaim`, and only if it is still stale when looked at again there. Without that, two contenders that both
 *    judged the dead holder's lock stale can both end up holding it: the later rmdir removes the lock the earlier one
 *    has just created (proper-lockfile issue #121).
 * proper-lockfile's own calls are microseconds of metadata work: made synchronously and answered on the next tick,
 * rather than through libuv's thread pool.
 */
function takeoverSafeFs(lockPath: string, entry: string, staleMs: number): { fs: LockFs; releasing: boolean } {
  const ours = (p: fs.PathLike) => path.resolve(String(p)) === path.resolve(lockPath);
  const removeOurs = (p: fs.PathLike) => {
    if (ours(p)) fs.rmSync(path.join(lockPath, entry), { recursive: true, force: true });
    fs.rmdirSync(p);
  };
  const takeover = {
    releasing: false,
    fs: {
      mkdir: (p: fs.PathLike, callback: Callback<void>) =>
        answer(callback, () => {
          fs.mkdirSync(p);
          if (ours(p)) fs.mkdirSync(path.join(lockPath, entry));
        }),
      stat: (p: fs.PathLike, callback: Callback<fs.Stats>) => answer(callback, () => fs.statSync(p)),
      utimes: (p: fs.PathLike, atime: Date, mtime: Date, callback: Callback<void>) =>
        answer(callback, () => fs.utimesSync(p, atime, mtime)),
      realpath: (p: fs.PathLike, callback: Callback<string>) => answer(callback, () => fs.realpathSync(p)),
      // proper-lockfile's exit handler: a process exiting while it holds the lock removes it, entry included.
      rmdirSync: removeOurs,
      rmdir(p: fs.PathLike, callback: Callback<void>): void {
        if (takeover.releasing || !ours(p)) return answer(callback, () => removeOurs(p));
        void removeIfStillStale(lockPath, staleMs).then(
          () => callback(null),
          (e: NodeJS.ErrnoException) => callback(e),
        );
      },
    },
  };
  return takeover;
}

/** Just the calls proper-lockfile makes (a plain object: copying node:fs would touch its deprecated getters). */
interface LockFs {
  mkdir(p: fs.PathLike, callback: Callback<void>): void;
  stat(p: fs.PathLike, callback: Callback<fs.Stats>): void;
  utimes(p: fs.PathLike, atime: Date, mtime: Date, callback: Callback<void>): void;
  realpath(p: fs.PathLike, callback: Callback<string>): void;
  rmdir(p: fs.PathLike, callback: Callback<void>): void;
  rmdirSync(p: fs.PathLike): void;
}

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

function busy(lockPath: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${lockPath} is being taken over by another process`), { code: 'ELOCKED' });
}

/**
 * Runs `decide` under `<lock>.reclaim`, the mutex every takeover goes through; if `decide` says so, removes the lock
 * directory (holder entries first, then the directory itself). False if another takeover holds the mutex.
 */
async function reclaim(lockPath: string, staleMs: number, decide: () => Promise<boolean>): Promise<boolean> {
  const mutex = `${lockPath}.reclaim`;
  try {
    await fs.promises.mkdir(mutex);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    // A process killed inside this short section left the mutex: it goes stale like the lock, then is removed.
    if (((await age(mutex)) ?? 0) > staleMs) await fs.promises.rmdir(mutex).catch(() => undefined);
    return false;
  }
  try {
    if (!(await decide())) return false;
    for (const name of fs.readdirSync(lockPath)) {
      if (isHolderEntry(name)) fs.rmSync(path.join(lockPath, name), { recursive: true, force: true });
    }
    await fs.promises.rmdir(lockPath);
    return true;
  } finally {
    await fs.promises.rmdir(mutex).catch(() => undefined);
  }
}

async function removeIfStillStale(lockPath: string, staleMs: number): Promise<void> {
  let fresh = false;
  const removed = await reclaim(lockPath, staleMs, async () => {
    // Gone already: nothing to remove (removing now could hit a new holder's lock). Fresh: someone holds it.
    const lockAge = await age(lockPath);
    fresh = lockAge !== undefined && lockAge <= staleMs;
    return lockAge !== undefined && !fresh;
  });
  if (!removed && (fresh || exists(lockPath))) throw busy(lockPath);
}

/**
 * The holder `entry` was seen to die (its socket closed without a word): remove its lock if it is still its lock.
 * Under the takeover mutex, and the stale takeover removes the entry under it too, so a holder's name cannot be
 * seen again once another process has taken the lock.
 */
function removeIfHolderStill(lockPath: string, entry: string, staleMs: number): Promise<boolean> {
  return reclaim(lockPath, staleMs, () => Promise.resolve(exists(path.join(lockPath, entry)))).catch(() => false);
}

function exists(p: string): boolean {
  return fs.existsSync(p);
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
