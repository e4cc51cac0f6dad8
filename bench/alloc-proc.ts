/**
 * One contending OS process: waits for a shared start instant, then allocates `count` new keys into one week through
 * the activity's code path (`allocateEpisodeOn`), timing each. The store comes from the environment, as for a worker.
 * Usage: node dist/bench/alloc-proc.js <startAtEpochMs> <count> <keyPrefix> <week>
 * Prints one JSON object: { outcomes, latenciesMs, requestedAt, startedAt, endedAt, lock } (epoch ms; `lock`: the
 * lock's own totals in this process).
 */
import { allocateEpisodeOn } from '../src/activities/allocation';
import { isPipelineError } from '../src/domain/errors';
import { openStore } from '../src/store/open-store';
import { lockTotals, type LockTotals } from './lock-profile';
import type { AllocOutcome } from '../test/helpers/alloc-client';

export interface AllocProcReport {
  outcomes: AllocOutcome[];
  latenciesMs: number[];
  /** When each allocation was asked for (epoch ms, fractional), to compare arrival order across processes. */
  requestedAt: number[];
  startedAt: number;
  endedAt: number;
  lock: LockTotals;
}

async function main(): Promise<void> {
  const [startAt, count, prefix, week] = process.argv.slice(2);
  const store = openStore();
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - Date.now())));
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
