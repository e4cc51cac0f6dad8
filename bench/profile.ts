/**
 * Where the time of one allocation goes: a child process repeats allocations on the store with the worst p50/floor
 * ratio with every fs call timed (bench/fs-trace.ts), and reports the mean per allocation of each call and of what is
 * left (JavaScript: zod, JSON, the lock library, and event-loop hops between calls).
 */
import { runNodeBounded } from './bounded-process';
import type { ProfileChildReport } from './profile-child';
import type { Profile } from './results';

export async function profileAllocation(o: {
  rowId: string;
  dataDir: string;
  targetWeeks: string[];
  allocations: number;
}): Promise<Profile> {
  const r = await runNodeBounded(
    'bench/profile-child.js',
    [o.dataDir, String(o.allocations), JSON.stringify(o.targetWeeks)],
    { EPISODES_FAILPOINTS: '' },
    300_000,
  );
  if (r.code !== 0) throw new Error(`profile child exited ${r.code}: ${r.stderr}`);
  const report = JSON.parse(r.stdout) as ProfileChildReport;
  const per = (x: number) => x / report.allocations;
  const parts: Record<string, number> = {};
  const calls: Record<string, number> = {};
  for (const [name, { ms, calls: n }] of Object.entries(report.ops)) {
    parts[name] = per(ms);
    calls[name] = per(n);
  }
  parts['outside fs calls (JS, event loop)'] = Math.max(0, per(report.totalMs - report.busyMs));
  return {
    row: o.rowId,
    what:
      'wall time of each fs call of one allocation (bench/fs-trace.ts); calls made at the same time overlap, so ' +
      'parts may add up to more than the whole',
    samples: report.allocations,
    total_ms: per(report.totalMs),
    parts_ms: parts,
    calls,
  };
}
