/**
 * `npm run histories:record`: runs fixed scenarios on a fresh dev server (vendor simulator over HTTP, file store in a
 * temp dir, the current workflow code) and writes every workflow's history as JSON to test/histories/<scenario>/.
 * Inputs are fixed (workflow IDs, weeks, decisions), so a re-recording differs only in timestamps and vendor job ids.
 * Re-record only to add new behaviour, never to make a failing replay pass (docs/architecture.md): with
 * `HISTORIES_SET=<name>` the recording goes beside the existing ones (`<scenario>.<name>/`, `manifest.<name>.json`)
 * and overwrites nothing, so the histories of every earlier code version keep replaying.
 */
import { execFileSync } from 'node:child_process';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { weeklyScheduleOptions } from '../../src/cli/schedule-commands';
import { parseAllocationKey } from '../../src/domain/allocation-key';
import { parseWeekId } from '../../src/domain/week-id';
import {
  TASK_QUEUE,
  decisionUpdateId,
  deskDecisionUpdateId,
  paidStepWorkflowId,
  productionWorkflowId,
  reassemblyWorkflowId,
  stepKey,
} from '../../src/domain/names';
import { FileEpisodeStore } from '../../src/store/file-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { episodeProductionWorkflow, weeklyEpisodeWorkflow } from '../../src/workflows';
import {
  approveSignal,
  approveUpdate,
  requestReworkSignal,
  requestReworkUpdate,
  statusQuery,
} from '../../src/workflows/messages';
import { WORKFLOW_TEST_API_KEY, startTestVendor, testDeps } from '../../testkit/deps';
import { runCli } from '../../testkit/processes';
import { waitForScheduledRuns } from '../../testkit/schedules';
import { createTestEnv, createTestWorker, REPO_ROOT, temporalCliPath, workflowBundle } from '../../testkit/temporal';
import { until } from '../../testkit/wait';
import { startWebhookReceiver } from '../../testkit/webhook-receiver';

export const HISTORIES_DIR = path.join(REPO_ROOT, 'test', 'histories');
/** A later recording's name (`HISTORIES_SET`, lower-case words), or undefined for the first one. */
const SET = process.env.HISTORIES_SET || undefined;

async function main(): Promise<void> {
  if (SET !== undefined && !/^[a-z0-9-]+$/.test(SET)) throw new Error(`HISTORIES_SET must be lower-case words: ${SET}`);
  const manifestFile = path.join(HISTORIES_DIR, SET === undefined ? 'manifest.json' : `manifest.${SET}.json`);
  // A set is recorded once: a second recording under the same name would replace evidence of what ran.
  if (SET !== undefined && (await fs.stat(manifestFile).catch(() => undefined))) {
    throw new Error(`${manifestFile} exists: record a new behaviour under a new HISTORIES_SET name`);
  }
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  const env = await createTestEnv();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'record-'));
  const store = new FileEpisodeStore(dir);
  const vendor = await startTestVendor();
  // The reconciliation scenario needs a vendor without idempotency; its own simulator keeps the others clean.
  const lossyVendor = await startTestVendor();
  // Productions tell a review webhook of every round (the review-notice patch): a local receiver takes the notices.
  const failingWebhook = new Set<string>();
  const receiver = await startWebhookReceiver((body) => (failingWebhook.has(String(body.episode_id)) ? 500 : 200));
  const reviewNotice = {
    webhookUrl: new URL(receiver.url),
    publicUrl: new URL('http://127.0.0.1:8240/'),
    timeoutMs: 2_000,
  };
  const client = env.client;
  const recorded: { scenario: string; workflowId: string; workflowType: string; events: number }[] = [];

  async function save(scenario: string, workflowId: string): Promise<void> {
    // The operator's own tool writes the JSON (the SDK's historyToJSON trips over two protobufjs copies).
    const json = execFileSync(
      temporalCliPath(),
      ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', env.address],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    const history = JSON.parse(json) as { events: unknown[] };
    const dirName = SET === undefined ? scenario : `${scenario}.${SET}`;
    const file = path.join(HISTORIES_DIR, dirName, `${workflowId}.json`);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, `${JSON.stringify(history, null, 2)}\n`);
    const { type } = await client.workflow.getHandle(workflowId).describe();
    recorded.push({ scenario: dirName, workflowId, workflowType: type, events: history.events.length });
  }

  const operatorEnv = (vendorUrl: string) => ({
    EPISODES_DATA_DIR: dir,
    EPISODES_STORE_URL: '',
    EPISODES_VENDOR_BASE_URL: vendorUrl,
    EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
    EPISODES_VENDOR_API_KEY_FILE: '',
    TEMPORAL_ADDRESS: env.address,
    EPISODES_TASK_QUEUE: queueFor(vendorUrl),
  });
  const queueFor = (vendorUrl: string) => (vendorUrl === lossyVendor.url ? `${TASK_QUEUE}-lossy` : TASK_QUEUE);

  async function withWorkers<T>(fn: () => Promise<T>): Promise<T> {
    const bundle = await workflowBundle();
    const workers = await Promise.all(
      [vendor, lossyVendor].map((v: VendorSimulator) =>
        createTestWorker({
          connection: env.nativeConnection,
          taskQueue: queueFor(v.url),
          workflowBundle: bundle,
          activities: createActivities(testDeps(store, v, undefined, { reviewNotice })),
        }),
      ),
    );
    return workers[0]!.runUntil(() => workers[1]!.runUntil(fn));
  }

  const allocate = async (key: string, week: string) =>
    (
      await store.allocate({
        allocationKey: parseAllocationKey(key),
        weekId: parseWeekId(week),
        allocatedBy: { kind: 'test', note: 'history recording' },
      })
    ).episodeId;

  const startProduction = (c: Client, id: string, taskQueue = TASK_QUEUE, approvalTimeout?: string) =>
    c.workflow.start(episodeProductionWorkflow, {
      workflowId: productionWorkflowId(id),
      taskQueue,
      args: [{ episodeId: id, approvalTimeout }],
    });

  // Waiting means the round's review notice went out too (code with the review-notice patch), so the history holds it.
  const awaitingApproval = (h: WorkflowHandle<typeof episodeProductionWorkflow>, round = 0) =>
    until(`${h.workflowId} awaiting approval (round ${round})`, async () => {
      const s = await h.query(statusQuery);
      const told = receiver.received.some((r) => r.body.episode_id === s.episodeId && r.body.round === round);
      return s.phase === 'awaiting_approval' && s.reworkRound === round && told ? s : undefined;
    });

  try {
    await withWorkers(async () => {
      // A scheduled weekly run with its production start, and that production's happy path.
      const schedule = await client.schedule.create(
        weeklyScheduleOptions({
          scheduleId: 'rec-weekly',
          taskQueue: TASK_QUEUE,
          timezone: 'UTC',
          workflowIdBase: 'rec-weekly',
          spec: { intervals: [{ every: '1 hour' }] },
          pausedNote: 'driven by backfill',
        }),
      );
      await schedule.backfill({ start: new Date('2026-08-04T08:59:59Z'), end: new Date('2026-08-04T09:00:01Z') });
      const [run] = await waitForScheduledRuns(client, 'rec-weekly', 1);
      const weekly = await client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(run!.workflowId).result();
      const happy = client.workflow.getHandle<typeof episodeProductionWorkflow>(weekly.production.workflowId);
      await awaitingApproval(happy);
      await happy.signal(approveSignal, { by: 'editor@example.com' });
      await happy.result();
      await save('scheduled-weekly-run', run!.workflowId);
      for (const [step, round] of [
        ['video', 0],
        ['cover', 0],
        ['assembly', 0],
      ] as const) {
        await save('happy-path', paidStepWorkflowId(weekly.episodeId, step, round));
      }
      await save('happy-path', happy.workflowId);

      // A rework round, then a reassembly of the completed episode (through the CLI, as an operator does it).
      const reworkId = await allocate('rec-rework', '2026-W33');
      const rework = await startProduction(client, reworkId);
      await awaitingApproval(rework);
      await rework.signal(requestReworkSignal, { notes: 'warmer colours, shorter intro', by: 'editor' });
      await awaitingApproval(rework, 1);
      await rework.signal(approveSignal, { by: 'editor' });
      await rework.result();
      await save('rework-round', rework.workflowId);
      await save('rework-round', paidStepWorkflowId(reworkId, 'rework', 1));
      const reassemble = await runCli(['reassemble', reworkId], operatorEnv(vendor.url));
      if (reassemble.code !== 0) throw new Error(`reassemble failed: ${reassemble.stderr}`);
      await save('reassembly', reassemblyWorkflowId(reworkId, 1));
      await save('reassembly', paidStepWorkflowId(reworkId, 'assembly', 1));

      // A paid step parked in needs_reconciliation (accepted, then the answer was lost), then reconciled.
      lossyVendor.setFaults({ noIdempotency: true, acceptThenDrop: { count: 1 } });
      const lossyId = await allocate('rec-reconcile', '2026-W34');
      const lossy = await startProduction(client, lossyId, queueFor(lossyVendor.url));
      const [key] = await until('a step parked for reconciliation', async () =>
        Object.entries((await store.requireEpisode(lossyId)).steps).find(
          ([, s]) => s.status === 'needs_reconciliation',
        ),
      );
      const charged = await until('the dropped charge', () =>
        Promise.resolve(lossyVendor.billing().find((c) => c.episode_id === lossyId && stepKey(c.kind, 0) === key)),
      );
      const reconcile = await runCli(
        ['reconcile', lossyId, '--step', key, '--remote-job', charged.job_id, '--by', 'ops'],
        operatorEnv(lossyVendor.url),
      );
      if (reconcile.code !== 0) throw new Error(`reconcile failed: ${reconcile.stderr}`);
      await awaitingApproval(lossy);
      await lossy.signal(approveSignal, { by: 'editor' });
      await lossy.result();
      await save('reconciliation', `${lossy.workflowId}-${key}`);
      await save('reconciliation', lossy.workflowId);

      // An approval that expired.
      const expiredId = await allocate('rec-expired', '2026-W35');
      const expired = await startProduction(client, expiredId, TASK_QUEUE, '2 seconds');
      await expired.result();
      await save('approval-expired', expired.workflowId);

      // A weekly run reset to its first workflow task: the same episode, production found, not started again.
      const resetKey = 'rec-reset';
      const first = await client.workflow.start(weeklyEpisodeWorkflow, {
        workflowId: resetKey,
        taskQueue: TASK_QUEUE,
        args: [{ week: '2026-W36' }],
      });
      await first.result();
      execFileSync(
        temporalCliPath(),
        [
          'workflow',
          'reset',
          '--workflow-id',
          resetKey,
          '--run-id',
          first.firstExecutionRunId,
          '--type',
          'FirstWorkflowTask',
          '--reason',
          'history recording',
          '--address',
          env.address,
          '--yes',
        ],
        { stdio: 'pipe' },
      );
      await client.workflow.getHandle(resetKey).result();
      await save('reset-weekly-run', resetKey);

      // What a deploy meets: a production parked at approval (its history is still open), after one rework round.
      const parked = client.workflow.getHandle<typeof episodeProductionWorkflow>(productionWorkflowId('2026-W36-0'));
      await awaitingApproval(parked);
      await parked.signal(requestReworkSignal, { notes: 'shorter', by: 'editor' });
      await awaitingApproval(parked, 1);
      await save('parked-at-approval', parked.workflowId);

      // Decisions through the updates (a rework, then an approval), and a signal that arrives after the round closed.
      const updateId = await allocate('rec-update', '2026-W37');
      const byUpdate = await startProduction(client, updateId);
      await awaitingApproval(byUpdate);
      await byUpdate.executeUpdate(requestReworkUpdate, { args: [{ notes: 'brighter', by: 'editor' }] });
      await awaitingApproval(byUpdate, 1);
      await byUpdate.executeUpdate(approveUpdate, { args: [{ by: 'editor' }] });
      await byUpdate.signal(approveSignal, { by: 'late-editor' });
      await byUpdate.result();
      await save('decisions-by-update', byUpdate.workflowId);

      // A webhook that keeps failing: the round is decided while its notice is being retried, which is cancelled.
      const failingId = await allocate('rec-notice-fails', '2026-W38');
      failingWebhook.add(failingId);
      const unheard = await startProduction(client, failingId);
      await awaitingApproval(unheard);
      await unheard.executeUpdate(approveUpdate, { args: [{ by: 'editor' }] });
      await unheard.result();
      await save('notice-cancelled', unheard.workflowId);

      // Decision signals checked like updates (one with an empty name dropped), and each channel recorded: a rework
      // under the desk's update ID, an approval under the CLI's.
      const channelsId = await allocate('rec-channels', '2026-W39');
      const channels = await startProduction(client, channelsId);
      await awaitingApproval(channels);
      await channels.signal(approveSignal, { by: '', round: 0 });
      await until('the empty-name signal dropped', async () =>
        (await channels.query(statusQuery)).droppedDecisions?.length ? true : undefined,
      );
      await channels.executeUpdate(requestReworkUpdate, {
        args: [{ notes: 'tighter cut', by: 'editor', round: 0 }],
        updateId: deskDecisionUpdateId(channelsId, 0, 'rework', 'editor'),
      });
      await awaitingApproval(channels, 1);
      await channels.executeUpdate(approveUpdate, {
        args: [{ by: 'editor', round: 1 }],
        updateId: decisionUpdateId(channelsId, 1, 'approve', 'editor'),
      });
      await channels.result();
      await save('decisions-by-channel', channels.workflowId);
    });
    const manifest = { recordedOnCommit: commit, recordedAt: new Date().toISOString(), histories: recorded };
    await fs.writeFile(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
    for (const r of recorded) console.log(`${r.scenario}/${r.workflowId}.json  ${r.workflowType}  ${r.events} events`);
  } finally {
    await vendor.close();
    await lossyVendor.close();
    await receiver.close();
    await env.teardown();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
