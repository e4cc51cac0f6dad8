/**
 * Where lock time goes, measured from outside the lock: wraps `withLock` of the store's lock class so that every
 * acquisition adds its wait (call to critical section) and its hold (the critical section) to process totals. Used
 * in-process by bench/alloc-proc.ts, and preloaded (`--require`) into worker processes with BENCH_LOCK_STATS_FILE set,
 * which get their totals written there at exit. Works on the code before the handoff too, for the "before" profile.
 */
import { writeFileSync } from 'node:fs';
import * as lockModule from '../src/store/pipeline-lock';

export interface LockTotals {
  acquisitions: number;
  waitedMs: number;
  heldMs: number;
  /** Calls answered by another process's holding (delegated), so never acquired here. */
  served: number;
}

export const lockTotals: LockTotals = { acquisitions: 0, waitedMs: 0, heldMs: 0, served: 0 };

type WithLock = (critical: (guard: unknown) => Promise<unknown>, ...rest: unknown[]) => Promise<unknown>;
const classes = lockModule as unknown as Record<string, { prototype: { withLock: WithLock } } | undefined>;
const target = (classes.DirectoryLock ?? classes.PipelineLock)!.prototype;
const original = target.withLock;
target.withLock = async function (this: unknown, critical, ...rest) {
  const asked = performance.now();
  let ran = false;
  const result = await original.call(
    this,
    async (guard) => {
      const got = performance.now();
      ran = true;
      lockTotals.acquisitions++;
      lockTotals.waitedMs += got - asked;
      try {
        return await critical(guard);
      } finally {
        lockTotals.heldMs += performance.now() - got;
      }
    },
    ...rest,
  );
  if (!ran) lockTotals.served++;
  return result;
};

const file = process.env.BENCH_LOCK_STATS_FILE;
if (file) process.once('exit', () => writeFileSync(file, JSON.stringify(lockTotals)));
