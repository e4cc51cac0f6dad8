/**
 * Where lock time goes, measured from outside the lock: wraps `withLock` of the store's lock class so that every
 * acquisition adds its wait (call to critical section) and its hold (the critical section) to process totals. Used
 * in-process by bench/alloc-proc.ts, and preloaded (`--require`) into worker processes with BENCH_LOCK_STATS_FILE set,
 * which get their totals written there at exit.
 */
import { writeFileSync } from 'node:fs';
import * as lockModule from '../src/store/pipeline-lock';

export interface LockTotals {
  acquisitions: number;
  waitedMs: number;
  heldMs: number;
}

export const lockTotals: LockTotals = { acquisitions: 0, waitedMs: 0, heldMs: 0 };

type WithLock = (critical: (guard: unknown) => Promise<unknown>, ...rest: unknown[]) => Promise<unknown>;
const classes = lockModule as unknown as Record<string, { prototype: { withLock: WithLock } } | undefined>;
const target = (classes.DirectoryLock ?? classes.PipelineLock)!.prototype;
const original = target.withLock;
target.withLock = function (this: unknown, critical, ...rest) {
  const asked = performance.now();
  return original.call(
    this,
    async (guard) => {
      const got = performance.now();
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
};

const file = process.env.BENCH_LOCK_STATS_FILE;
if (file) process.once('exit', () => writeFileSync(file, JSON.stringify(lockTotals)));
