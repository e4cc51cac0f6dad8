/**
 * 2. Contention: N OS processes allocate M new keys each into one week of one file store, all released at the same
 * instant; as its reference, in the same run, one process alone allocates the same N*M keys into one week of a store
 * of its own (the same work on the same week size: an allocation rewrites its week's index, so a week of N*M costs
 * more per allocation than a week of M). Every process first warms up (allocations into another week, excluded), so
 * both sides measure compiled code, not V8's first tiers. Race and reference alternate for `rounds` rounds, each in
 * fresh directories, so that the disk's drift lands on both (its speed swings by 2x within seconds on the VM measured);
 * the target is on the median round. Reports allocations/s over the whole race, the p99 of single allocations (lock
 * waits included), and checks the outcome with the store contract's own rule: sequences exactly 0..N*M-1, no key with
 * two episodes, no episode with two keys.
 */
import { mkdirSync, renameSync, writeFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { FileEpisodeStore } from '../src/store/file-store';
import { parseWeekId } from '../src/domain/week-id';
import { allocationViolations } from '../testkit/store-contract';
import type { UnsafeVariant } from '../testkit/unsafe-stores';
import { waitFor } from '../testkit/wait';
import type { AllocProcReport } from './alloc-proc';
import { runNodeBounded } from './bounded-process';
import { cpuBusyShare, cpuNote, cpuSample } from './cpu';
import { measured, target, type MeasuredRow, type Row } from './results';
import { summarize } from './stats';

export interface ContentionOptions {
  processes: number;
  perProcess: number;
  /** Allocations each process makes into another week before the race (not measured). */
  warmup: number;
  rounds: number;
  workDir: string;
  /** Test-only: allocate through a store without this protection (the smoke test's proof that the check can fail). */
  unsafe?: UnsafeVariant;
}

const WEEK = parseWeekId('2026-W32');
const WARMUP_WEEK = parseWeekId('2026-W31');

/** Targets: N processes together commit at least 0.9x what one does alone; the tail stays within 10x the median. */
export const CONTENTION_THROUGHPUT_SHARE = 0.9;
export const CONTENTION_TAIL_RATIO = 10;

export async function benchContention(o: ContentionOptions): Promise<Row[]> {
  const rounds: { race: Together; alone: Together }[] = [];
  for (let r = 0; r < o.rounds; r++) {
    const dir = (name: string) => path.join(o.workDir, `round-${r}`, name);
    const together = { warmup: o.warmup, unsafe: o.unsafe };
    const race = () =>
      allocateTogether({ ...together, dataDir: dir('race'), processes: o.processes, perProcess: o.perProcess });
    const alone = () =>
      allocateTogether({ ...together, dataDir: dir('alone'), processes: 1, perProcess: o.processes * o.perProcess });
    // Alternate which goes first.
    if (r % 2 === 0) rounds.push({ race: await race(), alone: await alone() });
    else {
      const a = await alone();
      rounds.push({ race: await race(), alone: a });
    }
  }
  const shares = rounds.map((r) => r.race.metrics.allocs_per_s / r.alone.metrics.allocs_per_s);
  const median = rounds[indexOfMedian(shares)]!;
  const share = median.race.metrics.allocs_per_s / median.alone.metrics.allocs_per_s;
  const tail = median.race.metrics.p99_ms / median.race.metrics.p50_ms;
  const perRound = `together / alone per round: ${shares.map((s) => s.toFixed(2)).join(', ')} (the median round reported)`;
  return [
    measured(
      'contention',
      'contention/file',
      `file store, ${o.processes} processes x ${o.perProcess} into one week`,
      { ...median.race.metrics, vs_alone: share, p99_vs_p50: tail },
      {
        checks: rounds.flatMap((r) => r.race.checks),
        targets: [
          // Lower is better: what one process alone commits per second, over what N together commit, at most 1/0.9.
          target('allocs/s alone / allocs/s together', 1 / share, 1 / CONTENTION_THROUGHPUT_SHARE),
          target('p99 / p50', tail, CONTENTION_TAIL_RATIO),
        ],
        notes: [perRound, ...median.race.notes],
      },
    ),
    measured(
      'contention',
      'contention/file/alone',
      `file store, 1 process x ${o.processes * o.perProcess} into one week (the reference for the row above)`,
      median.alone.metrics,
      { checks: rounds.flatMap((r) => r.alone.checks), notes: median.alone.notes },
    ),
  ];
}

function indexOfMedian(values: readonly number[]): number {
  const order = values.map((v, i) => ({ v, i })).sort((a, b) => a.v - b.v);
  return order[Math.floor((order.length - 1) / 2)]!.i;
}

interface Together extends Pick<MeasuredRow, 'checks' | 'notes'> {
  metrics: { n: number; p50_ms: number; p99_ms: number; mean_ms: number; allocs_per_s: number };
}

export interface RaceOptions {
  dataDir: string;
  processes: number;
  perProcess: number;
  week: string;
  warmup: number;
  /** Key prefix; process p allocates `<prefix>-p<p>-<i>`. */
  prefix: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Test-only: the processes allocate through a store without this protection (testkit/unsafe-stores.ts). */
  unsafe?: UnsafeVariant;
}

/**
 * `processes` OS processes (bench/alloc-proc.ts) allocate `perProcess` keys each into `week` of the file store in
 * `dataDir`, started at one instant once every process has loaded and warmed up. Their reports, in process order,
 * and how busy the CPUs were from the start to the last process's exit.
 */
export async function raceAllocations(
  o: RaceOptions,
): Promise<{ reports: AllocProcReport[]; cpuBusy: number | undefined }> {
  const barrier = path.join(o.dataDir, '..', `${path.basename(o.dataDir)}.barrier`);
  mkdirSync(barrier, { recursive: true });
  const runs = Array.from({ length: o.processes }, (_, p) =>
    runNodeBounded(
      'bench/alloc-proc.js',
      [
        barrier,
        String(o.perProcess),
        `${o.prefix}-p${p}`,
        o.week,
        String(o.warmup),
        WARMUP_WEEK,
        ...(o.unsafe ? [o.unsafe] : []),
      ],
      { EPISODES_DATA_DIR: o.dataDir, EPISODES_STORE_URL: '', EPISODES_FAILPOINTS: '', ...o.env },
      o.timeoutMs ?? 600_000,
    ),
  );
  const ready = waitFor(
    () => readdirSync(barrier).filter((f) => f.startsWith('ready-')).length === o.processes,
    o.timeoutMs ?? 600_000,
    `${o.processes} allocation processes to warm up`,
  );
  // A process that fails before the start: the others are let go too (so that they end), and the check below reports it.
  const oneFailed = Promise.race(runs.map((run) => run.then((r) => (r.code === 0 ? new Promise(() => undefined) : r))));
  await Promise.race([ready, oneFailed]);
  writeFileSync(path.join(barrier, 'go.tmp'), String(Date.now() + 20));
  renameSync(path.join(barrier, 'go.tmp'), path.join(barrier, 'go'));
  const before = cpuSample();
  const results = await Promise.all(runs);
  const cpuBusy = cpuBusyShare(before, cpuSample());
  const reports = results.map((r) => {
    if (r.code !== 0) throw new Error(`allocation process exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as AllocProcReport;
  });
  return { reports, cpuBusy };
}

async function allocateTogether(
  o: Pick<RaceOptions, 'dataDir' | 'processes' | 'perProcess' | 'warmup' | 'unsafe'>,
): Promise<Together> {
  const { dataDir, processes, perProcess } = o;
  mkdirSync(dataDir, { recursive: true });
  const store = new FileEpisodeStore(dataDir);
  const { reports, cpuBusy } = await raceAllocations({ ...o, week: WEEK, prefix: 'race' });
  const outcomes = reports.flatMap((r) => r.outcomes);
  const violations = allocationViolations(outcomes, await store.listEpisodes({ weekId: WEEK }));
  const total = processes * perProcess;
  const seconds = (Math.max(...reports.map((r) => r.endedAt)) - Math.min(...reports.map((r) => r.startedAt))) / 1000;
  const latency = summarize(reports.flatMap((r) => r.latenciesMs));
  const waits = reports.reduce((s, r) => s + r.lock.waitedMs, 0);
  const holds = reports.reduce((s, r) => s + r.lock.heldMs, 0);
  const holdings = reports.reduce((s, r) => s + r.lock.acquisitions, 0);
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
      `lock: mean wait ${(waits / total).toFixed(2)} ms, mean hold ${(holds / total).toFixed(2)} ms per allocation, ` +
        `held ${((holds / (seconds * 1000)) * 100).toFixed(0)}% of the time (the rest: handoffs and work outside it)`,
      `${holdings} holdings for ${total} allocations`,
      `later arrivals served first, per allocation: p50 ${overtaken.p50}, p99 ${overtaken.p99}, max ${overtaken.max}`,
      cpuNote(cpuBusy),
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
