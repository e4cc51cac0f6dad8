/**
 * 2. Contention: N OS processes allocate M new keys each into one week of one file store, all released at the same
 * instant. Reports allocations/s over the whole race and the p99 of single allocations (lock waits included), and
 * checks the outcome with the store contract's own rule: sequences exactly 0..N*M-1, no key with two episodes, no
 * episode with two keys.
 */
import { mkdirSync } from 'node:fs';
import { FileEpisodeStore } from '../src/store/file-store';
import { parseWeekId } from '../src/domain/week-id';
import { allocationViolations } from '../test/store/contract';
import type { AllocProcReport } from './alloc-proc';
import { runNodeBounded } from './bounded-process';
import { measured, type Row } from './results';
import { summarize } from './stats';

export interface ContentionOptions {
  processes: number;
  perProcess: number;
  workDir: string;
}

const WEEK = parseWeekId('2026-W32');

export async function benchContention(o: ContentionOptions): Promise<Row[]> {
  mkdirSync(o.workDir, { recursive: true });
  const store = new FileEpisodeStore(o.workDir);
  // Late enough for every process to have loaded its modules: the race starts together.
  const startAt = Date.now() + 2_000;
  const runs = Array.from({ length: o.processes }, (_, p) =>
    runNodeBounded(
      'bench/alloc-proc.js',
      [String(startAt), String(o.perProcess), `race-p${p}`, WEEK],
      { EPISODES_DATA_DIR: o.workDir, EPISODES_STORE_URL: '', EPISODES_FAILPOINTS: '' },
      600_000,
    ),
  );
  const reports = (await Promise.all(runs)).map((r) => {
    if (r.code !== 0) throw new Error(`allocation process exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as AllocProcReport;
  });
  const outcomes = reports.flatMap((r) => r.outcomes);
  const violations = allocationViolations(outcomes, await store.listEpisodes({ weekId: WEEK }));
  const total = o.processes * o.perProcess;
  const seconds = (Math.max(...reports.map((r) => r.endedAt)) - Math.min(...reports.map((r) => r.startedAt))) / 1000;
  const latency = summarize(reports.flatMap((r) => r.latenciesMs));
  return [
    measured(
      'contention',
      'contention/file',
      `file store, ${o.processes} processes x ${o.perProcess} into one week`,
      { n: total, p50_ms: latency.p50, p99_ms: latency.p99, mean_ms: latency.mean, allocs_per_s: total / seconds },
      {
        checks: [
          {
            name: `sequences exactly 0..${total - 1}, one episode per key, one key per episode`,
            pass: violations.length === 0,
            detail: violations.length ? violations.slice(0, 5).join('; ') : `${total} allocations, no violation`,
          },
        ],
      },
    ),
  ];
}
