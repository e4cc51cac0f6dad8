/**
 * Several hosts, simulated: three worker processes (`node dist/src/worker.js`, as deployed) that share nothing but the
 * Temporal server and the store they are pointed at: each has its own working directory and environment. 60 runs of
 * weeklyEpisodeWorkflow start at once, 20 in each of three weeks.
 *
 * With one PostgreSQL store the sequences are unique and contiguous. With three file stores on separate directories
 * (what three machines with local disks would have) each file lock serialises only its own host, so the same episode
 * ids are handed out on several hosts: the documented reason the file store is single-machine (docs/deploy.md).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { PostgresEpisodeStore } from '../../../src/store/postgres-store';
import { weeklyEpisodeWorkflow, type WeeklyEpisodeResult } from '../../../src/workflows/weekly-episode';
import { freshDatabase } from '../../../testkit/postgres';
import { DIST_ROOT } from '../../../testkit/processes';
import { createTestEnv, uniqueTaskQueue } from '../../../testkit/temporal';

const HOSTS = 3;
const RUNS = 60;
/** Three weeks of a year of its own per scenario: each run also starts `episode-<id>` production, ids must not meet. */
const weeksOf = (year: number) => [32, 33, 34].map((w) => parseWeekId(`${year}-W${w}`));

interface Host {
  dir: string;
  child: ChildProcess;
  output: string;
}

describe('several hosts: three worker processes sharing only Temporal and the store', function () {
  this.timeout(600_000);
  let env: TestWorkflowEnvironment;
  let hosts: Host[] = [];
  const dirs: string[] = [];

  before(async () => {
    env = await createTestEnv();
  });
  let queue: string | undefined;
  afterEach(async () => {
    // Each run also started its episode's production (abandoned child): end them, so nothing outlives the scenario.
    if (queue) {
      const running = env.client.workflow.list({ query: `TaskQueue="${queue}" AND ExecutionStatus="Running"` });
      for await (const wf of running) {
        await env.client.workflow
          .getHandle(wf.workflowId, wf.runId)
          .terminate('test over')
          .catch(() => undefined);
      }
    }
    await Promise.all(hosts.map(stopHost));
    hosts = [];
  });
  after(async () => {
    await env?.teardown();
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
  });

  /** Starts one worker per host environment and waits until every one polls the queue. */
  async function startHosts(taskQueue: string, storeEnv: (dir: string) => NodeJS.ProcessEnv): Promise<void> {
    queue = taskQueue;
    hosts = Array.from({ length: HOSTS }, (_, i) => {
      const dir = mkdtempSync(path.join(os.tmpdir(), `host${i}-`));
      dirs.push(dir);
      const child = spawn(process.execPath, [path.join(DIST_ROOT, 'src', 'worker.js')], {
        cwd: dir,
        env: {
          ...hostEnv(),
          TEMPORAL_ADDRESS: env.address,
          TEMPORAL_NAMESPACE: 'default',
          EPISODES_TASK_QUEUE: taskQueue,
          ...storeEnv(dir),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const host: Host = { dir, child, output: '' };
      child.stdout?.on('data', (d: Buffer) => (host.output += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (host.output += d.toString()));
      return host;
    });
    await Promise.all(hosts.map(waitUntilPolling));
  }

  /** 60 concurrent runs, 20 per week; workflow ID = allocation key. Returns each result and the worker that ran it. */
  async function runSixty(
    taskQueue: string,
    weeks: readonly string[],
  ): Promise<{ result: WeeklyEpisodeResult; worker: string }[]> {
    const handles = await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        env.client.workflow.start(weeklyEpisodeWorkflow, {
          workflowId: `${taskQueue}-run-${i}`,
          taskQueue,
          args: [{ week: weeks[i % weeks.length] }],
        }),
      ),
    );
    return Promise.all(
      handles.map(async (h) => {
        const result = await h.result();
        const history = await h.fetchHistory();
        const started = history.events?.find((e) => e.activityTaskStartedEventAttributes);
        return { result, worker: started?.activityTaskStartedEventAttributes?.identity ?? '?' };
      }),
    );
  }

  it('one PostgreSQL store: 60 concurrent runs get unique, contiguous sequences in every week', async () => {
    const url = await freshDatabase('multihost');
    const taskQueue = uniqueTaskQueue('multihost-pg');
    await startHosts(taskQueue, (dir) => ({ EPISODES_STORE_URL: url, EPISODES_MEDIA_DIR: path.join(dir, 'media') }));
    const weeks = weeksOf(2026);
    const runs = await runSixty(taskQueue, weeks);

    const workers = new Set(runs.map((r) => r.worker));
    assert.ok(workers.size >= 2, `allocations must be spread over several hosts, got ${[...workers].join(', ')}`);
    const ids = runs.map((r) => r.result.episodeId);
    assert.equal(new Set(ids).size, RUNS, 'every run got its own episode');
    for (const week of weeks) {
      const seqs = runs
        .filter((r) => r.result.weekId === week)
        .map((r) => r.result.sequence)
        .sort((a, b) => a - b);
      assert.deepEqual(seqs, [...Array(RUNS / weeks.length).keys()], `week ${week}`);
    }
    const store = new PostgresEpisodeStore({ url });
    try {
      const stored = await store.listEpisodes();
      assert.deepEqual(
        stored.map((e) => [e.episode_id, e.allocation_key]).sort(),
        runs.map((r) => [r.result.episodeId, r.result.allocationKey]).sort(),
      );
    } finally {
      await store.close();
    }
  });

  it('three file stores on separate dirs are NOT safe: duplicate episode ids (documented expected failure)', async () => {
    const taskQueue = uniqueTaskQueue('multihost-file');
    await startHosts(taskQueue, (dir) => ({ EPISODES_STORE_URL: '', EPISODES_DATA_DIR: path.join(dir, 'data') }));
    const weeks = weeksOf(2027);
    const runs = await runSixty(taskQueue, weeks);

    const workers = new Set(runs.map((r) => r.worker));
    assert.ok(workers.size >= 2, `allocations must be spread over several hosts, got ${[...workers].join(', ')}`);
    const ids = runs.map((r) => r.result.episodeId);
    // THE EXPECTED FAILURE: each host's lock only serialises that host, so hosts hand out the same ids.
    assert.ok(new Set(ids).size < RUNS, 'expected duplicate episode ids across hosts with separate file stores');
    // Together the stores hold the 60 runs and nothing else. (A run's episode can be in two stores: a production's
    // activity that lands on another host finds the episode missing there and re-asserts it from Temporal's records,
    // as after a restore. A store need not be dense then: the id below a re-asserted one was recorded for a run whose
    // key this store holds under another id, so re-asserting it conflicts and is skipped; a host's store can hold
    // another host's 8 beside its own 0-6.)
    const held = new Set<string>();
    for (const host of hosts) {
      const episodes = await new FileEpisodeStore(path.join(host.dir, 'data')).listEpisodes();
      for (const e of episodes) held.add(`${e.episode_id} ${e.allocation_key}`);
    }
    assert.deepEqual([...held].sort(), runs.map((r) => `${r.result.episodeId} ${r.result.allocationKey}`).sort());
  });
});

/**
 * The test's environment without store, failpoint or vendor settings: each host gets only what it is given. Without
 * vendor credentials the productions these runs start stop at their credentials guard: nothing is ever submitted.
 */
function hostEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (['EPISODES_', 'TEMPORAL_', 'VENDOR_'].some((prefix) => name.startsWith(prefix))) delete env[name];
  }
  return env;
}

function waitUntilPolling(host: Host): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (host.output.includes('worker: task queue')) {
        clearInterval(timer);
        resolve();
      }
    };
    const timer = setInterval(check, 100);
    host.child.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`worker in ${host.dir} exited with ${code} before polling:\n${host.output}`));
    });
  });
}

async function stopHost(host: Host): Promise<void> {
  if (host.child.exitCode !== null || host.child.signalCode !== null) return;
  const exited = new Promise((resolve) => host.child.once('exit', resolve));
  host.child.kill('SIGTERM');
  const timer = setTimeout(() => host.child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}
