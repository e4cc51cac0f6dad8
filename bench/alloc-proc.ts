/**
 * One contending OS process: warms up, waits at a shared barrier, then allocates `count` new keys into one week
 * through the activity's code path (`allocateEpisodeOn`), timing each. The store comes from the environment, as for a
 * worker.
 * Usage: node dist/bench/alloc-proc.js <barrierDir> <count> <keyPrefix> <week> <warmupCount> <warmupWeek> [unsafe]
 * (`unsafe`: a variant of testkit/unsafe-stores.ts, for the tests' proofs; never in a measurement).
 * Warm-up: `warmupCount` keys into `warmupWeek` first, so that the race measures JIT-compiled code in every process
 * (a short-lived process spends its first few hundred allocations in V8's slower tiers), then the lock totals are
 * reset. Barrier: the process writes `<barrierDir>/ready-<keyPrefix>`, waits for `<barrierDir>/go`, which holds the
 * start instant (epoch ms), and starts then.
 * Prints one JSON object: { outcomes, latenciesMs, requestedAt, startedAt, endedAt, lock } (epoch ms; `lock`: the
 * lock's own totals in this process, warm-up excluded).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../src/activities/allocation';
import { isPipelineError } from '../src/domain/errors';
import type { EpisodeStore } from '../src/store/episode-store';
import { lockTotals, type LockTotals } from './lock-profile';
import type { AllocOutcome } from '../testkit/alloc-client';
import { openUnsafeStore, unsafeVariantSchema } from '../testkit/unsafe-stores';
import { sleep } from '../testkit/wait';

export interface AllocProcReport {
  outcomes: AllocOutcome[];
  latenciesMs: number[];
  /** When each allocation was asked for (epoch ms, fractional), to compare arrival order across processes. */
  requestedAt: number[];
  startedAt: number;
  endedAt: number;
  lock: LockTotals;
}

async function warmUp(store: EpisodeStore, prefix: string, count: number, week: string): Promise<void> {
  for (let i = 0; i < count; i++) {
    await allocateEpisodeOn(
      store,
      { allocationKey: `${prefix}-warm-${i}`, weekId: week },
      { kind: 'test', note: 'warm-up' },
    );
  }
  Object.assign(lockTotals, { acquisitions: 0, waitedMs: 0, heldMs: 0 } satisfies LockTotals);
}

/** Ready, then the start instant the parent writes into `go` once every process is ready. */
async function barrier(dir: string, prefix: string): Promise<void> {
  writeFileSync(path.join(dir, `ready-${prefix}`), '');
  const go = path.join(dir, 'go');
  while (!existsSync(go)) await sleep(1);
  // The parent writes the file by rename, so it is never seen half-written.
  await sleep(Math.max(0, Number(readFileSync(go, 'utf8')) - Date.now()));
}

async function main(): Promise<void> {
  const [barrierDir, count, prefix, week, warmupCount, warmupWeek, unsafe] = process.argv.slice(2);
  const store = openUnsafeStore(unsafeVariantSchema.optional().parse(unsafe));
  await warmUp(store, prefix!, Number(warmupCount ?? 0), warmupWeek!);
  await barrier(barrierDir!, prefix!);
  const report: AllocProcReport = {
    outcomes: [],
    latenciesMs: [],
    requestedAt: [],
    startedAt: Date.now(),
    endedAt: 0,
    lock: lockTotals,
  };
  for (let i = 0; i < Number(count); i++) {
    const key = `${prefix}-${i}`;
    const t0 = performance.now();
    report.requestedAt.push(performance.timeOrigin + t0);
    try {
      const r = await allocateEpisodeOn(store, { allocationKey: key, weekId: week! }, { kind: 'test', note: prefix! });
      report.outcomes.push({ key, week: week!, episodeId: r.episodeId, created: r.created });
    } catch (e) {
      report.outcomes.push({ key, week: week!, error: isPipelineError(e) ? e.type : String(e) });
    }
    report.latenciesMs.push(performance.now() - t0);
  }
  report.endedAt = Date.now();
  await store.close();
  process.stdout.write(JSON.stringify(report));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
