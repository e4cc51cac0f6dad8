/**
 * Where the time of one allocation goes: a child process repeats allocations on the store with the worst p50/floor
 * ratio with every fs call timed (bench/fs-trace.ts), and reports the mean per allocation of each call and of what is
 * left (JavaScript: zod, JSON, the lock library, and event-loop hops between calls).
 */
import { runNode } from '../test/helpers/processes';
import type { ProfileChildReport } from './profile-child';
import type { BenchResults } from './results';

export async function profileAllocation(o: {
  rowId: string;
  dataDir: string;
  targetWeeks: string[];
  allocations: number;
}): Promise<NonNullable<BenchResults['profile']>> {
  const r = await runNode('bench/profile-child.js', [o.dataDir, String(o.allocations), JSON.stringify(o.targetWeeks)], {
    EPISODES_FAILPOINTS: '',
  });
  if (r.code !== 0) throw new Error(`profile child exited ${r.code}: ${r.stderr}`);
  const report = JSON.parse(r.stdout) as ProfileChildReport;
  const per = (x: number) => x / report.allocations;
  const perAllocationMs: Record<string, number> = { total: per(report.totalMs) };
  const calls: Record<string, number> = {};
  let inFs = 0;
  for (const [name, { ms, calls: n }] of Object.entries(report.ops)) {
    perAllocationMs[name] = per(ms);
    calls[name] = per(n);
    inFs += ms;
  }
  perAllocationMs['outside fs calls (JS, event loop)'] = Math.max(0, per(report.totalMs - inFs));
  return {
    row: o.rowId,
    allocations: report.allocations,
    per_allocation_ms: perAllocationMs,
    calls_per_allocation: calls,
  };
}
