/**
 * 4b. The worker process (`node dist/src/worker.js`) itself:
 *
 * - start-up: spawn to the SDK's "Worker state changed RUNNING" line (polling starts there), bundling the workflows
 *   with webpack at start (EPISODES_WORKFLOW_BUNDLE=off, as before) versus loading the pre-built bundle.
 * - parked: N productions waiting for approval on one worker with the default workflow cache
 *   (EPISODES_MAX_CACHED_WORKFLOWS): RSS before and after, and approve-to-completed latency of productions the cache
 *   evicted (the oldest: replayed from history on the approval) versus productions still cached (the most recently
 *   touched), approved alternately in the same run. The worker's own /metrics confirm the cache stayed bounded.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { productionWorkflowId } from '../src/domain/names';
import { DEFAULT_MAX_CACHED_WORKFLOWS } from '../src/process/worker-cache';
import { DEFAULT_BUNDLE_PATH, resolveWorkflowSource } from '../src/process/workflow-bundle';
import type { episodeProductionWorkflow } from '../src/workflows/episode-production';
import { approveSignal } from '../src/workflows/messages';
import type { weeklyEpisodeWorkflow } from '../src/workflows/weekly-episode';
import { spawnNode } from '../testkit/processes';
import { closedPort } from '../testkit/vendor';
import { parsePrometheus, sumOf } from '../testkit/prometheus';
import { measured, target, type Row } from './results';
import { nowMs, summarize, withTimeout } from './stats';
import { blockWeek, waitForApprovalPoint, type TemporalContext } from './temporal-context';
import { rssMib } from './production';
import { stopProcess, workerReadyAt } from './temporal';

export interface WorkerProcessOptions {
  startRuns: number;
  parked: number;
  /** Approvals of each kind (evicted, cached); must stay well under the cache size. */
  samples: number;
  /** Workflow cache size for the parked row; the product default unless the smoke run shrinks it. */
  cacheSize: number;
  workDir: string;
  log: (message: string) => void;
}

const POLLING = /Worker state changed.*RUNNING/;

export async function benchWorkerProcess(ctx: TemporalContext, o: WorkerProcessOptions): Promise<Row[]> {
  return [await benchWorkerStart(ctx, o), await benchParked(ctx, o)];
}

export async function benchWorkerStart(ctx: TemporalContext, o: WorkerProcessOptions): Promise<Row> {
  const source = await resolveWorkflowSource({});
  if (source.kind !== 'bundle') {
    return {
      id: 'production/worker-start',
      section: 'production',
      label: 'worker start',
      status: 'failed',
      reason: source.reason,
    };
  }
  const times = { sources: [] as number[], bundle: [] as number[] };
  for (let i = 0; i < o.startRuns; i++) {
    for (const kind of ['sources', 'bundle'] as const) {
      const name = `bench-start-${process.pid}-${kind}-${i}`;
      const dataDir = path.join(o.workDir, name);
      mkdirSync(dataDir, { recursive: true });
      const started = Date.now();
      const child = spawnNode('src/worker.js', [], {
        ...ctx.workerEnv(name, dataDir),
        EPISODES_WORKFLOW_BUNDLE: kind === 'bundle' ? DEFAULT_BUNDLE_PATH : 'off',
      });
      try {
        times[kind].push((await workerReadyAt(child, 120_000, POLLING)) - started);
      } finally {
        await stopProcess(child);
      }
    }
  }
  const before = summarize(times.sources);
  const after = summarize(times.bundle);
  return measured(
    'production',
    'production/worker-start',
    'worker process spawn to polling: webpack at start (before) vs pre-built bundle (after)',
    { n: after.n, sources_p50_ms: before.p50, bundle_p50_ms: after.p50, speedup: before.p50 / after.p50 },
    { notes: [`bundle sha256 ${source.sha256.slice(0, 12)}; spawn to the SDK's RUNNING log line, runs alternate`] },
  );
}

export async function benchParked(ctx: TemporalContext, o: WorkerProcessOptions): Promise<Row> {
  const name = `bench-parked-${process.pid}`;
  const dataDir = path.join(o.workDir, 'parked');
  mkdirSync(dataDir, { recursive: true });
  const metrics = `127.0.0.1:${await closedPort()}`;
  const child = spawnNode('src/worker.js', [], {
    ...ctx.workerEnv(name, dataDir),
    EPISODES_METRICS_ADDRESS: metrics,
    EPISODES_MAX_CACHED_WORKFLOWS: String(o.cacheSize),
  });
  const client = ctx.env.client;
  const start = (year: number, i: number) =>
    client.workflow.execute<typeof weeklyEpisodeWorkflow>('weeklyEpisodeWorkflow', {
      workflowId: `${name}-${year}-${i}`,
      taskQueue: name,
      args: [{ week: blockWeek(year, i) }],
    });
  try {
    await workerReadyAt(child, 120_000);
    const warm = await start(2040, 0);
    await waitForApprovalPoint(client, warm.episodeId, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const rssBefore = rssMib(child.pid!);
    // In waves, so the cache holds the wave being parked rather than thrashing across all of them.
    const episodes: string[] = [];
    const parkStarted = nowMs();
    const wave = Math.max(2, Math.floor(o.cacheSize / 2));
    for (let first = 0; first < o.parked; first += wave) {
      const ids = Array.from({ length: Math.min(wave, o.parked - first) }, (_, k) => first + k);
      const runs = await withTimeout(Promise.all(ids.map((i) => start(2042, i))), 300_000, `wave at ${first}`);
      for (const r of runs) await waitForApprovalPoint(client, r.episodeId, 300_000);
      episodes.push(...runs.map((r) => r.episodeId));
    }
    const parkSeconds = (nowMs() - parkStarted) / 1000;
    o.log(`production: ${o.parked} productions parked at approval in ${parkSeconds.toFixed(1)} s`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const rssAfter = rssMib(child.pid!);

    // Oldest parked: evicted long ago. Most recently parked: in the cache (the approvals below evict from its far end).
    const evicted = episodes.slice(0, o.samples);
    const cached = episodes.slice(-o.samples).reverse();
    const latency = { evicted: [] as number[], cached: [] as number[] };
    let completed = 0;
    const approve = async (episodeId: string) => {
      const production = client.workflow.getHandle<typeof episodeProductionWorkflow>(productionWorkflowId(episodeId));
      const t0 = nowMs();
      await production.signal(approveSignal, { by: 'bench' });
      const result = await withTimeout(production.result(), 120_000, `production of ${episodeId}`);
      if (result.outcome === 'completed') completed++;
      return nowMs() - t0;
    };
    for (let i = 0; i < o.samples; i++) {
      latency.cached.push(await approve(cached[i]!));
      latency.evicted.push(await approve(evicted[i]!));
    }
    const scraped = parsePrometheus(await (await fetch(`http://${metrics}/metrics`)).text());
    const cacheSize = sumOf(scraped, 'temporal_sticky_cache_size', {});
    const evictions = sumOf(scraped, 'temporal_sticky_cache_total_forced_eviction_total', {});
    const e = summarize(latency.evicted);
    const c = summarize(latency.cached);
    return measured(
      'production',
      'production/parked',
      `${o.parked} productions parked at approval on one worker process, cache ${o.cacheSize}`,
      {
        n: o.parked,
        rss_before_mib: rssBefore,
        rss_after_mib: rssAfter,
        park_s: parkSeconds,
        evicted_p50_ms: e.p50,
        evicted_p99_ms: e.p99,
        cached_p50_ms: c.p50,
        cached_p99_ms: c.p99,
        evicted_vs_cached_p50: e.p50 / c.p50,
        ...(evictions > 0 ? { cache_forced_evictions: evictions } : {}),
      },
      {
        targets:
          o.cacheSize === DEFAULT_MAX_CACHED_WORKFLOWS
            ? [target('RSS after, MiB', rssAfter, 512), target('evicted/cached p50', e.p50 / c.p50, 2)]
            : [],
        checks: [
          {
            name: 'every sampled production completed; the cache stayed within its bound and did evict',
            pass: completed === 2 * o.samples && cacheSize <= o.cacheSize && evictions > 0,
            detail: `${completed}/${2 * o.samples} completed, cache ${cacheSize}/${o.cacheSize}, ${evictions} evictions`,
          },
        ],
        notes: [
          'approve signal to production result; cached and evicted approvals alternate',
          'RSS of `node dist/src/worker.js` after one warm-up episode (before) and 1 s after the last parked (after)',
        ],
      },
    );
  } finally {
    await stopProcess(child);
  }
}
