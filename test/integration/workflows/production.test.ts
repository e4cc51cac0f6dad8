import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/common';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../../src/activities';
import { weeklyScheduleOptions } from '../../../src/cli/schedule-commands';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import { parseEpisodeId, type EpisodeId } from '../../../src/domain/episode-id';
import { parseWeekId } from '../../../src/domain/week-id';
import { ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { episodeProductionWorkflow, paidStepWorkflow, type weeklyEpisodeWorkflow } from '../../../src/workflows';
import { approveSignal, requestReworkSignal, statusQuery, stepStatusQuery } from '../../../src/workflows/messages';
import {
  WORKFLOW_TEST_API_KEY,
  spyingCredentials,
  startTestVendor,
  testDeps,
  type SpyingCredentials,
} from '../../../testkit/deps';
import { runCli, spawnNode } from '../../../testkit/processes';
import { promtool } from '../../../testkit/promtool';
import { waitForScheduledRuns } from '../../../testkit/schedules';
import { sleep, until } from '../../../testkit/wait';
import { capturedLogs } from '../../../testkit/setup';
import {
  createTestEnv,
  createTestWorker,
  temporalCliPath,
  uniqueTaskQueue,
  workflowBundle,
} from '../../../testkit/temporal';
import { paidStepWorkflowId, productionWorkflowId } from '../../../src/domain/names';
import { nativeVendors } from '../../../src/vendors/directory';

const execFileAsync = promisify(execFile);

/** The ApplicationFailure type at the bottom of a workflow/child/activity failure chain. */
function rootType(e: unknown): string | undefined {
  let cur: unknown = e;
  while (cur instanceof WorkflowFailedError || cur instanceof ChildWorkflowFailure || cur instanceof ActivityFailure) {
    cur = cur.cause;
  }
  return cur instanceof ApplicationFailure ? (cur.type ?? undefined) : undefined;
}

describe('episode production on the dev server, vendor simulator over HTTP', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  let dir: string;
  let store: FileEpisodeStore;
  let vendor: VendorSimulator;
  let creds: SpyingCredentials;
  let taskQueue: string;

  before(async () => {
    env = await createTestEnv();
    await workflowBundle();
  });
  after(async () => {
    await env?.teardown();
  });
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'prod-'));
    store = new FileEpisodeStore(dir);
    vendor = await startTestVendor();
    creds = spyingCredentials();
    taskQueue = uniqueTaskQueue();
  });
  afterEach(async () => {
    await vendor.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** What an operator's shell has: the data dir, the vendor and its key, the Temporal server. */
  const operatorEnv = () => ({
    EPISODES_DATA_DIR: dir,
    EPISODES_STORE_URL: '',
    EPISODES_VENDOR_BASE_URL: vendor.url,
    EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
    EPISODES_VENDOR_API_KEY_FILE: '',
    TEMPORAL_ADDRESS: env.address,
    EPISODES_TASK_QUEUE: taskQueue,
  });

  async function withWorker<T>(fn: () => Promise<T>, extra: Partial<ActivityDeps> = {}): Promise<T> {
    const worker = await createTestWorker({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createActivities(testDeps(store, vendor, creds, extra)),
    });
    return worker.runUntil(fn);
  }

  // Each test gets its own week, so episode ids (and so workflow IDs) never collide on the shared dev server.
  let weekCounter = 10;
  async function allocate(key: string, week = `2026-W${weekCounter++}`): Promise<EpisodeId> {
    const r = await store.allocate({
      allocationKey: parseAllocationKey(key),
      weekId: parseWeekId(week),
      allocatedBy: { kind: 'test', note: 'production' },
    });
    return r.episodeId;
  }

  function startProduction(id: string): Promise<WorkflowHandle<typeof episodeProductionWorkflow>> {
    return env.client.workflow.start(episodeProductionWorkflow, {
      workflowId: productionWorkflowId(id),
      taskQueue,
      args: [{ episodeId: id }],
    });
  }

  /** Runs a production to its end (for the cases that fail or expire without an operator). */
  const runProduction = (id: string, input: { approvalTimeout?: string } = {}) =>
    env.client.workflow.execute(episodeProductionWorkflow, {
      workflowId: productionWorkflowId(id),
      taskQueue,
      args: [{ episodeId: id, ...input }],
    });

  const awaitingApproval = (h: WorkflowHandle<typeof episodeProductionWorkflow>, reworkRound = 0) =>
    until('awaiting approval', async () => {
      const s = await h.query(statusQuery);
      return s.phase === 'awaiting_approval' && s.reworkRound === reworkRound ? s : undefined;
    });

  /** The money check: one vendor charge per (episode, step, round), and the ledger equals the vendor's billing. */
  async function assertLedgerEqualsBilling(id: EpisodeId, expectedKinds: string[]): Promise<void> {
    const charges = vendor.billing().filter((c) => c.episode_id === id);
    assert.deepEqual(charges.map((c) => c.kind).sort(), [...expectedKinds].sort(), 'one charge per step');
    assert.equal(new Set(charges.map((c) => c.client_ref)).size, charges.length, 'never two charges for one step');
    const state = await store.requireEpisode(id);
    assert.deepEqual(
      state.ledger.map((l) => [l.remote_job_id, l.amount_cents]).sort(),
      charges.map((c) => [c.job_id, c.amount_cents]).sort(),
      'ledger = vendor billing',
    );
  }

  it('happy path: scheduled run → allocation → video + cover → approve → assembly → history with hashes', async () => {
    const handle = await env.client.schedule.create(
      weeklyScheduleOptions({
        scheduleId: 'happy',
        taskQueue,
        timezone: 'UTC',
        workflowIdBase: 'happy',
        spec: { intervals: [{ every: '1 hour' }] },
        pausedNote: 'driven by backfill',
      }),
    );
    await withWorker(async () => {
      await handle.backfill({ start: new Date('2026-08-04T08:59:59Z'), end: new Date('2026-08-04T09:00:01Z') });
      const [run] = await waitForScheduledRuns(env.client, 'happy', 1);
      const weekly = await env.client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(run!.workflowId).result();
      assert.equal(weekly.episodeId, '2026-W32-0');
      assert.equal(weekly.production.startedByThisRun, true);
      const production = env.client.workflow.getHandle<typeof episodeProductionWorkflow>(weekly.production.workflowId);
      await awaitingApproval(production);
      assert.equal(
        (await store.requireEpisode(parseEpisodeId(weekly.episodeId).episodeId)).status,
        'awaiting_approval',
      );
      await production.signal(approveSignal, { by: 'editor@example.com' });
      const result = await production.result();
      assert.equal(result.outcome, 'completed');

      const id = parseEpisodeId(weekly.episodeId).episodeId;
      await assertLedgerEqualsBilling(id, ['video', 'cover', 'assembly']);
      const [entry] = await store.listHistory();
      assert.equal(entry?.episode_id, id);
      assert.equal(entry?.allocation_key, run!.workflowId);
      assert.equal(entry?.approval?.status, 'approved');
      assert.equal(entry?.approval?.by, 'editor@example.com');
      assert.equal(entry?.remote_jobs.length, 3);
      assert.equal(entry?.total_cost_cents, 4200 + 300 + 800);
      for (const name of ['video', 'cover'] as const) {
        const media: { path: string; sha256: string; bytes: number } = entry.media[name]!;
        const bytes = await fs.readFile(path.join(store.mediaDir(id), media.path));
        assert.equal(createHash('sha256').update(bytes).digest('hex'), media.sha256, `${name} hash`);
        assert.equal(bytes.length, media.bytes);
      }
      assert.equal(result.outcome === 'completed' && result.video.sha256, entry.media.video!.sha256);
    });
  });

  it('rework loop: requestRework → one rework charge → approve → assembly', async () => {
    const id = await allocate('rework-run');
    await withWorker(async () => {
      const h = await startProduction(id);
      await awaitingApproval(h);
      // As the README documents it: the operator's `temporal` CLI, not the SDK (async: the worker runs in this process).
      const temporal = async (...args: string[]) =>
        (await execFileAsync(temporalCliPath(), [...args, '--address', env.address], { encoding: 'utf8' })).stdout;
      await temporal(
        'workflow',
        'signal',
        '--workflow-id',
        productionWorkflowId(id),
        '--name',
        'requestRework',
        '--input',
        JSON.stringify({ notes: 'warmer colours, shorter intro', by: 'editor' }),
      );
      await awaitingApproval(h, 1);
      assert.equal((await store.requireEpisode(id)).steps['rework-r1']?.spec.notes, 'warmer colours, shorter intro');
      const queried = await temporal(
        'workflow',
        'query',
        '--workflow-id',
        productionWorkflowId(id),
        '--type',
        'status',
        '--output',
        'json',
      );
      assert.match(queried, /"phase":\s*"awaiting_approval"/);
      await temporal(
        'workflow',
        'signal',
        '--workflow-id',
        productionWorkflowId(id),
        '--name',
        'approve',
        '--input',
        '{"by":"editor"}',
      );
      const result = await h.result();
      assert.equal(result.outcome === 'completed' && result.reworkRounds, 1);
      await assertLedgerEqualsBilling(id, ['video', 'cover', 'rework', 'assembly']);
      const assembly = vendor.billing().find((c) => c.kind === 'assembly')!;
      const rework = vendor.billing().find((c) => c.kind === 'rework')!;
      const state = await store.requireEpisode(id);
      assert.equal(state.steps['assembly-r0']?.spec.video_job, rework.job_id, 'the reworked cut is assembled');
      assert.equal(state.media.video?.sha256, state.media['assembly-r0']?.sha256);
      assert.ok(assembly);

      const status = await runCli(['status', id, '--json'], operatorEnv());
      assert.equal(status.code, 0, status.stderr);
      assert.equal(JSON.parse(status.stdout).production.phase, 'completed');
      const reassemble = await runCli(['reassemble', id], operatorEnv());
      assert.equal(reassemble.code, 0, reassemble.stderr);
      const after = await store.requireEpisode(id);
      assert.equal(after.steps['assembly-r1']?.spec.video_job, rework.job_id);
      assert.equal(after.media.video?.sha256, after.media['assembly-r1']?.sha256, 'the new final video');
      await assertLedgerEqualsBilling(id, ['video', 'cover', 'rework', 'assembly', 'assembly']);
      const again = await runCli(['reassemble', id], operatorEnv());
      assert.equal(again.code, 0, again.stderr);
      assert.ok((await store.requireEpisode(id)).steps['assembly-r2'], 'a second reassembly is a new round');
      // History stays as written at completion; the reassemblies' jobs, charges and final video are the state's.
      const verified = await runCli(['verify', id], operatorEnv());
      assert.equal(verified.code, 0, `${verified.stdout}${verified.stderr}`);
    });
  });

  describe('the guard: unknown episode ids', () => {
    const unknown = '2026-W40-7';

    it('paid activities fail EpisodeNotFound before credentials are read or the vendor is called', async () => {
      const activities = createActivities(testDeps(store, vendor, creds));
      const mock = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
      await assert.rejects(
        mock.run(activities.submitPaidStep, { episodeId: unknown, step: 'video' as const, round: 0, spec: {} }),
        (e) => e instanceof ApplicationFailure && e.type === ErrorType.EpisodeNotFound && e.nonRetryable,
      );
      await assert.rejects(
        mock.run(activities.awaitPaidStep, { episodeId: unknown, step: 'video' as const, round: 0 }),
        (e) => e instanceof ApplicationFailure && e.type === ErrorType.EpisodeNotFound,
      );
      assert.equal(creds.loads, 0, 'credentials never read');
      assert.deepEqual(vendor.requests(), [], 'the vendor saw nothing');
      await assert.rejects(fs.stat(path.join(dir, 'episodes', unknown)), 'no episode created');
    });

    it('paid workflows on the dev server fail EpisodeNotFound, non-retryably, with nothing sent', async () => {
      await withWorker(async () => {
        await assert.rejects(
          env.client.workflow.execute(paidStepWorkflow, {
            workflowId: paidStepWorkflowId(unknown, 'video', 0),
            taskQueue,
            args: [{ episodeId: unknown, step: 'video', round: 0, spec: {} }],
          }),
          (e) => rootType(e) === ErrorType.EpisodeNotFound,
        );
        await assert.rejects(runProduction(unknown), (e) => rootType(e) === ErrorType.EpisodeNotFound);
      });
      assert.equal(creds.loads, 0);
      assert.deepEqual(vendor.requests(), []);
    });

    it('paid CLI commands refuse before credentials, Temporal or the vendor', async () => {
      // Credentials from a file that does not exist and Temporal on a closed port: touching either fails differently.
      const cliEnv = {
        EPISODES_DATA_DIR: dir,
        EPISODES_STORE_URL: '',
        EPISODES_VENDOR_BASE_URL: vendor.url,
        EPISODES_VENDOR_API_KEY: '',
        EPISODES_VENDOR_API_KEY_FILE: path.join(dir, 'no-such-key-file'),
        TEMPORAL_ADDRESS: '127.0.0.1:1',
      };
      for (const args of [
        ['generate', unknown],
        ['approve', unknown],
        ['rework', unknown, '--notes', 'x'],
        ['reassemble', unknown],
        ['status', unknown],
        ['reconcile', unknown, '--step', 'video-r0', '--remote-job', 'job_x'],
      ]) {
        const r = await runCli(args, cliEnv);
        assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, /^episodes: EpisodeNotFound: /, args.join(' '));
      }
      assert.deepEqual(vendor.requests(), []);
      await assert.rejects(fs.stat(path.join(dir, 'episodes', unknown)));
    });
  });

  it('a worker killed after the vendor accepted, before the reference was saved: no second charge, completes', async () => {
    const id = await allocate('crash-after-accept');
    const child = spawnNode('src/worker.js', [], {
      TEMPORAL_ADDRESS: env.address,
      EPISODES_TASK_QUEUE: taskQueue,
      EPISODES_DATA_DIR: dir,
      EPISODES_STORE_URL: '',
      EPISODES_VENDOR_BASE_URL: vendor.url,
      EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
      EPISODES_VENDOR_API_KEY_FILE: '',
      EPISODES_FAILPOINTS: 'submission.accepted=kill',
    });
    const died = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_c, signal) => resolve(signal)));
    const h = await startProduction(id);
    assert.equal(await died, 'SIGKILL');
    const accepted = vendor.billing().filter((c) => c.episode_id === id);
    assert.equal(accepted.length >= 1, true, 'the vendor accepted (and charged) before the worker died');
    const saved = Object.values((await store.requireEpisode(id)).steps).map((s) => s.remote_job_id);
    const unsaved = accepted.filter((c) => !saved.includes(c.job_id));
    assert.ok(unsaved.length >= 1, 'its reference was not saved');
    await withWorker(async () => {
      await awaitingApproval(h);
      await h.signal(approveSignal, { by: 'editor' });
      assert.equal((await h.result()).outcome, 'completed');
    });
    await assertLedgerEqualsBilling(id, ['video', 'cover', 'assembly']);
  });

  it('accept-then-drop at a vendor without idempotency or lookup: needs_reconciliation, no resubmission; reconcile resumes', async () => {
    const id = await allocate('drop-run');
    vendor.setFaults({ noIdempotency: true, acceptThenDrop: { count: 1 } });
    await withWorker(async () => {
      const h = await startProduction(id);
      const parked = await until('a step parked for reconciliation', async () => {
        const state = await store.requireEpisode(id);
        return Object.entries(state.steps).find(([, s]) => s.status === 'needs_reconciliation');
      });
      const [key, record] = parked;
      const step = record.step;
      const stepHandle = env.client.workflow.getHandle(`${productionWorkflowId(id)}-${key}`);
      await until('step phase', async () =>
        (await stepHandle.query(stepStatusQuery)).phase === 'needs_reconciliation' ? true : undefined,
      );
      // Give a (wrong) retry every chance to resubmit, then check it did not.
      await sleep(1500);
      const charged = vendor.billing().filter((c) => c.kind === step);
      assert.equal(charged.length, 1, 'the dropped submission was charged once and never resubmitted');
      assert.equal(
        vendor.requests().filter((r) => r.method === 'POST' && r.idempotencyKey?.includes(`:${step}:`)).length,
        1,
      );

      const prom = path.join(dir, 'ledger.prom');
      const before = await runCli(['ledger', '--json', '--metrics-file', prom], operatorEnv());
      assert.equal(before.code, 1, 'the ledger view flags the unrecorded charge');
      const flagged = await fs.readFile(prom, 'utf8');
      assert.match(flagged, /^episodes_ledger_discrepancies 1$/m, 'the check as a metric, for EpisodesLedgerMismatch');
      assert.deepEqual(promtool(['check', 'metrics'], flagged), { code: 0, output: '' });
      assert.deepEqual(
        JSON.parse(before.stdout).reconciliation.unrecorded_charges.map((c: { job_id: string }) => c.job_id),
        [charged[0]!.job_id],
      );
      const reconcile = await runCli(
        ['reconcile', id, '--step', key, '--remote-job', charged[0]!.job_id, '--by', 'ops'],
        operatorEnv(),
      );
      assert.equal(reconcile.code, 0, reconcile.stderr);
      const settled = await store.requireEpisode(id);
      assert.equal(settled.steps[key]?.reconciliation?.resolution, 'remote-job');
      // Run again (its signal lost to a Temporal restart, as in campaign seed 61206): signalled again, nothing written;
      // another answer is refused.
      const again = await runCli(
        ['reconcile', id, '--step', key, '--remote-job', charged[0]!.job_id, '--by', 'ops'],
        operatorEnv(),
      );
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, new RegExp(`^${id} ${key} (was already )?reconciled;`));
      const other = await runCli(['reconcile', id, '--step', key, '--not-submitted', '--by', 'ops'], operatorEnv());
      assert.match(other.stderr, /nothing to reconcile/);
      assert.equal(other.code, 1);
      assert.deepEqual((await store.requireEpisode(id)).steps[key]?.reconciliation, settled.steps[key]?.reconciliation);
      await awaitingApproval(h);
      await h.signal(approveSignal, { by: 'editor' });
      assert.equal((await h.result()).outcome, 'completed');
    });
    await assertLedgerEqualsBilling(id, ['video', 'cover', 'assembly']);
    const prom = path.join(dir, 'ledger.prom');
    const after = await runCli(['ledger', '--json', '--metrics-file', prom], operatorEnv());
    assert.equal(after.code, 0, after.stderr);
    assert.match(await fs.readFile(prom, 'utf8'), /^episodes_ledger_discrepancies 0$/m);
    assert.equal(JSON.parse(after.stdout).total_cents, 5300);
  });

  it('5xx and timeouts are retried without a duplicate charge', async () => {
    const id = await allocate('flaky-run');
    // Every answer slower than the client's timeout: submissions end "outcome unknown" until the vendor recovers.
    vendor.setFaults({ latencyMs: 1500, fail5xx: { count: 4, scope: 'submit' } });
    await withWorker(
      async () => {
        const h = await startProduction(id);
        await sleep(4000);
        vendor.setFaults({ fail5xx: { count: 3, scope: 'submit' } });
        await awaitingApproval(h);
        await h.signal(approveSignal, { by: 'editor' });
        assert.equal((await h.result()).outcome, 'completed');
      },
      { vendors: nativeVendors(spyingCredentials(), { baseUrl: new URL(vendor.url), timeoutMs: 500 }) },
    );
    assert.ok(
      vendor.requests().some((r) => r.status === 503),
      'the 5xx fault fired',
    );
    await assertLedgerEqualsBilling(id, ['video', 'cover', 'assembly']);
  });

  it('an approval sent as soon as the store says awaiting_approval is never lost', async () => {
    const id = await allocate('prompt-approval');
    // A worker that lingers after marking the store, so the operator acts before the workflow's next task.
    spawnNode('src/worker.js', [], { ...operatorEnv(), EPISODES_FAILPOINTS: 'progress.recorded=delay:3000' });
    const h = await startProduction(id);
    await until('the store says awaiting_approval', async () =>
      (await store.requireEpisode(id)).status === 'awaiting_approval' ? true : undefined,
    );
    const early = await runCli(['approve', id, '--by', 'quick-editor'], operatorEnv());
    assert.equal(early.code, 0, early.stderr);
    const result = await h.result();
    assert.equal(result.outcome === 'completed' && result.approvedBy, 'quick-editor');
    const refused = await runCli(['approve', id], operatorEnv());
    assert.equal(refused.code, 1, 'a completed episode is not awaiting approval');
    assert.match(refused.stderr, /^episodes: InvalidState: /);
  });

  it('an approval deadline that passes ends production clearly, with nothing assembled', async () => {
    const id = await allocate('deadline-run');
    await withWorker(async () => {
      const result = await runProduction(id, { approvalTimeout: '2 seconds' });
      assert.deepEqual(result, { outcome: 'approval_expired', episodeId: id });
    });
    const state = await store.requireEpisode(id);
    assert.equal(state.status, 'failed');
    assert.equal(state.approval?.status, 'expired');
    await assertLedgerEqualsBilling(id, ['video', 'cover']);
    assert.deepEqual(await store.listHistory(), [], 'not completed');
  });

  it('BudgetExceeded: a quote over the cap is refused and nothing is sent', async () => {
    const id = await allocate('budget-run');
    await withWorker(
      async () => {
        await assert.rejects(runProduction(id), (e) => rootType(e) === ErrorType.BudgetExceeded);
      },
      { budgetCents: 250 },
    );
    assert.deepEqual(
      vendor.requests().filter((r) => r.method === 'POST'),
      [],
      'no submission sent',
    );
    assert.deepEqual(vendor.billing(), []);
    assert.deepEqual((await store.requireEpisode(id)).ledger, []);
  });

  it('the API key never appears in workflow histories, logs or state files of a full run', async () => {
    const id = await allocate('secret-run');
    capturedLogs.length = 0;
    await withWorker(async () => {
      const h = await startProduction(id);
      await awaitingApproval(h);
      await h.signal(requestReworkSignal, { notes: 'again', by: 'editor' });
      await awaitingApproval(h, 1);
      await h.signal(approveSignal, { by: 'editor' });
      await h.result();
    });
    assert.ok(creds.loads > 0, 'the key was used');
    let histories = 0;
    let historiesWithPayloadsRead = 0;
    for await (const wf of env.client.workflow.list({ query: `WorkflowId STARTS_WITH 'episode-${id}'` })) {
      const history = await env.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      const text = readableText(history);
      assert.ok(!text.includes(WORKFLOW_TEST_API_KEY), `key found in the history of ${wf.workflowId}`);
      // The search reads payload bytes, not only field names: the episode id travels in every run's input.
      if (text.includes(`"episodeId":"${id}"`)) historiesWithPayloadsRead++;
      histories++;
    }
    assert.ok(histories >= 5, `checked ${histories} histories`);
    assert.ok(historiesWithPayloadsRead >= 5, `payload contents read in ${historiesWithPayloadsRead} histories`);
    assert.ok(capturedLogs.length > 0, 'logs were captured');
    assert.ok(!capturedLogs.some((l) => l.includes(WORKFLOW_TEST_API_KEY)), 'key found in logs');
    const files = await fs.readdir(dir, { recursive: true });
    for (const f of files) {
      const p = path.join(dir, f);
      if ((await fs.stat(p)).isFile()) assert.ok(!(await fs.readFile(p, 'latin1')).includes(WORKFLOW_TEST_API_KEY), p);
    }
  });
});

/**
 * Every string and every byte field (payloads, decoded as latin1) of a decoded history, one per line. Not
 * `JSON.stringify`: it turns a Buffer into `{"type":"Buffer","data":[...numbers]}` before any replacer sees it, so a
 * secret inside a payload would never be found.
 */
function readableText(history: unknown): string {
  const out: string[] = [];
  const walk = (value: unknown): void => {
    if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('latin1'));
    else if (typeof value === 'string') out.push(value);
    else if (value && typeof value === 'object') for (const v of Object.values(value)) walk(v);
  };
  walk(history);
  return out.join('\n');
}
