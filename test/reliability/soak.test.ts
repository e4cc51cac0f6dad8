/**
 * Concurrency soak: three worker processes sharing one data dir (one machine, so the file store's lock applies) run
 * 60 backfilled schedule slots in three ISO weeks plus a few triggers, all started together, with production and
 * approval for every run. One worker is SIGKILLed while it holds the pipeline lock, half-way through an allocation
 * (after the commit point, before the state file), and a replacement starts. Afterwards: per-week sequences contiguous
 * from 0, no duplicate ids, no lost run, one charge per step, billing = ledger, `episodes verify` clean.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { weeklyScheduleOptions } from '../../src/cli/schedule-commands';
import { FileEpisodeStore } from '../../src/store/file-store';
import type { VendorSimulator } from '../../src/vendor/simulator';
import type { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor } from '../helpers/deps';
import { waitForScheduledRuns } from '../helpers/schedules';
import { createTestEnv, uniqueTaskQueue } from '../helpers/temporal';
import {
  approveProductions,
  assertInvariants,
  formatTable,
  sleep,
  startWorkerProcess,
  until,
  type WorkerProcess,
} from './helpers';

/** Three past ISO weeks (their Mondays, UTC), 20 slots of a 10-minute spec in each. */
const WEEKS = [
  { week: '2025-W10', monday: Date.parse('2025-03-03T00:00:00Z') },
  { week: '2025-W11', monday: Date.parse('2025-03-10T00:00:00Z') },
  { week: '2025-W12', monday: Date.parse('2025-03-17T00:00:00Z') },
];
const SLOTS_PER_WEEK = 20;
const SLOT_MS = 10 * 60_000;
/** New logical runs of the current week; a second apart, since Temporal names scheduled runs to the second. */
const TRIGGERS = 3;
const RUNS = WEEKS.length * SLOTS_PER_WEEK + TRIGGERS;
/** The doomed worker dies at its 3rd allocation, holding the lock, after the commit point. */
const KILL = 'allocation.index-written=kill@3';
/** `RELIABILITY_PROOF_NO_LOCK=1`: workers run without the pipeline lock, to show this test then fails. */
const WITHOUT_LOCK = process.env.RELIABILITY_PROOF_NO_LOCK === '1';

describe('concurrency soak: 3 worker processes, 63 runs in 4 ISO weeks, the lock holder SIGKILLed', function () {
  this.timeout(20 * 60_000);
  let env: TestWorkflowEnvironment;
  let vendor: VendorSimulator;
  let dir: string;
  const workers: WorkerProcess[] = [];
  let report: Record<string, string | number> | undefined;

  before(async function () {
    this.timeout(5 * 60_000);
    env = await createTestEnv();
    vendor = await startTestVendor();
    dir = mkdtempSync(path.join(os.tmpdir(), 'soak-'));
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await vendor?.close();
    await env?.teardown();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
    if (report) console.log(`\nconcurrency soak\n${formatTable([report])}\n`);
  });

  /** For a failure message: the runs that never closed and what their pending activity last failed with. */
  async function stillRunning(scheduleId: string): Promise<string> {
    const lines: string[] = [];
    const query = `TemporalScheduledById = '${scheduleId}' AND ExecutionStatus = 'Running'`;
    for await (const wf of env.client.workflow.list({ query })) {
      const d = await env.client.workflow.getHandle(wf.workflowId, wf.runId).describe();
      const pending = d.raw.pendingActivities?.map((a) => `${a.attempt}: ${a.lastFailure?.message ?? '-'}`);
      lines.push(`${wf.workflowId} running; pending activities ${JSON.stringify(pending)}`);
    }
    return lines.join('\n') || '(none running)';
  }

  it('every run gets exactly one episode, sequences are contiguous per week, nothing is paid twice', async () => {
    const started = Date.now();
    const taskQueue = uniqueTaskQueue('soak');
    const scheduleId = `soak-${process.pid}`;
    const worker = (name: string, failpoints?: string) => {
      const w = startWorkerProcess(name, {
        address: env.address,
        taskQueue,
        dataDir: dir,
        vendorUrl: vendor.url,
        failpoints,
        lockStaleMs: 2_000,
        extraEnv: WITHOUT_LOCK ? { EPISODES_UNSAFE_DISABLE_LOCK_FOR_TESTS: '1' } : {},
      });
      workers.push(w);
      return w;
    };
    const doomed = worker('w0', KILL);
    await Promise.all([doomed, worker('w1'), worker('w2')].map((w) => w.waitUntilPolling()));

    const schedule = await env.client.schedule.create(
      weeklyScheduleOptions({
        scheduleId,
        taskQueue,
        timezone: 'UTC',
        workflowIdBase: scheduleId,
        spec: { intervals: [{ every: '10 minutes' }] },
      }),
    );
    await schedule.pause('driven by backfill and trigger');
    const store = new FileEpisodeStore(dir);

    // All started within seconds: one backfill request with the three weeks, then the triggers. Each schedule request
    // waits until the scheduler has started its runs: the dev server's scheduler (Server 1.32) silently drops a
    // backfill that is followed by another backfill or trigger too quickly (docs/reliability.md). A trigger's run is
    // named after the second the scheduler handles it, hence also a second between triggers.
    const since = new Date(Math.floor(Date.now() / 1000) * 1000); // nominal times of triggers are whole seconds
    const count = async (condition: string) => {
      let n = 0;
      const query = `TemporalScheduledById = '${scheduleId}' AND TemporalScheduledStartTime ${condition}`;
      for await (const _ of env.client.workflow.list({ query })) n += 1;
      return n;
    };
    const backfilled = WEEKS.length * SLOTS_PER_WEEK;
    await schedule.backfill(
      WEEKS.map(({ monday }) => ({
        start: new Date(monday - 1_000),
        end: new Date(monday + (SLOTS_PER_WEEK - 1) * SLOT_MS + 1_000),
        overlap: ScheduleOverlapPolicy.ALLOW_ALL,
      })),
    );
    const before = `< '${since.toISOString()}'`;
    await until('backfilled runs', async () => ((await count(before)) >= backfilled ? true : undefined), 120_000);
    for (let i = 1; i <= TRIGGERS; i++) {
      await sleep(1_100);
      await schedule.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
      const after = `>= '${since.toISOString()}'`;
      await until(`triggered run ${i}`, async () => ((await count(after)) >= i ? true : undefined), 120_000);
    }

    // The lock holder dies mid-soak; a replacement takes its place.
    const death = await Promise.race([doomed.exited, sleep(5 * 60_000).then(() => undefined)]);
    assert.equal(death?.signal, 'SIGKILL', `w0 did not die at ${KILL}:\n${doomed.output()}`);
    const allocatedAtKill = (await store.listEpisodes()).length;
    assert.ok(allocatedAtKill < RUNS, `killed mid-soak (${allocatedAtKill}/${RUNS} episodes allocated)`);
    await worker('w3').waitUntilPolling();

    const runs = await waitForScheduledRuns(env.client, scheduleId, RUNS, 5 * 60_000).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await stillRunning(scheduleId)}`);
    });
    assert.equal(runs.length, RUNS, 'every backfilled slot and trigger ran');
    const results = await Promise.all(
      runs.map((r) => env.client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(r.workflowId, r.runId).result()),
    );
    assert.deepEqual(
      results.map((r) => r.allocationKey),
      runs.map((r) => r.workflowId),
    );
    const ids = results.map((r) => r.episodeId);
    assert.equal(new Set(ids).size, RUNS, 'no duplicate episode ids');
    for (const { week } of WEEKS) {
      const seqs = results
        .filter((r) => r.weekId === week)
        .map((r) => r.sequence)
        .sort((a, b) => a - b);
      assert.deepEqual(seqs, [...Array(SLOTS_PER_WEEK).keys()], `week ${week}: 0..${SLOTS_PER_WEEK - 1}`);
    }

    const productions = await approveProductions(env.client, dir, RUNS, 10 * 60_000);
    assert.deepEqual(
      productions.filter((p) => p.result.outcome !== 'completed'),
      [],
      'every production completed',
    );
    // The killed allocation was retried elsewhere and returned the episode its first attempt had committed.
    const retried = await until(
      'allocation histories',
      async () => {
        let n = 0;
        for (const r of runs) {
          const history = await env.client.workflow.getHandle(r.workflowId, r.runId).fetchHistory();
          const startedEvent = history.events?.find((e) => e.activityTaskStartedEventAttributes);
          if ((startedEvent?.activityTaskStartedEventAttributes?.attempt ?? 1) > 1) n += 1;
        }
        return n;
      },
      60_000,
    );
    assert.ok(retried >= 1, 'the allocation that died with w0 was retried');

    const counts = await assertInvariants(dir, vendor, { keys: runs.map((r) => r.workflowId), allCompleted: true });
    assert.equal(counts.episodes, RUNS);
    assert.equal(counts.charges, RUNS * 3, 'video, cover and assembly once per episode');
    report = {
      runs: RUNS,
      weeks: counts.weeks,
      workers: workers.length,
      'SIGKILLs (lock holder)': 1,
      'allocated at kill': allocatedAtKill,
      'allocations retried': retried,
      episodes: counts.episodes,
      completed: counts.completed,
      charges: counts.charges,
      'ledger entries': counts.ledgerEntries,
      duplicates: counts.duplicateEpisodes + counts.duplicateCharges,
      'charges lost': counts.chargesLost,
      'verify problems': counts.verifyProblems,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  });
});
