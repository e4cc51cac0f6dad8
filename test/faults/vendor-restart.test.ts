/**
 * The vendor side of "nothing lost, nothing twice": the vendor simulator is restarted on the same port between the
 * acceptance of the video and cover jobs (references saved, charges made) and their first poll.
 *  - state file kept: the restarted vendor still knows the jobs; the run completes, billing = ledger.
 *  - state file lost: the vendor no longer knows the jobs. Production must not resubmit (that could pay twice): each
 *    step is parked, `needs_reconciliation` in the store with the reason, the run waiting for an operator, and the
 *    restarted vendor has received no new submission.
 * Worker processes as deployed, on the file store, real Temporal dev server.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { parseEpisodeId } from '../../src/domain/episode-id';
import { productionWorkflowId } from '../../src/domain/names';
import { FileEpisodeStore } from '../../src/store/file-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor } from '../../testkit/deps';
import { createTestEnv, uniqueTaskQueue } from '../../testkit/temporal';
import {
  approveProductions,
  assertInvariants,
  formatTable,
  invariantColumns,
  sleep,
  startWorkerProcess,
  until,
  type WorkerProcess,
} from '../../testkit/reliability';

describe('vendor simulator restarted between acceptance and the first poll', function () {
  this.timeout(15 * 60_000);
  let env: TestWorkflowEnvironment;
  const table: Record<string, string | number>[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  before(async function () {
    this.timeout(5 * 60_000);
    env = await createTestEnv();
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await env?.teardown();
    console.log(`\nvendor restarts\n${formatTable(table)}\n`);
  });

  /** Starts one run whose paid steps stop 3 s after saving their references; restarts the vendor right there. */
  async function restartAtFirstPoll(week: string, keepState: boolean) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vendor-restart-'));
    cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
    const stateFile = path.join(dir, 'vendor-state', 'state.json');
    const first = await startTestVendor({ stateFile, jobDurationMs: 200 });
    let current: VendorSimulator = first;
    cleanups.push(() => current.close());
    const taskQueue = uniqueTaskQueue('vendor-restart');
    const worker: WorkerProcess = startWorkerProcess(`vendor-restart-${week}`, {
      address: env.address,
      taskQueue,
      dataDir: dir,
      vendorUrl: first.url,
      failpoints: 'submission.reference-saved=delay:3000',
    });
    cleanups.push(() => worker.stop());
    await worker.waitUntilPolling();
    const key = `vendor-restart-${keepState ? 'kept' : 'lost'}`;
    await env.client.workflow.start(weeklyEpisodeWorkflow, { workflowId: key, taskQueue, args: [{ week }] });
    const store = new FileEpisodeStore(dir);
    const id = parseEpisodeId(`${week}-0`).episodeId;
    await until(
      'video and cover references saved',
      async () => {
        const s = await store.getEpisode(id);
        const refs = Object.values(s?.steps ?? {}).filter((r) => r.remote_job_id);
        return refs.length === 2 ? true : undefined;
      },
      120_000,
    );
    const accepted = first.billing().length;
    await first.close();
    if (!keepState) await fs.rm(stateFile);
    current = await startTestVendor({ stateFile, jobDurationMs: 200, port: first.port });
    return { dir, store, id, key, accepted, worker, vendor: () => current };
  }

  it('state file kept: the restarted vendor answers the polls; the run completes, billing = ledger', async () => {
    const started = Date.now();
    const r = await restartAtFirstPoll('2028-W40', true);
    const [production] = await approveProductions(env.client, r.dir, 1, 5 * 60_000);
    assert.equal(production?.result.outcome, 'completed');
    const counts = await assertInvariants(r.dir, r.vendor(), { keys: [r.key], allCompleted: true });
    assert.equal(counts.charges, 3, 'video, cover, assembly: each charged once, across the restart');
    table.push({
      fault: 'vendor restarted, state file kept',
      moment: 'accepted, before the first poll',
      outcome: 'completed',
      'accepted before the restart': r.accepted,
      ...invariantColumns(counts),
      seconds: Math.round((Date.now() - started) / 1000),
    });
  });

  it('state file lost: production parks both steps for an operator with the reason, and never resubmits', async () => {
    const started = Date.now();
    const r = await restartAtFirstPoll('2028-W41', false);
    assert.equal(r.accepted, 2, 'the lost vendor had accepted (and charged) video and cover');
    const parked = await until(
      'both steps parked',
      async () => {
        const s = await r.store.getEpisode(r.id);
        const steps = Object.values(s?.steps ?? {});
        return steps.length === 2 && steps.every((x) => x.status === 'needs_reconciliation') ? steps : undefined;
      },
      120_000,
    );
    for (const step of parked) assert.match(step.error ?? '', /vendor no longer knows job .+ may have charged it/);
    // Still parked a while later: the activity keeps retrying without polling or submitting anything.
    await sleep(5_000);
    const handle = env.client.workflow.getHandle(productionWorkflowId(r.id));
    assert.equal((await handle.describe()).status.name, 'RUNNING', 'production waits for an operator, not failed');
    const submissions = r
      .vendor()
      .requests()
      .filter((q) => q.method === 'POST' && q.path.startsWith('/v1/jobs'));
    assert.deepEqual(submissions, [], 'nothing resubmitted to the vendor that lost its state');
    const counts = await assertInvariants(r.dir, r.vendor(), { keys: [r.key] });
    table.push({
      fault: 'vendor restarted, state file lost',
      moment: 'accepted, before the first poll',
      outcome: 'parked (needs_reconciliation) by design',
      'accepted before the restart': r.accepted,
      ...invariantColumns(counts),
      seconds: Math.round((Date.now() - started) / 1000),
    });
    await r.worker.stop();
    await handle.terminate('test over: parked by design');
  });
});
