/**
 * 3. The Temporal path on the local dev server.
 *
 * Latency: `weeklyEpisodeWorkflow` start-to-result next to its floor (an empty workflow calling one no-op activity),
 * both on one in-process worker, alternating which goes first, so they share every condition but their own work. A
 * weekly run starts the episode's production, which pays the (zero-latency) simulator and parks at approval; the
 * next measurement waits for that, so every measurement runs on an otherwise idle worker.
 *
 * Throughput: the real weekly schedule, paused, backfilled over N past Mondays; once the N runs are queued, worker
 * processes (`node dist/src/worker.js`, as deployed) start and drain them. Time runs from the first worker being ready
 * to the last run closing (server close time), so worker start-up is excluded and a second worker's head start is not.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { createActivities } from '../src/activities';
import { weeklyScheduleOptions } from '../src/cli/schedule-commands';
import { FileEpisodeStore } from '../src/store/file-store';
import type { weeklyEpisodeWorkflow } from '../src/workflows/weekly-episode';
import { spawnNode } from '../testkit/processes';
import { waitForScheduledRuns } from '../testkit/schedules';
import { DEV_SERVER_EXTRA_ARGS, createTestWorker } from '../testkit/temporal';
import { createFloorActivities } from './floor-activities';
import { historyProfile, taskLatencies } from './history-phases';
import type { LockTotals } from './lock-profile';
import { cpuBusyShare, cpuNote, cpuSample, pidsNamed, processCpuMs } from './cpu';
import { measured, target, type Profile, type Row } from './results';
import { nowMs, summarize, timed, withTimeout } from './stats';
import { blockWeek, waitForApprovalPoint, type TemporalContext, BENCH_IN_PROCESS } from './temporal-context';
import type { floorWorkflow } from './workflows/floor';

export const WORKFLOW_FLOOR_RATIO_LIMIT = 1.5;
const WEEK_MS = 7 * 86_400_000;

export interface TemporalOptions {
  latencyPairs: number;
  warmupPairs: number;
  backfillRuns: number;
  /** One drain per entry, with that many worker processes. */
  drainWorkers: readonly number[];
  workDir: string;
  log: (message: string) => void;
  addProfile: (profile: Profile) => void;
}

export async function benchTemporal(ctx: TemporalContext, o: TemporalOptions): Promise<Row[]> {
  const rows = await latency(ctx, o);
  const drains: Row[] = [];
  for (const workers of o.drainWorkers) drains.push(await drain(ctx, o, workers));
  const rate = (w: number, metric: 'runs_per_s' | 'productions_parked_per_s') => {
    const row = drains.find((r) => r.id === `temporal/drain/${w}`);
    return row?.status === 'measured' ? row.metrics[metric] : undefined;
  };
  const two = drains.find((r) => r.id === 'temporal/drain/2');
  // More workers must never mean fewer runs per second: 1-worker rate over the 2-worker one, at most 1. Measured on
  // the weekly runs closing and on the whole work the backfill causes (every production paid and parked).
  for (const metric of ['runs_per_s', 'productions_parked_per_s'] as const) {
    const one = rate(1, metric);
    const mine = rate(2, metric);
    if (two?.status === 'measured' && one && mine)
      two.targets.push(target(`${metric} 1 worker / 2 workers`, one / mine, 1));
  }
  return [...rows, ...drains];
}

async function latency(ctx: TemporalContext, o: TemporalOptions): Promise<Row[]> {
  const dir = path.join(o.workDir, 'latency');
  mkdirSync(dir, { recursive: true });
  const store = new FileEpisodeStore(dir);
  const taskQueue = `bench-latency-${process.pid}`;
  const client = ctx.env.client;
  const worker = await createTestWorker(
    {
      connection: ctx.env.nativeConnection,
      taskQueue,
      workflowBundle: ctx.bundle,
      activities: { ...createActivities(ctx.deps(store)), ...createFloorActivities() },
    },
    BENCH_IN_PROCESS,
  );
  const runs = {
    weekly: [] as { workflowId: string; ms: number }[],
    floor: [] as { workflowId: string; ms: number }[],
  };
  const weekly = async (i: number) => {
    const result = await client.workflow.execute<typeof weeklyEpisodeWorkflow>('weeklyEpisodeWorkflow', {
      workflowId: `bench-weekly-${i}`,
      taskQueue,
      // 25 weeks in turn, as in the allocation rows: week indexes stay the size of real weeks.
      args: [{ week: blockWeek(2030, (i + 25) % 25) }],
    });
    return result.episodeId;
  };
  const floor = (i: number) =>
    client.workflow.execute<typeof floorWorkflow>('floorWorkflow', { workflowId: `bench-floor-${i}`, taskQueue });
  await worker.runUntil(async () => {
    for (let i = -o.warmupPairs; i < o.latencyPairs; i++) {
      const order = i % 2 === 0 ? (['weekly', 'floor'] as const) : (['floor', 'weekly'] as const);
      for (const which of order) {
        if (which === 'floor') {
          const { ms } = await timed(() => withTimeout(floor(i), 60_000, `floor workflow ${i}`));
          if (i >= 0) runs.floor.push({ workflowId: `bench-floor-${i}`, ms });
        } else {
          const { ms, value: episodeId } = await timed(() => withTimeout(weekly(i), 60_000, `weekly run ${i}`));
          if (i >= 0) runs.weekly.push({ workflowId: `bench-weekly-${i}`, ms });
          // Not timed: let the production this run started park at approval before the next measurement.
          await waitForApprovalPoint(client, episodeId, 60_000);
        }
      }
    }
  });
  const f = summarize(runs.floor.map((r) => r.ms));
  const w = summarize(runs.weekly.map((r) => r.ms));
  o.addProfile(await historyProfile(client, 'temporal/latency/weekly', runs.weekly));
  o.addProfile(await historyProfile(client, 'temporal/latency/floor', runs.floor));
  return [
    measured(
      'temporal',
      'temporal/latency/floor',
      'floor workflow: one no-op activity, start to result',
      { n: f.n, p50_ms: f.p50, p99_ms: f.p99, mean_ms: f.mean },
      { notes: [`dev server started with ${DEV_SERVER_EXTRA_ARGS.join(' ')} (see testkit/temporal.ts)`] },
    ),
    measured(
      'temporal',
      'temporal/latency/weekly',
      'weeklyEpisodeWorkflow (file store), start to result',
      { n: w.n, p50_ms: w.p50, p99_ms: w.p99, mean_ms: w.mean, p50_vs_workflow_floor: w.p50 / f.p50 },
      {
        targets: [target('p50 / floor workflow p50', w.p50 / f.p50, WORKFLOW_FLOOR_RATIO_LIMIT)],
        notes: ['the run allocates, tags itself and starts the production child; production is not waited for'],
      },
    ),
  ];
}

async function drain(ctx: TemporalContext, o: TemporalOptions, workers: number): Promise<Row> {
  const name = `bench-drain-${workers}w-${process.pid}`;
  const dataDir = path.join(o.workDir, name);
  mkdirSync(dataDir, { recursive: true });
  const store = new FileEpisodeStore(dataDir);
  const client = ctx.env.client;
  const options = weeklyScheduleOptions({ scheduleId: name, taskQueue: name, timezone: 'UTC', workflowIdBase: name });
  const handle = await client.schedule.create({
    ...options,
    state: { paused: true, note: 'benchmark: backfill only' },
  });
  try {
    // N past Mondays 09:00 UTC, one run and one episode per ISO week; each phase its own weeks (see blockWeek).
    const now = new Date();
    const day = (now.getUTCDay() + 6) % 7;
    const lastMonday = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - day, 9);
    const end = lastMonday - WEEK_MS - (workers - 1) * o.backfillRuns * WEEK_MS;
    await handle.backfill({ start: new Date(end - (o.backfillRuns - 1) * WEEK_MS - 1000), end: new Date(end + 1000) });
    await waitForCount(client, name, o.backfillRuns, 120_000);
    o.log(`temporal: ${o.backfillRuns} backfilled runs queued for ${workers} worker(s)`);

    const statsFiles = Array.from({ length: workers }, (_, i) => path.join(o.workDir, `${name}-lock-${i}.json`));
    const procs = statsFiles.map((file) =>
      spawnNode('src/worker.js', [], {
        ...ctx.workerEnv(name, dataDir),
        NODE_OPTIONS: `--require "${path.join(__dirname, 'lock-profile.js')}"`,
        BENCH_LOCK_STATS_FILE: file,
      }),
    );
    let runIds: string[] = [];
    try {
      const ready = await Promise.all(procs.map((p) => workerReadyAt(p, 120_000)));
      const cpuFrom = cpuSample();
      const byProcessFrom = cpuByProcess(procs);
      const runs = await waitForScheduledRuns(client, name, o.backfillRuns, 300_000);
      const parked = await waitForAll(store, o.backfillRuns, 'awaiting_approval', 300_000);
      const cpuBusy = cpuBusyShare(cpuFrom, cpuSample());
      const byProcess = cpuByProcess(procs);
      const firstReady = Math.min(...ready);
      const lastClose = Math.max(...runs.map((r) => r.closeTime?.getTime() ?? Date.now()));
      const seconds = (lastClose - firstReady) / 1000;
      const parkedSeconds = (parked - firstReady) / 1000;
      const completed = runs.filter((r) => r.status.name === 'COMPLETED').length;
      const stored = await store.listEpisodes();
      const weeks = new Set(stored.map((s) => s.week_id));
      runIds = runs.map((r) => r.workflowId);
      const row = measured(
        'temporal',
        `temporal/drain/${workers}`,
        `${o.backfillRuns} backfilled weekly runs drained by ${workers} worker process${workers > 1 ? 'es' : ''}`,
        {
          n: o.backfillRuns,
          runs_per_s: o.backfillRuns / seconds,
          drain_s: seconds,
          productions_parked_per_s: o.backfillRuns / parkedSeconds,
        },
        {
          checks: [
            {
              name: 'every run completed with its own episode (one per week, sequence 0)',
              pass: completed === o.backfillRuns && stored.length === o.backfillRuns && weeks.size === o.backfillRuns,
              detail: `${completed} completed, ${stored.length} episodes in ${weeks.size} weeks`,
            },
          ],
          notes: [
            'runs/s: weekly runs closed; productions parked/s: their productions paid and waiting for approval',
            ...(workers > 1 ? [`workers ready ${Math.max(...ready) - firstReady} ms apart`] : []),
            `${cpuNote(cpuBusy)}, from every worker ready to the last production parked (workers, dev server, simulator)`,
            cpuPerRunNote(byProcessFrom, byProcess, o.backfillRuns),
          ],
        },
      );
      await Promise.all(procs.map((p) => stopProcess(p)));
      row.notes.push(lockNote(statsFiles, o.backfillRuns), serverNote(await taskLatencies(client, runIds)));
      return row;
    } finally {
      await Promise.all(procs.map((p) => stopProcess(p)));
    }
  } finally {
    await handle.delete();
  }
}

interface CpuByProcess {
  workers: (number | undefined)[];
  server: number | undefined;
  bench: number;
}

/** CPU used so far by the workers, the dev server (`temporal`) and this process (client, vendor simulator). */
function cpuByProcess(procs: readonly { pid?: number }[]): CpuByProcess {
  const servers = pidsNamed('temporal').map(processCpuMs);
  const { user, system } = process.cpuUsage();
  return {
    workers: procs.map((p) => processCpuMs(p.pid)),
    server: servers.length === 1 ? servers[0] : undefined,
    bench: (user + system) / 1000,
  };
}

/** Where the drain's CPU went, per weekly run: how much each kind of process costs as workers are added. */
function cpuPerRunNote(from: CpuByProcess, to: CpuByProcess, runs: number): string {
  const per = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? 'unknown' : `${((b - a) / runs).toFixed(1)} ms`;
  const workers = to.workers.map((w, i) => per(from.workers[i], w));
  const sum = (xs: (number | undefined)[]) =>
    xs.includes(undefined) ? undefined : xs.reduce<number>((s, x) => s + x!, 0);
  return (
    `CPU per run: workers ${per(sum(from.workers), sum(to.workers))}` +
    (workers.length > 1 ? ` (${workers.join(' + ')})` : '') +
    `, dev server ${per(from.server, to.server)}, bench process (client, simulator) ${per(from.bench, to.bench)}`
  );
}

/** The workers' lock totals (bench/lock-profile.ts), per weekly run (each run's production included). */
function lockNote(files: readonly string[], runs: number): string {
  // A worker killed after its drain deadline wrote none: its share is missing, and the note says so.
  const totals = files.flatMap((f) => {
    try {
      return [JSON.parse(readFileSync(f, 'utf8')) as LockTotals];
    } catch {
      return [];
    }
  });
  const sum = (k: keyof LockTotals) => totals.reduce((s, t) => s + t[k], 0);
  const n = sum('acquisitions');
  return (
    `lock: ${(n / runs).toFixed(1)} acquisitions per run (its production included), ` +
    `wait ${(sum('waitedMs') / runs).toFixed(1)} ms and hold ${(sum('heldMs') / runs).toFixed(1)} ms per run, ` +
    `mean wait ${(sum('waitedMs') / Math.max(1, n)).toFixed(2)} ms per acquisition` +
    (totals.length < files.length ? ` (${files.length - totals.length} worker(s) reported nothing)` : '')
  );
}

/** Server event times of the weekly runs: task queue waits and task run times, mean per run. */
function serverNote(l: Record<string, number>): string {
  const f = (k: string) => (l[k] ?? 0).toFixed(1);
  return (
    `weekly run tasks (server times, mean per run): workflow tasks queued ${f('workflowTaskQueued')} ms, running ` +
    `${f('workflowTaskRunning')} ms; allocation activity queued ${f('activityQueued')} ms, running ${f('activityRunning')} ms`
  );
}

async function waitForCount(client: Client, scheduleId: string, count: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { count: started } = await client.workflow.count(`TemporalScheduledById = '${scheduleId}'`);
    if (started >= count) return;
    if (Date.now() > deadline) throw new Error(`schedule ${scheduleId}: ${started}/${count} runs started`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Epoch ms at which `count` episodes of the store first all had `status` (polled every 250 ms). */
async function waitForAll(store: FileEpisodeStore, count: number, status: string, timeoutMs: number): Promise<number> {
  const deadline = nowMs() + timeoutMs;
  for (;;) {
    const episodes = await store.listEpisodes();
    const done = episodes.filter((e) => e.status === status).length;
    if (done >= count) return Date.now();
    if (nowMs() > deadline) throw new Error(`${done}/${count} episodes ${status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Epoch ms at which the worker process printed its start line, or `marker` (e.g. the SDK's RUNNING line). */
export function workerReadyAt(
  child: ChildProcess,
  timeoutMs: number,
  marker: RegExp = /worker: task queue/,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`worker not ready after ${timeoutMs} ms: ${err}`)), timeoutMs);
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (marker.test(out)) {
        clearTimeout(timer);
        resolve(Date.now());
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited ${code} before it was ready: ${err}`));
    });
  });
}

/** SIGTERM (the worker drains and exits), SIGKILL if it has not exited 15 s later. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}
