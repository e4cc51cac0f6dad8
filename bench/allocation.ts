/**
 * 1. Allocation against the physical floor. Stores of every size are seeded side by side, then each round runs, in a
 * fresh random order, one floor write and one new-episode allocation on every store, so that the machine's noise
 * lands on all of them alike; the growth ratio (largest vs smallest store) is therefore measured in the same rounds.
 * Every store gets the same requests: round r allocates key `bench-r<r>` in the r-th of the newest weeks, weeks that
 * all sizes share, so the only difference between the stores is how much history lies beside them.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../src/activities/allocation';
import { formatEpisodeId } from '../src/domain/episode-id';
import { isPipelineError, ErrorType } from '../src/domain/errors';
import type { WeekId } from '../src/domain/week-id';
import type { EpisodeStore } from '../src/store/episode-store';
import { PostgresEpisodeStore } from '../src/store/postgres-store';
import { floorWrite, floorWriteWithDirSync, protocolFloorWrite, stateSizedPayload } from './floor';
import { makeDurable, seedPostgresStores, startBenchPostgres, type BenchPostgres } from './postgres';
import { measured, target, type Check, type MeasuredRow, type Row } from './results';
import { seedKey, seedPlan, type SeedWeek } from './seed-data';
import { seedFileStore } from './seed-file-store';
import { seededRandom } from '../src/vendor-sim/faults';
import { nowMs, shuffled, summarize, timed } from './stats';

/** Targets from the issue: p50 within 3x the floor; p50 at the largest size within 1.3x of the smallest. */
export const FLOOR_RATIO_LIMIT = 3;
export const GROWTH_RATIO_LIMIT = 1.3;
/** How many of the newest weeks take the measured allocations (fewer when the smallest store has fewer weeks). */
const TARGET_WEEKS = 25;

export interface AllocationBenchOptions {
  sizes: number[];
  rounds: number;
  warmupRounds: number;
  maxSeconds: number;
  workDir: string;
  postgres: boolean;
  log: (message: string) => void;
}

interface Subject {
  id: string;
  label: string;
  kind: 'floor' | 'file' | 'postgres';
  size: number;
  run(round: number): Promise<void>;
  samples: number[];
  checks: Check[];
}

export interface AllocationOutcome {
  rows: Row[];
  /** The file store row with the worst p50/floor ratio, for the profile. */
  worstFile: { rowId: string; dataDir: string; targetWeeks: WeekId[] } | null;
  cleanup(): Promise<void>;
}

const by = { kind: 'test', note: 'bench' } as const;

export async function benchAllocation(o: AllocationBenchOptions): Promise<AllocationOutcome> {
  const sizes = [...o.sizes].sort((a, b) => a - b);
  const plan = seedPlan(sizes.at(-1)!);
  const smallest = prefixWeeks(plan, sizes[0]!);
  const targetWeeks = smallest.slice(0, Math.min(TARGET_WEEKS, smallest.length)).map((w) => w.weekId);
  const weekFor = (round: number) =>
    targetWeeks[((round % targetWeeks.length) + targetWeeks.length) % targetWeeks.length]!;
  const alloc = (store: EpisodeStore, round: number) =>
    allocateEpisodeOn(store, { allocationKey: `bench-r${round}`, weekId: weekFor(round) }, by);

  const subjects: Subject[] = [];
  const stores: EpisodeStore[] = [];
  let pg: BenchPostgres | undefined;
  const allocationSubject = async (kind: 'file' | 'postgres', size: number, store: EpisodeStore): Promise<Subject> => {
    stores.push(store);
    const checks = await validateSeededStore(store, prefixWeeks(plan, size));
    const created = { name: 'every measured allocation created a new episode', pass: true, detail: 'all created' };
    checks.push(created);
    return {
      id: `allocation/${kind}/${size}`,
      label: `${kind} store, ${size.toLocaleString('en-US')} stored`,
      kind,
      size,
      samples: [],
      checks,
      run: async (round) => {
        const r = await alloc(store, round);
        if (!r.created) Object.assign(created, { pass: false, detail: `round ${round} got ${r.episodeId} back` });
      },
    };
  };

  const floorDir = path.join(o.workDir, 'floor');
  await fs.mkdir(floorDir, { recursive: true });
  const payload = stateSizedPayload();
  const protocolDir = path.join(o.workDir, 'floor-protocol');
  for (const d of ['keys', 'weeks', 'episodes']) await fs.mkdir(path.join(protocolDir, d), { recursive: true });
  subjects.push(
    {
      id: 'allocation/floor',
      label: `floor: temp, fsync, rename (${payload.length} B)`,
      kind: 'floor',
      size: 0,
      samples: [],
      checks: [],
      run: () => floorWrite(floorDir, payload),
    },
    {
      id: 'allocation/floor-dirsync',
      label: 'floor + directory fsync',
      kind: 'floor',
      size: 0,
      samples: [],
      checks: [],
      run: () => floorWriteWithDirSync(floorDir, payload),
    },
    {
      id: 'allocation/floor-protocol',
      label: 'protocol floor: 3 files flushed together, 2 ordered commits',
      kind: 'floor',
      size: 0,
      samples: [],
      checks: [],
      run: (round) => protocolFloorWrite(protocolDir, round, payload),
    },
  );

  for (const size of sizes) {
    const started = nowMs();
    const store = await seedFileStore(path.join(o.workDir, `file-${size}`), prefixWeeks(plan, size));
    o.log(`seeded file store with ${size} episodes in ${((nowMs() - started) / 1000).toFixed(1)} s`);
    subjects.push(await allocationSubject('file', size, store));
  }

  let pgNote: string | undefined;
  if (o.postgres) {
    try {
      pg = await startBenchPostgres();
      const started = nowMs();
      const urls = await seedPostgresStores(pg, plan, sizes, path.join(o.workDir, 'pg-media'));
      o.log(`seeded postgres stores in ${((nowMs() - started) / 1000).toFixed(1)} s`);
      await makeDurable(pg);
      for (const size of sizes) {
        const store = new PostgresEpisodeStore({ url: urls.get(size)!, mediaDir: path.join(o.workDir, 'pg-media') });
        subjects.push(await allocationSubject('postgres', size, store));
      }
      pgNote = `PostgreSQL ${pg.durability}, on this machine over loopback`;
    } catch (e) {
      pgNote = `PostgreSQL not measured: ${(e as Error).message.split('\n')[0]}`;
      o.log(pgNote);
    }
  }

  const random = seededRandom(20260803);
  const deadline = nowMs() + o.maxSeconds * 1000;
  let rounds = 0;
  for (let round = -o.warmupRounds; round < o.rounds; round++) {
    for (const subject of shuffled(subjects, random)) {
      const { ms } = await timed(() => subject.run(round));
      if (round >= 0) subject.samples.push(ms);
    }
    if (round >= 0) rounds++;
    if (round >= 0 && nowMs() > deadline) {
      o.log(`allocation: stopped after ${rounds} rounds (time bound ${o.maxSeconds} s)`);
      break;
    }
  }
  o.log(`allocation: ${rounds} rounds measured`);

  const rows = toRows(subjects, pgNote, o.postgres);
  const fileRows = rows.filter((r): r is MeasuredRow => r.status === 'measured' && r.id.startsWith('allocation/file/'));
  const worst = fileRows.sort((a, b) => b.metrics.p50_vs_floor! - a.metrics.p50_vs_floor!)[0];
  return {
    rows,
    worstFile: worst
      ? { rowId: worst.id, dataDir: path.join(o.workDir, `file-${worst.id.split('/')[2]}`), targetWeeks }
      : null,
    cleanup: async () => {
      for (const s of stores) await s.close();
      await pg?.stop();
    },
  };
}

function toRows(subjects: Subject[], pgNote: string | undefined, pgWanted: boolean): Row[] {
  const floor = summarize(subjects.find((s) => s.id === 'allocation/floor')!.samples);
  const protocol = summarize(subjects.find((s) => s.id === 'allocation/floor-protocol')!.samples);
  const rows: Row[] = [];
  for (const s of subjects) {
    const sum = summarize(s.samples);
    const metrics: Record<string, number> = { p50_ms: sum.p50, p99_ms: sum.p99, mean_ms: sum.mean, n: sum.n };
    const targets = [];
    if (s.id !== 'allocation/floor') metrics.p50_vs_floor = sum.p50 / floor.p50;
    if (s.kind === 'file') metrics.p50_vs_protocol_floor = sum.p50 / protocol.p50;
    if (s.kind !== 'floor') {
      targets.push(target('p50 / floor p50', sum.p50 / floor.p50, FLOOR_RATIO_LIMIT));
      const sameKind = subjects.filter((x) => x.kind === s.kind);
      const smallest = sameKind[0]!;
      if (s === sameKind.at(-1) && s !== smallest) {
        const growth = sum.p50 / summarize(smallest.samples).p50;
        metrics.p50_vs_smallest = growth;
        targets.push(target(`p50 / p50 at ${smallest.size.toLocaleString('en-US')}`, growth, GROWTH_RATIO_LIMIT));
      }
    }
    rows.push(
      measured('allocation', s.id, s.label, metrics, {
        targets,
        checks: s.checks,
        notes: s.kind === 'postgres' && pgNote ? [pgNote] : [],
      }),
    );
  }
  if (pgWanted && !subjects.some((s) => s.kind === 'postgres')) {
    rows.push({
      id: 'allocation/postgres',
      section: 'allocation',
      label: 'postgres store',
      status: 'not-measured',
      reason: pgNote ?? 'PostgreSQL unavailable',
    });
  }
  return rows;
}

/** The newest episodes of the plan, `size` of them, as weeks (the last week possibly partial). */
export function prefixWeeks(plan: readonly SeedWeek[], size: number): SeedWeek[] {
  const weeks: SeedWeek[] = [];
  let remaining = size;
  for (const week of plan) {
    if (remaining <= 0) break;
    const episodes = week.episodes.slice(0, remaining);
    weeks.push({ ...week, episodes });
    remaining -= episodes.length;
  }
  return weeks;
}

/**
 * Real allocations on the seeded store before measuring: a seeded key in the newest and in the oldest week gets its
 * episode back, a seeded key asked for another week is refused, and the oldest episode reads back through the schema.
 */
async function validateSeededStore(store: EpisodeStore, weeks: SeedWeek[]): Promise<Check[]> {
  const checks: Check[] = [];
  const check = (name: string, pass: boolean, detail: string) => checks.push({ name, pass, detail });
  const newest = weeks[0]!;
  const oldest = weeks.at(-1)!;
  for (const week of [newest, oldest]) {
    const seq = week.episodes.length - 1;
    const key = seedKey(week.mondayUtc, seq);
    const r = await allocateEpisodeOn(store, { allocationKey: key, weekId: week.weekId }, by);
    check(
      `seeded key in ${week.weekId} returns its episode`,
      !r.created && r.episodeId === formatEpisodeId(week.weekId, seq),
      JSON.stringify(r),
    );
  }
  const foreign = seedKey(oldest.mondayUtc, 0);
  const refusal = await allocateEpisodeOn(store, { allocationKey: foreign, weekId: newest.weekId }, by).then(
    (r) => `allocated ${r.episodeId}`,
    (e: unknown) => (isPipelineError(e) ? e.type : String(e)),
  );
  check('refuses a seeded key for another week', refusal === ErrorType.AllocationKeyCrossesWeek, refusal);
  const state = await store.getEpisode(oldest.episodes[0]!.state.episode_id);
  check('reads the oldest episode back', state?.status === oldest.episodes[0]!.state.status, String(state?.status));
  return checks;
}
