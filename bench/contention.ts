/**
 * 2. Contention: N OS processes allocate M new keys each into one week of one file store, all released at the same
 * instant; then, as its reference in the same run, one process alone allocates M keys into a store of its own. Reports
 * allocations/s over the whole race and the p99 of single allocations (lock waits included), and checks the outcome
 * with the store contract's own rule: sequences exactly 0..N*M-1, no key with two episodes, no episode with two keys.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { FileEpisodeStore } from '../src/store/file-store';
import { parseWeekId } from '../src/domain/week-id';
import { allocationViolations } from '../test/store/contract';
import type { AllocProcReport } from './alloc-proc';
import { runNodeBounded } from './bounded-process';
import { measured, target, type MeasuredRow, type Row } from './results';
import { summarize } from './stats';

export interface ContentionOptions {
  processes: number;
  perProcess: number;
  workDir: string;
}

const WEEK = parseWeekId('2026-W32');

/** Targets: N processes together commit at least 0.9x what one does alone; the tail stays within 10x the median. */
export const CONTENTION_THROUGHPUT_SHARE = 0.9;
export const CONTENTION_TAIL_RATIO = 10;

export async function benchContention(o: ContentionOptions): Promise<Row[]> {
  const race = await allocateTogether(path.join(o.workDir, 'race'), o.processes, o.perProcess);
  const alone = await allocateTogether(path.join(o.workDir, 'alone'), 1, o.perProcess);
  const share = race.metrics.allocs_per_s / alone.metrics.allocs_per_s;
  const tail = race.metrics.p99_ms / race.metrics.p50_ms;
  return [
    measured(
      'contention',
      'contention/file',
      `file store, ${o.processes} processes x ${o.perProcess} into one week`,
      { ...race.metrics, vs_alone: share, p99_vs_p50: tail },
      {
        checks: race.checks,
        targets: [
          // Lower is better: what one process alone commits per second, over what N together commit, at most 1/0.9.
          target('allocs/s alone / allocs/s together', 1 / share, 1 / CONTENTION_THROUGHPUT_SHARE),
          target('p99 / p50', tail, CONTENTION_TAIL_RATIO),
        ],
        notes: race.notes,
      },
    ),
    measured(
      'contention',
      'contention/file/alone',
      `file store, 1 process x ${o.perProcess} (the reference for the row above)`,
      alone.metrics,
      { checks: alone.checks, notes: alone.notes },
    ),
  ];
}

interface Together extends Pick<MeasuredRow, 'checks' | 'notes'> {
  metrics: { n: number; p50_ms: number; p99_ms: number; mean_ms: number; allocs_per_s: number };
}

async function allocateTogether(workDir: string, processes: number, perProcess: number): Promise<Together> {
  const o = { workDir, processes, perProcess };
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
  const waits = reports.reduce((s, r) => s + r.lock.waitedMs, 0);
  const holds = reports.reduce((s, r) => s + r.lock.heldMs, 0);
  const overtaken = summarize(overtakes(reports));
  return {
    metrics: {
      n: total,
      p50_ms: latency.p50,
      p99_ms: latency.p99,
      mean_ms: latency.mean,
      allocs_per_s: total / seconds,
    },
    checks: [
      {
        name: `sequences exactly 0..${total - 1}, one episode per key, one key per episode`,
        pass: violations.length === 0,
        detail: violations.length ? violations.slice(0, 5).join('; ') : `${total} allocations, no violation`,
      },
    ],
    notes: [
      `lock: mean wait ${(waits / total).toFixed(2)} ms, mean hold ${(holds / total).toFixed(2)} ms per allocation`,
      `later arrivals served first, per allocation: p50 ${overtaken.p50}, p99 ${overtaken.p99}, max ${overtaken.max}`,
    ],
  };
}

/** Per allocation: how many allocations of other processes that asked later got their sequence earlier. */
export function overtakes(reports: readonly Pick<AllocProcReport, 'outcomes' | 'requestedAt'>[]): number[] {
  const all = reports.flatMap((r, p) =>
    r.outcomes.map((o, i) => ({ p, at: r.requestedAt[i]!, seq: 'episodeId' in o ? sequenceOf(o.episodeId) : NaN })),
  );
  return all.map((a) => all.filter((b) => b.p !== a.p && b.at > a.at && b.seq < a.seq).length);
}

function sequenceOf(episodeId: string): number {
  return Number(episodeId.slice(episodeId.lastIndexOf('-') + 1));
}
