/**
 * Deploying through the Worker Deployment while productions are in flight, on the real dev server with real worker
 * processes (`node dist/src/worker.js`) and the `episodes deploy` CLI: the first build becomes current by itself; a
 * second build is promoted while a paid step of the first is held mid-job at the vendor (the step finishes on the
 * first build, the production moves on to the second); the first build drains; a ramp spreads new productions over
 * two builds; rollback makes the first current again. The steps share one server and run in order.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { DeploymentReport } from '../../../src/cli/deploy-commands';
import type { EpisodeId } from '../../../src/domain/episode-id';
import { paidStepWorkflowId, productionWorkflowId } from '../../../src/domain/names';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { buildIdOfBundle } from '../../../src/process/worker-deployment';
import { resolveWorkflowSource } from '../../../src/process/workflow-bundle';
import type { episodeProductionWorkflow, weeklyEpisodeWorkflow } from '../../../src/workflows';
import { statusQuery, stepStatusQuery } from '../../../src/workflows/messages';
import { startTestVendor } from '../../../testkit/deps';
import { runCli } from '../../../testkit/processes';
import { startWorkerProcess, type WorkerProcess } from '../../../testkit/reliability';
import { createTestEnv, uniqueTaskQueue } from '../../../testkit/temporal';
import { until } from '../../../testkit/wait';
import { operatorEnv } from '../../../testkit/workflow-harness';

/**
 * The server refreshes a version's drainage state every few minutes, and waits before trusting visibility; shortened
 * here so that `deploy status` shows draining, then drained, within seconds.
 */
const DRAINAGE_ARGS = [
  '--dynamic-config-value',
  'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
  '--dynamic-config-value',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
];

/** temporal.api.enums.v1.VersioningBehavior */
const PINNED = 1;

describe('deploy: worker versions while productions are in flight', function () {
  this.timeout(600_000);
  let env: TestWorkflowEnvironment;
  let dir: string;
  let store: FileEpisodeStore;
  let vendor: VendorSimulator;
  let v1: string;
  const taskQueue = uniqueTaskQueue('deploy');
  const workers: WorkerProcess[] = [];

  before(async () => {
    env = await createTestEnv(DRAINAGE_ARGS);
    dir = mkdtempSync(path.join(os.tmpdir(), 'deploy-'));
    store = new FileEpisodeStore(dir);
    vendor = await startTestVendor({ media: 'synthetic' });
    const source = await resolveWorkflowSource({});
    assert.equal(source.kind, 'bundle', 'npm run build wrote the pre-built bundle');
    v1 = buildIdOfBundle(source.sha256);
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await vendor?.close();
    await env?.teardown();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  const operator = () => operatorEnv({ dir, vendorUrl: vendor.url, address: env.address, taskQueue });
  const cli = async (...args: string[]) => {
    const r = await runCli(args, operator());
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const status = async () => JSON.parse(await cli('deploy', 'status', '--json')) as DeploymentReport;
  const versionOf = (r: DeploymentReport, buildId: string) => r.versions.find((v) => v.buildId === buildId);
  const statusUntil = (what: string, holds: (r: DeploymentReport) => boolean) =>
    until(`deploy status: ${what}`, async () => ((r) => (holds(r) ? r : undefined))(await status()), 60_000, 500);

  async function startWorker(name: string, buildId?: string): Promise<WorkerProcess> {
    const w = startWorkerProcess(name, {
      address: env.address,
      taskQueue,
      dataDir: dir,
      vendorUrl: vendor.url,
      extraEnv: buildId ? { EPISODES_BUILD_ID: buildId } : {},
    });
    workers.push(w);
    await w.waitUntilPolling();
    return w;
  }

  let weeks = 0;
  /** A weekly run of its own week; returns its production's episode id. */
  const weeklyRun = async () => {
    const week = `2029-W${String(++weeks).padStart(2, '0')}`;
    const r = await env.client.workflow.execute<typeof weeklyEpisodeWorkflow>('weeklyEpisodeWorkflow', {
      workflowId: `deploy-${week}`,
      taskQueue,
      args: [{ week }],
    });
    return r.episodeId as EpisodeId;
  };
  const production = (id: string): WorkflowHandle<typeof episodeProductionWorkflow> =>
    env.client.workflow.getHandle(productionWorkflowId(id));
  const parked = (id: string) =>
    until(`${id} parked at approval`, async () =>
      (await production(id).query(statusQuery)).phase === 'awaiting_approval' ? true : undefined,
    );
  /** The build and behaviour the server records for a run now. */
  const versioning = async (workflowId: string) => {
    const info = (await env.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo;
    return { build: info?.versioningInfo?.deploymentVersion?.buildId, behavior: info?.versioningInfo?.behavior };
  };
  /** The build that completed each workflow task of a run, in order, with the event ids. */
  const taskBuilds = async (workflowId: string) => {
    const { events } = await env.client.workflow.getHandle(workflowId).fetchHistory();
    return (events ?? []).flatMap((e) =>
      e.workflowTaskCompletedEventAttributes
        ? [{ id: Number(e.eventId), build: e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId }]
        : [],
    );
  };
  /** The id of the event recording a child's completion in its parent's history (undefined: not yet). */
  const childCompleted = async (parentId: string, childId: string) => {
    const { events } = await env.client.workflow.getHandle(parentId).fetchHistory();
    const done = (events ?? []).find(
      (e) => e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId === childId,
    );
    return done ? Number(done.eventId) : undefined;
  };
  const approve = async (id: string) => {
    await parked(id);
    assert.match(await cli('approve', id, '--by', 'deployer'), /approved by deployer/);
    const result = await production(id).result();
    assert.equal(result.outcome, 'completed', `${id} completed`);
  };
  const chargedOncePerStep = async (id: EpisodeId) => {
    const charges = vendor.billing().filter((c) => c.episode_id === id);
    assert.deepEqual(charges.map((c) => c.kind).sort(), ['assembly', 'cover', 'video'], `${id}: one charge per step`);
    const ledger = (await store.requireEpisode(id)).ledger.map((l) => l.remote_job_id).sort();
    assert.deepEqual(ledger, charges.map((c) => c.job_id).sort(), `${id}: ledger = vendor billing`);
  };

  it('the first build of the deployment becomes current by itself', async () => {
    const w = await startWorker('v1');
    assert.match(w.output(), new RegExp(`deployment version weekly-media:${v1} \\(the deployment's first build`));
    const r = await statusUntil(`${v1} current`, (s) => s.current === v1);
    assert.equal(versionOf(r, v1)?.pollers, 2, 'its workflow and activity pollers');
    assert.equal(r.thisBuild, v1, 'the checkout and the worker derive the same build id from the bundle');
  });

  it('promoted mid-job: the held paid step finishes on v1, the production continues on v2, v1 drains', async () => {
    vendor.setFaults({ holdKinds: ['video'] });
    const a = await weeklyRun();
    const video = paidStepWorkflowId(a, 'video', 0);
    await until('video held at the vendor', async () => {
      const s = await env.client.workflow.getHandle(video).query(stepStatusQuery);
      return s.phase === 'waiting_for_vendor' ? true : undefined;
    });
    // The production has handled the cover's completion (on v1): it then has no task until the video completes.
    await until('a handled the cover', async () => {
      const done = await childCompleted(productionWorkflowId(a), paidStepWorkflowId(a, 'cover', 0));
      return (done !== undefined && (await taskBuilds(productionWorkflowId(a))).some((t) => t.id > done)) || undefined;
    });

    const w2 = await startWorker('v2', 'v2');
    assert.ok(
      w2
        .output()
        .includes(
          `(not current; current is ${v1}): to send it new runs, run \`npx episodes deploy promote --build-id v2\``,
        ),
      w2.output(),
    );
    await statusUntil('v2 polling', (s) => versionOf(s, 'v2')?.pollers === 2);
    assert.match(await cli('deploy', 'promote', '--build-id', 'v2'), /^current: v2$/m);
    assert.deepEqual(await versioning(video), { build: v1, behavior: PINNED }, 'the held step stays on v1');
    await statusUntil('v1 draining while its step runs', (s) => {
      const old = versionOf(s, v1);
      return s.current === 'v2' && old?.status === 'draining' && old.pinnedOpenRuns >= 1;
    });

    const b = await weeklyRun(); // started after the promotion
    vendor.setFaults({});
    await approve(a);
    await approve(b);
    await statusUntil('v1 drained once its step is done', (s) => versionOf(s, v1)?.status === 'drained');

    assert.ok(
      (await taskBuilds(video)).every((t) => t.build === v1),
      'the held step ran all its tasks on v1',
    );
    // The video completes only once the vendor is released, after the promotion: every task of a from then on (the
    // approval's included) ran on v2, every one before on v1.
    const tasksOfA = await taskBuilds(productionWorkflowId(a));
    const released = (await childCompleted(productionWorkflowId(a), video))!;
    const [before, after] = [tasksOfA.filter((t) => t.id < released), tasksOfA.filter((t) => t.id > released)];
    assert.ok(before.length > 0 && before.every((t) => t.build === v1), `before: v1 (${JSON.stringify(tasksOfA)})`);
    assert.ok(after.length > 0 && after.every((t) => t.build === 'v2'), `after it: v2 (${JSON.stringify(tasksOfA)})`);
    assert.deepEqual(await versioning(paidStepWorkflowId(a, 'assembly', 0)), {
      build: 'v2',
      behavior: PINNED,
    });
    assert.ok(
      (await taskBuilds(productionWorkflowId(b))).every((t) => t.build === 'v2'),
      'b ran on v2 only',
    );
    assert.deepEqual(await versioning(paidStepWorkflowId(b, 'video', 0)), {
      build: 'v2',
      behavior: PINNED,
    });
    for (const id of [a, b]) await chargedOncePerStep(id);
  });

  it('a ramp at 50% spreads new productions over both builds; rollback makes v1 current again', async () => {
    await startWorker('v3', 'v3');
    await statusUntil('v3 polling', (s) => versionOf(s, 'v3')?.pollers === 2);
    const unknown = await runCli(['deploy', 'promote', '--build-id', 'v9'], operator());
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /DeploymentRefused: deployment weekly-media has no version v9/);
    assert.equal((await runCli(['deploy', 'ramp', 'v3', '150'], operator())).code, 2, 'a percent over 100');
    assert.match(await cli('deploy', 'ramp', 'v3', '50'), /ramping: v3 at 50% of new runs/);
    const ramped = [];
    for (let i = 0; i < 6; i++) ramped.push(await weeklyRun());
    await Promise.all(ramped.map(parked));
    const builds = await Promise.all(ramped.map(async (id) => (await versioning(productionWorkflowId(id))).build));
    assert.deepEqual([...new Set(builds)].sort(), ['v2', 'v3'], `spread over both: ${builds.join(' ')}`);

    // A CLI on a task queue where v1 has no workers (as if they were stopped): refused, and the ramp is left as it was.
    const noWorkers = await runCli(['deploy', 'rollback'], { ...operator(), EPISODES_TASK_QUEUE: `${taskQueue}-none` });
    assert.equal(noWorkers.code, 1);
    assert.match(noWorkers.stderr, new RegExp(`DeploymentRefused: ${v1} has no live workers`));
    const untouched = await status();
    assert.deepEqual([untouched.current, untouched.ramping], ['v2', { buildId: 'v3', percent: 50 }]);

    const rolledBack = await cli('deploy', 'rollback');
    assert.match(rolledBack, /ramp of v3 ended/);
    assert.match(rolledBack, new RegExp(`current: ${v1} \\(was v2\\)`));
    const r = await status();
    assert.equal(r.current, v1);
    assert.equal(r.ramping, null);
    const c = await weeklyRun();
    await parked(c);
    assert.ok(
      (await taskBuilds(productionWorkflowId(c))).every((t) => t.build === v1),
      'a new production: v1',
    );
  });
});
