/**
 * `npm run bench` (full) or `node dist/bench/run.js --smoke`: measures, prints a table and writes
 * bench/results/<timestamp>.json. Targets are reported (PASS/MISS), never enforced; a failed correctness check or a
 * section that threw makes the exit code 1.
 *
 *   --smoke             tiny sizes and a few iterations (the mocha smoke test runs this)
 *   --only a,b          sections: allocation, contention, temporal, production, review (default: all)
 *   --no-postgres       skip the PostgreSQL rows
 *   --no-profile        skip the profile of the worst allocation ratio
 *   --out <dir>         where the results JSON goes (default bench/results)
 *   --write-docs        a full run writes its sections' tables into docs/benchmarks.md (bench/doc-tables.ts)
 */
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { z } from 'zod';
import { benchAllocation } from './allocation';
import { benchContention } from './contention';
import { writeBenchDocs } from './doc-tables';
import { gitFacts, machineFacts } from '../testkit/machine';
import { benchProduction } from './production';
import { benchReviewDesk } from './review-desk';
import { profileAllocation } from './profile';
import { printTable } from './report';
import {
  brokenRows,
  SECTIONS,
  writeResults,
  type BenchConfig,
  type BenchResults,
  type Profile,
  type Row,
  type Section,
} from './results';
import { benchTemporal } from './temporal';
import { benchWorkerProcess } from './worker-process';
import { DEFAULT_MAX_CACHED_WORKFLOWS } from '../src/process/worker-cache';
import { startTemporalContext, type TemporalContext } from './temporal-context';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

const FULL: BenchConfig = {
  sizes: [100, 1_000, 10_000, 100_000],
  allocation_rounds: 300,
  contention_processes: 4,
  contention_per_process: 250,
  contention_warmup: 100,
  contention_rounds: 7,
  temporal_latency_pairs: 200,
  temporal_backfill_runs: 200,
  temporal_drain_workers: [1, 2, 4],
  production_episodes: 50,
  production_waiting: 100,
  worker_start_runs: 3,
  production_parked: 2_000,
  production_parked_samples: 20,
  production_parked_cache: DEFAULT_MAX_CACHED_WORKFLOWS,
  review_completed: 1_000,
  review_waiting: 20,
  review_requests: 300,
};

const SMOKE: BenchConfig = {
  sizes: [10, 20, 40, 80],
  allocation_rounds: 5,
  contention_processes: 4,
  contention_per_process: 5,
  contention_warmup: 0,
  contention_rounds: 1,
  temporal_latency_pairs: 4,
  temporal_backfill_runs: 6,
  temporal_drain_workers: [1, 2],
  production_episodes: 2,
  production_waiting: 3,
  worker_start_runs: 1,
  production_parked: 8,
  production_parked_samples: 2,
  production_parked_cache: 4,
  review_completed: 30,
  review_waiting: 3,
  review_requests: 5,
};

/** How this run was started, as a reader would type it. */
function commandLine(): string {
  const args = process.argv.slice(2).join(' ');
  if (process.env.npm_lifecycle_event === 'bench') return `npm run bench${args ? ` -- ${args}` : ''}`;
  return ['node', path.relative(REPO_ROOT, process.argv[1] ?? '') || 'bench/run.js', args].filter(Boolean).join(' ');
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      only: { type: 'string' },
      'no-postgres': { type: 'boolean', default: false },
      'no-profile': { type: 'boolean', default: false },
      out: { type: 'string', default: path.join(REPO_ROOT, 'bench', 'results') },
      'write-docs': { type: 'boolean', default: false },
    },
  });
  if (values['write-docs'] && values.smoke) throw new Error('--write-docs: only a full run writes the docs');
  const mode = values.smoke ? 'smoke' : 'full';
  const config = values.smoke ? SMOKE : FULL;
  const only = new Set((values.only ?? SECTIONS.join(',')).split(',').map((s) => s.trim()));
  for (const s of only) if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(`unknown section ${s}`);
  const wanted = (s: Section) => only.has(s);

  // The SDK's own logs only when asked (BENCH_SDK_LOG=WARN, DEBUG, ...): the table is the output.
  const sdkLevel = z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).parse(process.env.BENCH_SDK_LOG ?? 'ERROR');
  Runtime.install({ logger: new DefaultLogger(sdkLevel) });
  const startedAt = new Date();
  const loadStart = os.loadavg();
  // On the disk being measured: os.tmpdir() unless TMPDIR says otherwise (the machine facts name the device).
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'episodes-bench-'));
  const rows: Row[] = [];
  let temporalContext: Promise<TemporalContext> | undefined;
  const temporal = () => (temporalContext ??= startTemporalContext());
  const profiles: Profile[] = [];
  const section = async (name: Section, fn: () => Promise<Row[]>) => {
    if (!wanted(name)) return;
    const started = Date.now();
    log(`${name}: starting`);
    try {
      rows.push(...(await fn()));
    } catch (e) {
      log(`${name} failed: ${(e as Error).stack ?? String(e)}`);
      rows.push({ id: `${name}/error`, section: name, label: name, status: 'failed', reason: String(e) });
    }
    log(`${name}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };

  const cleanup = async () => {
    await temporalContext?.then((c) => c.close()).catch(() => undefined);
    await fs.rm(workDir, { recursive: true, force: true });
  };
  // Interrupted: still stop the dev server and remove the seeded stores (PostgreSQL stops itself on exit).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: cleaning up`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  try {
    await section('allocation', async () => {
      const outcome = await benchAllocation({
        sizes: config.sizes,
        rounds: config.allocation_rounds,
        warmupRounds: values.smoke ? 1 : 10,
        maxSeconds: values.smoke ? 20 : 600,
        workDir: path.join(workDir, 'allocation'),
        postgres: !values['no-postgres'],
        log,
      });
      const profileRows: Row[] = [];
      try {
        if (!values['no-profile'] && outcome.worstFile) {
          profiles.push(await profileAllocation({ ...outcome.worstFile, allocations: values.smoke ? 3 : 100 }));
        }
      } catch (e) {
        log(`profile failed: ${String(e)}`);
        const reason = `profile failed: ${String(e)}`;
        profileRows.push({
          id: 'allocation/profile',
          section: 'allocation',
          label: 'profile',
          status: 'failed',
          reason,
        });
      } finally {
        await outcome.cleanup();
      }
      return [...outcome.rows, ...profileRows];
    });
    await section('contention', () =>
      benchContention({
        processes: config.contention_processes,
        perProcess: config.contention_per_process,
        warmup: config.contention_warmup,
        rounds: config.contention_rounds,
        workDir: path.join(workDir, 'contention'),
      }),
    );
    await section('temporal', async () =>
      benchTemporal(await temporal(), {
        latencyPairs: config.temporal_latency_pairs,
        warmupPairs: values.smoke ? 1 : 10,
        backfillRuns: config.temporal_backfill_runs,
        drainWorkers: config.temporal_drain_workers,
        workDir: path.join(workDir, 'temporal'),
        log,
        addProfile: (p) => profiles.push(p),
      }),
    );
    await section('production', async () =>
      benchProduction(await temporal(), {
        episodes: config.production_episodes,
        waiting: config.production_waiting,
        workDir: path.join(workDir, 'production'),
        log,
      }),
    );
    await section('production', async () =>
      benchWorkerProcess(await temporal(), {
        startRuns: config.worker_start_runs,
        parked: config.production_parked,
        samples: config.production_parked_samples,
        cacheSize: config.production_parked_cache,
        workDir: path.join(workDir, 'worker-process'),
        log,
      }),
    );
    await section('review', () =>
      benchReviewDesk({
        completed: config.review_completed,
        waiting: config.review_waiting,
        requests: config.review_requests,
        workDir: path.join(workDir, 'review'),
        log,
      }),
    );
  } finally {
    await cleanup();
  }

  const git = gitFacts(REPO_ROOT);
  const results: BenchResults = {
    schema: 'bench-results/v1',
    mode,
    command: commandLine(),
    git_commit: git.commit,
    git_dirty: git.dirty,
    started_at: startedAt.toISOString(),
    duration_s: (Date.now() - startedAt.getTime()) / 1000,
    machine: machineFacts(os.tmpdir(), loadStart),
    config,
    rows,
    profiles,
  };
  const file = await writeResults(values.out, results);
  printTable(results);
  console.log(`\nresults: ${path.relative(process.cwd(), file) || file}`);
  const broken = brokenRows(rows);
  for (const r of broken) log(`FAILED ${r.id}: ${r.status === 'measured' ? JSON.stringify(r.checks) : r.reason}`);
  let docsFailed = false;
  if (values['write-docs']) {
    try {
      (await writeBenchDocs(results)).forEach((w) => log(`wrote ${w}`));
    } catch (e) {
      log(`--write-docs: ${e instanceof Error ? e.message : String(e)}; docs/benchmarks.md left as it was`);
      docsFailed = true;
    }
  }
  return broken.length === 0 && !docsFailed ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error('bench failed:', e);
    process.exit(1);
  },
);
