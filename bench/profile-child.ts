/**
 * Profile child: times every fs call of N real allocations on an existing file store.
 * Usage: node dist/bench/profile-child.js <dataDir> <allocations> '<json week ids>'
 * Prints { allocations, totalMs, busyMs, ops: { name: { ms, calls } } }.
 */
import { traceBusyMs, traceOff, traceOn, traceTotals } from './fs-trace';
import { allocateEpisodeOn } from '../src/activities/allocation';
import { FileEpisodeStore } from '../src/store/file-store';

export interface ProfileChildReport {
  allocations: number;
  totalMs: number;
  /** Wall time with at least one fs call under way (calls overlap, so it can be less than their sum). */
  busyMs: number;
  ops: Record<string, { ms: number; calls: number }>;
}

async function main(): Promise<void> {
  const [dataDir, count, weeksJson] = process.argv.slice(2);
  const weeks = JSON.parse(weeksJson!) as string[];
  const store = new FileEpisodeStore(dataDir);
  const by = { kind: 'test', note: 'profile' } as const;
  const alloc = (i: number) =>
    allocateEpisodeOn(store, { allocationKey: `profile-${i}`, weekId: weeks[(i + weeks.length) % weeks.length]! }, by);
  for (let i = -3; i < 0; i++) await alloc(i);
  let totalMs = 0;
  for (let i = 0; i < Number(count); i++) {
    traceOn();
    const start = performance.now();
    await alloc(i);
    totalMs += performance.now() - start;
    traceOff();
  }
  const report: ProfileChildReport = {
    allocations: Number(count),
    totalMs,
    busyMs: traceBusyMs(),
    ops: Object.fromEntries(traceTotals()),
  };
  process.stdout.write(JSON.stringify(report));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
