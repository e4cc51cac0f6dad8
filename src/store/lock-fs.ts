/**
 * The filesystem side of the file store's locks: the fs handed to proper-lockfile, and the takeovers. Every takeover
 * (of a stale lock, or of a holder proven dead) removes the lock directory only under a second lock (takeMutex),
 * `<lock>.reclaim`, and only if the reason still holds when looked at again there. Without that, two contenders that
 * both judged the dead holder's lock free can both end up holding it: the later rmdir removes the lock the earlier one
 * has just created (proper-lockfile issue #121).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isHolderEntry } from './holder-identity';

/** Lock directories are the owner's alone, like everything else in the data dir. */
const LOCK_DIR_MODE = 0o700;

/** Just the calls proper-lockfile makes (a plain object: copying node:fs would touch its deprecated getters). */
export interface LockFs {
  mkdir(p: fs.PathLike, callback: Callback<void>): void;
  stat(p: fs.PathLike, callback: Callback<fs.Stats>): void;
  utimes(p: fs.PathLike, atime: Date, mtime: Date, callback: Callback<void>): void;
  realpath(p: fs.PathLike, callback: Callback<string>): void;
  rmdir(p: fs.PathLike, callback: Callback<void>): void;
  rmdirSync(p: fs.PathLike): void;
}

type Callback<T> = (err: NodeJS.ErrnoException | null, value?: T) => void;

/**
 * The fs proper-lockfile works through, with three changes:
 *  - creating the lock directory (mode 0700) also creates the holder's entry in it (before proper-lockfile records
 *    the mtime);
 *  - its release removes that entry first;
 *  - its takeover of a stale lock (rmdir, then mkdir) goes through `removeIfStillStale`.
 * proper-lockfile's own calls are microseconds of metadata work: made synchronously and answered on the next tick,
 * rather than through libuv's thread pool.
 */
export function takeoverSafeFs(lockPath: string, entry: string, staleMs: number): { fs: LockFs; releasing: boolean } {
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
          fs.mkdirSync(p, { mode: LOCK_DIR_MODE });
          if (ours(p)) fs.mkdirSync(path.join(lockPath, entry), { mode: LOCK_DIR_MODE });
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

/** The holder entry in the lock directory, if any. */
export function currentHolder(lockPath: string): string | undefined {
  try {
    return fs.readdirSync(lockPath).find(isHolderEntry);
  } catch {
    return undefined; // gone (released meanwhile) or unreadable: the next attempt says which
  }
}

/**
 * The holder `entry` was proven dead (`provenDead`, holder-identity.ts): remove its lock if it is still its lock and
 * the proof still holds, looked at again under the takeover mutex. A holder's name cannot be seen again once another
 * process has taken the lock, because every takeover removes the entries under that mutex.
 */
export function removeIfHolderDead(
  lockPath: string,
  entry: string,
  staleMs: number,
  provenDead: (entry: string) => boolean,
): Promise<boolean> {
  const decide = () => Promise.resolve(fs.existsSync(path.join(lockPath, entry)) && provenDead(entry));
  return reclaim(lockPath, staleMs, decide).catch(() => false);
}

async function removeIfStillStale(lockPath: string, staleMs: number): Promise<void> {
  let fresh = false;
  const removed = await reclaim(lockPath, staleMs, async () => {
    // Gone already: nothing to remove (removing now could hit a new holder's lock). Fresh: someone holds it.
    const lockAge = await age(lockPath);
    fresh = lockAge !== undefined && lockAge <= staleMs;
    return lockAge !== undefined && !fresh;
  });
  if (!removed && (fresh || fs.existsSync(lockPath))) {
    throw Object.assign(new Error(`${lockPath} is being taken over by another process`), { code: 'ELOCKED' });
  }
}

/**
 * Runs `decide` under `<lock>.reclaim`, the mutex every takeover goes through; if `decide` says so, removes the lock
 * directory (holder entries first, then the directory itself). False if another takeover holds the mutex.
 */
async function reclaim(lockPath: string, staleMs: number, decide: () => Promise<boolean>): Promise<boolean> {
  const mutex = await takeMutex(`${lockPath}.reclaim`, staleMs);
  if (mutex === undefined) return false;
  try {
    if (!(await decide())) return false;
    try {
      // The entries go first, and with them the fences of their holders' commits (lock-fence.ts).
      for (const name of fs.readdirSync(lockPath)) {
        if (isHolderEntry(name)) fs.rmSync(path.join(lockPath, name), { recursive: true, force: true });
      }
      await fs.promises.rmdir(lockPath);
    } catch (e) {
      // A frozen holder woke and staged a file meanwhile: it is still there, so try again later.
      if ((e as NodeJS.ErrnoException).code === 'ENOTEMPTY') return false;
      throw e;
    }
    return true;
  } finally {
    await mutex.release();
  }
}

/** The calls the takeover mutex makes: node's own (a test interleaves two contenders through a wrapper). */
export type MutexFs = Pick<typeof fs.promises, 'mkdir' | 'rename' | 'readdir' | 'stat' | 'rm' | 'rmdir'>;

export interface MutexHold {
  release(): Promise<void>;
}

/**
 * Takes `mutex`, a directory holding one entry (its holder's), or undefined when another holds it. It is made whole
 * under a temporary name and renamed into place, so it is never seen without its entry. A holder killed inside leaves
 * it behind: once older than `staleMs` it is taken over in one atomic step, the rename of that holder's entry to ours.
 * Of two contenders that both judged it stale only one can rename the entry (the other finds it gone), and the rename
 * makes the mutex fresh again for any third.
 */
export async function takeMutex(
  mutex: string,
  staleMs: number,
  fsp: MutexFs = fs.promises,
): Promise<MutexHold | undefined> {
  const mine = `holder-${process.pid}-${randomBytes(6).toString('hex')}`;
  const staged = `${mutex}.${mine}`;
  await fsp.mkdir(staged, { mode: LOCK_DIR_MODE });
  try {
    await fsp.mkdir(path.join(staged, mine), { mode: LOCK_DIR_MODE });
    await fsp.rename(staged, mutex);
    return held(mutex, mine, fsp);
  } catch (e) {
    await fsp.rm(staged, { recursive: true, force: true });
    if (!['EEXIST', 'ENOTEMPTY'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
  }
  return (await stealIfStale(mutex, mine, staleMs, fsp)) ? held(mutex, mine, fsp) : undefined;
}

async function stealIfStale(mutex: string, mine: string, staleMs: number, fsp: MutexFs): Promise<boolean> {
  // The holder's name before the age: a takeover in between has refreshed the mtime (a rename inside does).
  const holder = (await fsp.readdir(mutex).catch(() => []))[0];
  const since = await fsp.stat(mutex).then(
    (st) => Date.now() - st.mtimeMs,
    () => undefined,
  );
  if (holder === undefined || since === undefined || since <= staleMs) return false;
  try {
    await fsp.rename(path.join(mutex, holder), path.join(mutex, mine));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

function held(mutex: string, mine: string, fsp: MutexFs): MutexHold {
  return {
    release: async () => {
      await fsp.rm(path.join(mutex, mine), { recursive: true, force: true });
      // Not empty: taken over meanwhile (we were presumed dead), and now the new holder's.
      await fsp.rmdir(mutex).catch(() => undefined);
    },
  };
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
