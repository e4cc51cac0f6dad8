/**
 * 4. The production path: full episodes against the vendor simulator at zero job latency, and a worker's memory with
 * many episodes parked at approval.
 *
 * Overhead: one in-process worker; each episode is a weekly run (allocation, production child), video and cover paid
 * steps, approval (signalled as soon as the workflow's status query says it waits), assembly and completion. Every activity is
 * wrapped to sum the time spent inside activity code; the rest of the episode's wall time is orchestration: workflow
 * tasks, child starts, timers and server round trips. Each episode is preceded by one floor workflow for scale.
 *
 * Memory: a worker process (`node dist/src/worker.js`) idle, then with N productions waiting for approval (VmRSS).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { createActivities } from '../src/activities';
import { FileEpisodeStore } from '../src/store/file-store';
import type { episodeProductionWorkflow } from '../src/workflows/episode-production';
import { productionWorkflowId } from '../src/domain/names';
import { approveSignal } from '../src/workflows/messages';
import type { weeklyEpisodeWorkflow } from '../src/workflows/weekly-episode';
import { spawnNode } from '../testkit/processes';
import { createTestWorker } from '../testkit/temporal';
import { createFloorActivities } from './floor-activities';
import { measured, type Row } from './results';
import { nowMs, summarize, timed, withTimeout } from './stats';
import { blockWeek, waitForApprovalPoint, type TemporalContext, BENCH_IN_PROCESS } from './temporal-context';
import { stopProcess, workerReadyAt } from './temporal';
import type { floorWorkflow } from './workflows/floor';

export interface ProductionOptions {
  episodes: number;
  waiting: number;
  workDir: string;
  log: (message: string) => void;
}

export async function benchProduction(ctx: TemporalContext, o: ProductionOptions): Promise<Row[]> {
  return [await overhead(ctx, o), await memory(ctx, o)];
}

/** Activities that run beside the approval wait, never on an episode's path: counted, but their time is not. */
const BESIDE_THE_PATH = new Set(['prepareReviewNotice', 'sendReviewNotice']);

/** Wraps every activity so that the time spent inside activity code on the episode's path is summed. */
function timedActivities<T extends Record<string, (...args: never[]) => Promise<unknown>>>(
  activities: T,
  meter: { ms: number; calls: number },
): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    out[name] = async (...args: never[]) => {
      const start = nowMs();
      try {
        return await fn(...args);
      } finally {
        if (!BESIDE_THE_PATH.has(name)) meter.ms += nowMs() - start;
        meter.calls++;
      }
    };
  }
  return out as T;
}

async function overhead(ctx: TemporalContext, o: ProductionOptions): Promise<Row> {
  const dir = path.join(o.workDir, 'overhead');
  mkdirSync(dir, { recursive: true });
  const store = new FileEpisodeStore(dir);
  const taskQueue = `bench-production-${process.pid}`;
  const client = ctx.env.client;
  const meter = { ms: 0, calls: 0 };
  const worker = await createTestWorker(
    {
      connection: ctx.env.nativeConnection,
      taskQueue,
      workflowBundle: ctx.bundle,
      activities: { ...timedActivities(createActivities(ctx.deps(store)), meter), ...createFloorActivities() },
    },
    BENCH_IN_PROCESS,
  );
  const e2e: number[] = [];
  const inActivities: number[] = [];
  const floors: number[] = [];
  let activityCalls = 0;
  let completed = 0;
  const episode = async (i: number) => {
    const { episodeId } = await client.workflow.execute<typeof weeklyEpisodeWorkflow>('weeklyEpisodeWorkflow', {
      workflowId: `bench-production-${i}`,
      taskQueue,
      args: [{ week: blockWeek(2031, (i + 25) % 25) }],
    });
    await waitForApprovalPoint(client, episodeId, 60_000);
    const production = client.workflow.getHandle<typeof episodeProductionWorkflow>(productionWorkflowId(episodeId));
    await production.signal(approveSignal, { by: 'bench' });
    return withTimeout(production.result(), 60_000, `production of ${episodeId}`);
  };
  await worker.runUntil(async () => {
    for (let i = -1; i < o.episodes; i++) {
      const floor = await timed(() =>
        withTimeout(
          client.workflow.execute<typeof floorWorkflow>('floorWorkflow', {
            workflowId: `bench-pfloor-${i}`,
            taskQueue,
          }),
          60_000,
          'floor workflow',
        ),
      );
      const before = { ...meter };
      const { ms, value } = await timed(() => episode(i));
      if (i < 0) continue;
      floors.push(floor.ms);
      e2e.push(ms);
      inActivities.push(meter.ms - before.ms);
      activityCalls += meter.calls - before.calls;
      if (value.outcome === 'completed') completed++;
    }
  });
  const total = summarize(e2e);
  const work = summarize(inActivities);
  const orchestration = summarize(e2e.map((ms, i) => ms - inActivities[i]!));
  return measured(
    'production',
    'production/overhead',
    'full episode, simulator at zero latency: weekly run to completed production',
    {
      n: total.n,
      p50_ms: total.p50,
      p99_ms: total.p99,
      mean_ms: total.mean,
      in_activities_p50_ms: work.p50,
      orchestration_p50_ms: orchestration.p50,
      activities_per_episode: activityCalls / total.n,
      p50_vs_workflow_floor: total.p50 / summarize(floors).p50,
    },
    {
      checks: [
        {
          name: 'every episode completed (video, cover, approval, assembly, history)',
          pass: completed === total.n,
          detail: `${completed} of ${total.n} completed`,
        },
      ],
      notes: [
        'orchestration = wall time outside activity code; video and cover run in parallel, so it is a lower bound',
        'includes up to 5 ms of polling for the approval point before the approve signal',
      ],
    },
  );
}

async function memory(ctx: TemporalContext, o: ProductionOptions): Promise<Row> {
  const name = `bench-memory-${process.pid}`;
  const dataDir = path.join(o.workDir, 'memory');
  mkdirSync(dataDir, { recursive: true });
  const child = spawnNode('src/worker.js', [], ctx.workerEnv(name, dataDir));
  try {
    await workerReadyAt(child, 120_000);
    // Warm the worker with one full run so that idle means "has run workflows", not "never touched".
    await startAndPark(ctx, name, 2034, 1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = rssMib(child.pid!);
    const parkStarted = nowMs();
    await startAndPark(ctx, name, 2036, o.waiting);
    o.log(`production: ${o.waiting} episodes parked at approval in ${((nowMs() - parkStarted) / 1000).toFixed(1)} s`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const waiting = rssMib(child.pid!);
    const perEpisodeKib = ((waiting - idle) * 1024) / o.waiting;
    return measured(
      'production',
      'production/memory',
      `worker process with ${o.waiting} episodes awaiting approval`,
      {
        rss_idle_mib: idle,
        rss_waiting_mib: waiting,
        ...(perEpisodeKib > 0 ? { kib_per_waiting_episode: perEpisodeKib } : {}),
      },
      {
        notes: [
          'resident set size of `node dist/src/worker.js`, 1 s after the last episode parked; default workflow cache',
        ],
      },
    );
  } finally {
    await stopProcess(child);
  }
}

/** Starts `count` weekly runs on the task queue and waits until every production waits for approval. */
async function startAndPark(ctx: TemporalContext, taskQueue: string, firstYear: number, count: number): Promise<void> {
  const client = ctx.env.client;
  const results = await withTimeout(
    Promise.all(
      Array.from({ length: count }, (_, i) =>
        client.workflow.execute<typeof weeklyEpisodeWorkflow>('weeklyEpisodeWorkflow', {
          workflowId: `${taskQueue}-${firstYear}-${i}`,
          taskQueue,
          args: [{ week: blockWeek(firstYear, i) }],
        }),
      ),
    ),
    300_000,
    `${count} weekly runs`,
  );
  for (const r of results) await waitForApprovalPoint(client, r.episodeId, 300_000);
}

/** Resident set size in MiB: /proc on Linux, `ps` elsewhere. */
export function rssMib(pid: number): number {
  const proc = existsSync(`/proc/${pid}/status`) ? readFileSync(`/proc/${pid}/status`, 'utf8') : '';
  const kb =
    /VmRSS:\s+(\d+) kB/.exec(proc)?.[1] ?? execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' });
  const n = Number(kb.trim());
  if (!Number.isFinite(n) || n <= 0) throw new Error(`no resident set size for process ${pid}`);
  return n / 1024;
}
