import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WorkflowFailedError, type WorkflowExecutionInfo } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../../src/activities';
import { weeklyScheduleOptions } from '../../../src/cli/schedule-commands';
import { isoWeekOfInstant } from '../../../src/domain/week-id';
import { ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { weeklyEpisodeWorkflow, type WeeklyEpisodeResult } from '../../../src/workflows/weekly-episode';
import { spawnNode } from '../../../testkit/processes';
import { waitForScheduledRuns } from '../../../testkit/schedules';
import { startTestVendor, testDeps } from '../../../testkit/deps';
import {
  createTestEnv,
  createTestWorker,
  temporalCliPath,
  uniqueTaskQueue,
  workflowBundle,
} from '../../../testkit/temporal';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { productionWorkflowId, EpisodeIdSearchAttribute, WeekIdSearchAttribute } from '../../../src/domain/names';

describe('weeklyEpisodeWorkflow on the dev server', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let dir: string;
  let store: FileEpisodeStore;
  let taskQueue: string;
  let vendor: VendorSimulator;

  before(async function () {
    env = await createTestEnv();
    await workflowBundle();
    // Weekly runs start production, which reaches the vendor; these tests look at allocation only.
    vendor = await startTestVendor();
  });
  after(async () => {
    await vendor?.close();
    await env?.teardown();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'wf-'));
    store = new FileEpisodeStore(dir);
    taskQueue = uniqueTaskQueue();
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  async function withWorker<T>(fn: () => Promise<T>): Promise<T> {
    const worker = await createTestWorker({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createActivities(testDeps(store, vendor)),
    });
    return worker.runUntil(fn);
  }

  const run = (workflowId: string, week?: string) =>
    env.client.workflow.execute(weeklyEpisodeWorkflow, { workflowId, taskQueue, args: [{ week }] });

  async function resultsOf(runs: WorkflowExecutionInfo[]): Promise<WeeklyEpisodeResult[]> {
    return Promise.all(
      runs.map((r) => env.client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(r.workflowId, r.runId).result()),
    );
  }

  async function createSchedule(
    scheduleId: string,
    timezone: string,
    spec: Parameters<typeof weeklyScheduleOptions>[0]['spec'],
  ) {
    const handle = await env.client.schedule.create(
      weeklyScheduleOptions({
        scheduleId,
        taskQueue,
        timezone,
        workflowIdBase: scheduleId,
        spec,
        pausedNote: 'tests drive it with backfill and trigger only',
      }),
    );
    // Paused from its creation, not by a pause request that a backfill right after it could overwrite.
    assert.equal((await handle.describe()).state.paused, true, 'created paused');
    return handle;
  }

  it('numbers runs within a week, restarts at 0 next week, and tags the run with EpisodeId/WeekId', async () => {
    await withWorker(async () => {
      assert.equal((await run('k1', '2026-W32')).episodeId, '2026-W32-0');
      assert.equal((await run('k2', '2026-W32')).episodeId, '2026-W32-1');
      const third = await run('k3', '2026-W33');
      assert.deepEqual(third, {
        episodeId: '2026-W33-0',
        weekId: '2026-W33',
        sequence: 0,
        created: true,
        allocationKey: 'k3',
        production: { workflowId: 'episode-2026-W33-0', startedByThisRun: true },
      });
      const d = await env.client.workflow.getHandle('k3').describe();
      assert.equal(d.typedSearchAttributes.get(EpisodeIdSearchAttribute), '2026-W33-0');
      assert.equal(d.typedSearchAttributes.get(WeekIdSearchAttribute), '2026-W33');
    });
  });

  it('takes the ISO week from the nominal scheduled time in the schedule timezone (year edges, Shanghai)', async () => {
    // One slot per hour; each backfill below covers exactly one nominal time.
    const spec = { intervals: [{ every: '1 hour' }] };
    const utc = await createSchedule('edges-utc', 'UTC', spec);
    const shanghai = await createSchedule('edges-sh', 'Asia/Shanghai', spec);
    await withWorker(async () => {
      const slot = (iso: string) => ({
        start: new Date(Date.parse(iso) - 1000),
        end: new Date(Date.parse(iso) + 1000),
      });
      await utc.backfill([slot('2024-12-30T12:00:00Z'), slot('2027-01-01T12:00:00Z')]);
      await shanghai.backfill([slot('2026-08-09T23:00:00Z')]); // Sunday 23:00 UTC = Monday 07:00 in Shanghai
      const utcRuns = await resultsOf(await waitForScheduledRuns(env.client, 'edges-utc', 2));
      assert.deepEqual(utcRuns.map((r) => r.episodeId).sort(), ['2025-W01-0', '2026-W53-0']);
      const [sh] = await resultsOf(await waitForScheduledRuns(env.client, 'edges-sh', 1));
      assert.equal(sh?.episodeId, '2026-W33-0');
      assert.equal(isoWeekOfInstant(new Date('2026-08-09T23:00:00Z'), 'UTC'), '2026-W32', 'UTC would say W32');
    });
  });

  it('re-run semantics: backfilled slots, the same slot again, a trigger, and a reset', async () => {
    const now = new Date();
    const week = isoWeekOfInstant(now, 'UTC');
    // Two slots in the current week: Monday 00:00 and 01:00 UTC (an hourly spec; the weekly one has one slot a week).
    const day = (now.getUTCDay() + 6) % 7;
    const monday = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - day);
    const handle = await createSchedule('rerun', 'UTC', { intervals: [{ every: '1 hour' }] });
    await withWorker(async () => {
      await handle.backfill({ start: new Date(monday - 1000), end: new Date(monday + 3_600_000 + 1000) });
      const firstTwo = await waitForScheduledRuns(env.client, 'rerun', 2);
      const results = await resultsOf(firstTwo);
      assert.deepEqual(results.map((r) => r.sequence).sort(), [0, 1]);
      assert.ok(results.every((r) => r.weekId === week));
      assert.notEqual(results[0]!.allocationKey, results[1]!.allocationKey);

      // The same slot backfilled again after its run closed: same workflow ID, so the same episode.
      await handle.backfill({ start: new Date(monday - 1000), end: new Date(monday + 1000) });
      const afterSameSlot = await waitForScheduledRuns(env.client, 'rerun', 3);
      const rerun = afterSameSlot.find((r) => !firstTwo.some((f) => f.runId === r.runId))!;
      const [rerunResult] = await resultsOf([rerun]);
      const original = results.find((r) => r.allocationKey === rerun.workflowId);
      assert.ok(original, 'the re-run reused the workflow ID of the original slot');
      assert.equal(rerunResult!.episodeId, original.episodeId);
      assert.equal(rerunResult!.created, false);

      // A trigger is a new logical run (a new workflow ID): the next sequence of the current week.
      await handle.trigger();
      const afterTrigger = await waitForScheduledRuns(env.client, 'rerun', 4);
      const triggered = afterTrigger.find((r) => !afterSameSlot.some((f) => f.runId === r.runId))!;
      const [trig] = await resultsOf([triggered]);
      const inWeekBefore = (await store.listEpisodes({ weekId: trig!.weekId as never })).length - 1;
      assert.equal(trig!.created, true);
      assert.equal(trig!.sequence, inWeekBefore, 'max+1 of its week');
      if (trig!.weekId === week) assert.equal(trig!.sequence, 2);

      // `temporal workflow reset` of a scheduled run: same workflow ID, so the same episode.
      const target = firstTwo[0]!;
      execFileSync(
        temporalCliPath(),
        [
          'workflow',
          'reset',
          '--workflow-id',
          target.workflowId,
          '--run-id',
          target.runId,
          '--type',
          'FirstWorkflowTask',
          '--reason',
          'test reset',
          '--address',
          env.address,
          '--yes',
        ],
        { stdio: 'pipe' },
      );
      const reset = await env.client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(target.workflowId).result();
      assert.equal(reset.episodeId, results[0]!.episodeId);
      assert.equal(reset.created, false);
      assert.deepEqual(reset.production, {
        workflowId: productionWorkflowId(reset.episodeId),
        startedByThisRun: false,
      });
      assert.equal((await store.listEpisodes()).length, 3, 'exactly three episodes: two slots and one trigger');
    });
  });

  it('survives a worker killed between the store write and the activity completion', async () => {
    const child = spawnNode('src/worker.js', [], {
      TEMPORAL_ADDRESS: env.address,
      EPISODES_TASK_QUEUE: taskQueue,
      EPISODES_DATA_DIR: dir,
      EPISODES_STORE_URL: '',
      EPISODES_FAILPOINTS: 'allocation.before-return=kill',
      EPISODES_VENDOR_BASE_URL: vendor.url,
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    // A week of its own: the real worker goes above every id Temporal records for the week, and the other cases'
    // productions of 2026-W32 live on this dev server too.
    const handle = await env.client.workflow.start(weeklyEpisodeWorkflow, {
      workflowId: 'crash-run',
      taskQueue,
      args: [{ week: '2026-W45' }],
    });
    assert.equal(await exited, 'SIGKILL', 'the worker died at the failpoint');
    const stored = await store.listEpisodes();
    assert.deepEqual(
      stored.map((s) => s.episode_id),
      ['2026-W45-0'],
      'the store write happened before the crash',
    );
    const result = await withWorker(() => handle.result());
    assert.equal(result.episodeId, '2026-W45-0');
    assert.equal(result.created, false, 'the retry found the episode the dead worker had written');
    assert.equal((await store.listEpisodes()).length, 1, 'exactly one episode stored');
  });

  it('fails non-retryably on a bad week or a cross-week key, writing nothing', async () => {
    await withWorker(async () => {
      const isFailure = (type: string) => (e: unknown) =>
        e instanceof WorkflowFailedError &&
        e.cause instanceof ActivityFailure &&
        e.cause.cause instanceof ApplicationFailure &&
        e.cause.cause.type === type &&
        e.cause.cause.nonRetryable;
      await assert.rejects(run('bad-week', '2025-W53'), isFailure(ErrorType.InvalidAllocationRequest));
      await assert.rejects(fs.stat(path.join(dir, 'episodes')), 'nothing created for bad input');
      await run('key-x', '2026-W32');
      await assert.rejects(run('key-x', '2026-W33'), isFailure(ErrorType.AllocationKeyCrossesWeek));
      assert.equal((await store.listEpisodes()).length, 1);
    });
  });
});
