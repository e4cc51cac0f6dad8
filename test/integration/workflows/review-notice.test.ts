/**
 * Review notices end to end: real worker processes (`node dist/src/worker.js`) on the real dev server, the vendor
 * simulator over HTTP, and a local webhook receiver (real HTTP on 127.0.0.1). One dedupe key per round, with the
 * desk's link; a worker killed just after sending (failpoint `review-notice.sent`) and the resend carries the same key
 * and the same message; a webhook that hangs, fails or refuses never delays or fails the production, and each attempt
 * is counted on the worker's /metrics. The webhook's secret path reaches no log and no history.
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import { productionWorkflowId, reviewNoticeKey } from '../../../src/domain/names';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { episodeProductionWorkflow } from '../../../src/workflows';
import { approveUpdate, requestReworkUpdate, statusQuery } from '../../../src/workflows/messages';
import { WORKFLOW_TEST_API_KEY, startTestVendor } from '../../../testkit/deps';
import { collect, spawnNode, type ProcessResult } from '../../../testkit/processes';
import { createTestEnv, uniqueTaskQueue } from '../../../testkit/temporal';
import { closedPort } from '../../../testkit/vendor';
import { until } from '../../../testkit/wait';
import {
  WEBHOOK_SECRET,
  startWebhookReceiver,
  type Answer,
  type WebhookReceiver,
} from '../../../testkit/webhook-receiver';
import { parsePrometheus, sumOf } from '../../../testkit/prometheus';

const PUBLIC_URL = 'https://desk.example.com/review';
type Production = WorkflowHandle<typeof episodeProductionWorkflow>;

describe('review notices: a webhook per round, at least once, never in the way of the production', function () {
  this.timeout(300_000);
  let env: TestWorkflowEnvironment;
  let vendor: VendorSimulator;
  let root: string;
  let store: FileEpisodeStore;
  let receiver: WebhookReceiver | undefined;
  let taskQueue: string;
  let week = 40;

  before(async () => {
    env = await createTestEnv();
    vendor = await startTestVendor();
  });
  after(async () => {
    await vendor?.close();
    await env?.teardown();
  });
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'review-notice-'));
    store = new FileEpisodeStore(root);
    taskQueue = uniqueTaskQueue('notice');
  });
  afterEach(async () => {
    await receiver?.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  /** A worker process with the review settings; its output is collected. */
  function startWorker(extra: NodeJS.ProcessEnv): { child: ChildProcess; done: Promise<ProcessResult> } {
    const child = spawnNode('src/worker.js', [], {
      TEMPORAL_ADDRESS: env.address,
      EPISODES_TASK_QUEUE: taskQueue,
      EPISODES_DATA_DIR: root,
      EPISODES_STORE_URL: '',
      EPISODES_VENDOR_BASE_URL: vendor.url,
      EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
      EPISODES_VENDOR_API_KEY_FILE: '',
      EPISODES_BUDGET_CENTS: '20000',
      EPISODES_REVIEW_WEBHOOK_URL: receiver!.url,
      EPISODES_REVIEW_PUBLIC_URL: PUBLIC_URL,
      EPISODES_LOG_LEVEL: 'INFO',
      EPISODES_FAILPOINTS: '',
      ...extra,
    });
    return { child, done: collect(child) };
  }

  async function allocate(key: string): Promise<EpisodeId> {
    const { episodeId } = await store.allocate({
      allocationKey: parseAllocationKey(key),
      weekId: parseWeekId(`2027-W${week++}`),
      allocatedBy: { kind: 'test', note: 'review notices' },
    });
    return episodeId;
  }

  async function startProduction(episodeId: EpisodeId): Promise<[EpisodeId, Production]> {
    const h = await env.client.workflow.start(episodeProductionWorkflow, {
      workflowId: productionWorkflowId(episodeId),
      taskQueue,
      args: [{ episodeId }],
    });
    return [episodeId, h];
  }

  const waiting = (h: Production, round: number) =>
    until(
      `${h.workflowId} waiting in round ${round}`,
      async () => {
        const s = await h.query(statusQuery);
        return s.phase === 'awaiting_approval' && s.reworkRound === round ? s : undefined;
      },
      120_000,
    );

  const scrape = async (address: string) => parsePrometheus(await (await fetch(`http://${address}/metrics`)).text());

  it('one dedupe key per round with the desk link; a worker killed just after sending resends the same key and body', async () => {
    receiver = await startWebhookReceiver();
    const metrics = `127.0.0.1:${await closedPort()}`;
    const first = startWorker({ EPISODES_FAILPOINTS: 'review-notice.sent=kill@1' });
    const [id, h] = await startProduction(await allocate('notice-rounds'));
    const r0 = reviewNoticeKey(id, 0);
    const r1 = reviewNoticeKey(id, 1);

    await until('the round 0 notice', () => (receiver!.of(id).length >= 1 ? true : undefined), 120_000);
    const killed = await first.done;
    assert.equal(killed.signal, 'SIGKILL', `the first worker died at the failpoint: ${killed.stderr}`);
    assert.equal(receiver.of(id).length, 1, 'the first worker sent once, then died before reporting it');

    const second = startWorker({ EPISODES_METRICS_ADDRESS: metrics });
    let samples;
    let details: string;
    try {
      await until('the resend of round 0', () => (receiver!.of(id).length >= 2 ? true : undefined), 120_000);
      await waiting(h, 0);
      await h.executeUpdate(requestReworkUpdate, { args: [{ notes: 'brighter', by: 'editor', round: 0 }] });
      await waiting(h, 1);
      await until('the round 1 notice', () => (receiver!.of(id).some((r) => r.key === r1) ? true : undefined));
      details = await until('details with cost and link', async () => {
        const m = await h.query<{ currentDetails: string }>('__temporal_workflow_metadata');
        return m.currentDetails.includes('round 1') && m.currentDetails.includes('Cost so far')
          ? m.currentDetails
          : undefined;
      });
      await h.executeUpdate(approveUpdate, { args: [{ by: 'editor', round: 1 }] });
      const result = await h.result();
      assert.equal(result.outcome, 'completed');
      const sentBySecond = receiver.of(id).length - 1;
      samples = await until('the sends counted', async () => {
        const s = await scrape(metrics);
        return sumOf(s, 'episodes_review_notices_total', { outcome: 'sent' }) >= sentBySecond ? s : undefined;
      });
    } finally {
      second.child.kill('SIGTERM');
    }
    const out = await second.done;

    const notices = receiver.of(id);
    assert.deepEqual([...new Set(notices.map((n) => n.key))], [r0, r1], 'one dedupe key per round, in order');
    assert.ok(notices.filter((n) => n.key === r0).length >= 2, 'round 0 was resent after the kill');
    for (const key of [r0, r1]) {
      const same = notices.filter((n) => n.key === key);
      for (const n of same) assert.deepEqual(n.body, same[0]!.body, `${key}: every resend carries the same message`);
    }
    const state = await store.requireEpisode(id);
    const ledgerCents = (steps: string[]) =>
      state.ledger.filter((l) => steps.includes(l.step)).reduce((sum, l) => sum + l.amount_cents, 0);
    for (const [key, round, cents] of [
      [r0, 0, ledgerCents(['video', 'cover'])],
      [r1, 1, ledgerCents(['video', 'cover', 'rework'])],
    ] as const) {
      const n = notices.find((x) => x.key === key)!;
      assert.equal(n.contentType, 'application/json');
      assert.equal(typeof n.body.text, 'string', 'Slack reads `text`');
      assert.equal(n.body.dedupe_key, key);
      assert.equal(n.body.episode_id, id);
      assert.equal(n.body.week_id, state.week_id);
      assert.equal(n.body.round, round);
      assert.equal(n.body.link, `${PUBLIC_URL}/episodes/${id}`);
      assert.equal(n.body.cost_so_far_cents, cents, `${key}: the ledger so far`);
      assert.ok(cents > 0);
      assert.equal(n.body.budget_cents, 20_000);
      assert.ok(String(n.body.text).includes(`<${PUBLIC_URL}/episodes/${id}|`), String(n.body.text));
    }
    assert.ok(details.includes(`[${id} on the review desk](${PUBLIC_URL}/episodes/${id})`), details);
    assert.match(details, /Cost so far: \*\*\d+\.\d\d USD\*\* of a 200\.00 USD budget\./);
    assert.equal(sumOf(samples, 'episodes_review_notices_total', { outcome: 'sent' }), notices.length - 1);
    assert.equal(sumOf(samples, 'episodes_review_notices_total', { outcome: 'failed' }), 0);
    assert.ok(out.stdout.includes('review notices to http://127.0.0.1:'), 'the worker says where notices go');
    await assertSecretNowhere([killed, out], [h]);
  });

  it('a webhook that hangs, fails or refuses delays and fails nothing; each attempt is retried or not, logged, counted', async () => {
    const answers = new Map<string, Answer>();
    receiver = await startWebhookReceiver((body) => answers.get(String(body.episode_id)) ?? 200);
    const metrics = `127.0.0.1:${await closedPort()}`;
    // The longest POST timeout there is: a hung attempt stays open for the whole test.
    const worker = startWorker({ EPISODES_METRICS_ADDRESS: metrics, EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS: '30000' });
    const ids = {
      hang: await allocate('notice-hangs'),
      fail: await allocate('notice-fails'),
      refuse: await allocate('notice-refused'),
    };
    answers.set(ids.hang, 'hang');
    answers.set(ids.fail, 500);
    answers.set(ids.refuse, 400);
    const productions: Record<keyof typeof ids, [EpisodeId, Production]> = {
      hang: await startProduction(ids.hang),
      fail: await startProduction(ids.fail),
      refuse: await startProduction(ids.refuse),
    };
    let samples;
    let failedSeen: number;
    try {
      const [hung] = productions.hang;
      const [failing] = productions.fail;
      await until('the hung notice', () => (receiver!.of(hung).length >= 1 ? true : undefined), 120_000);
      await until('the failing notice retried', () => (receiver!.of(failing).length >= 2 ? true : undefined), 120_000);
      await until('the refused notice', () => (receiver!.of(productions.refuse[0]).length >= 1 ? true : undefined));
      for (const [, h] of Object.values(productions)) {
        await waiting(h, 0);
        await h.executeUpdate(approveUpdate, { args: [{ by: 'editor', round: 0 }] });
      }
      for (const [, h] of Object.values(productions)) assert.equal((await h.result()).outcome, 'completed');
      // The hung webhook never answered, and its production completed all the same: nothing waited for it.
      assert.ok(
        receiver.of(hung).every((n) => n.answered === undefined),
        'no attempt of the hung webhook was answered',
      );
      failedSeen = receiver.of(failing).length;
      samples = await until('the failures counted', async () => {
        const s = await scrape(metrics);
        return sumOf(s, 'episodes_review_notices_total', { outcome: 'failed' }) >= failedSeen &&
          sumOf(s, 'episodes_review_notices_total', { outcome: 'refused' }) >= 1
          ? s
          : undefined;
      });
    } finally {
      worker.child.kill('SIGTERM');
    }
    const out = await worker.done;
    assert.equal(out.code, 0, out.stderr);

    const failing = receiver.of(productions.fail[0]);
    assert.ok(failing.length >= 2, 'a failing webhook is retried');
    assert.ok(failing.every((n) => n.key === reviewNoticeKey(productions.fail[0], 0) && n.answered === 500));
    assert.equal(sumOf(samples, 'episodes_review_notices_total', { outcome: 'sent' }), 0);
    assert.equal(sumOf(samples, 'episodes_review_notices_total', { outcome: 'refused' }), 1, 'a 4xx is not retried');
    assert.ok(sumOf(samples, 'episodes_review_notices_total', { outcome: 'failed' }) >= failedSeen);
    assert.ok(out.stdout.includes('failed: HTTP 500, will retry'), 'each failure is logged');
    assert.ok(out.stdout.includes('failed: HTTP 400, not retried'));
    assert.ok(out.stdout.includes('review notice not delivered'), 'the workflow logs a notice it gave up on');
    await assertSecretNowhere(
      [out],
      Object.values(productions).map(([, h]) => h),
    );
  });

  async function assertSecretNowhere(outputs: ProcessResult[], handles: Production[]): Promise<void> {
    for (const o of outputs) {
      assert.ok(!`${o.stdout}${o.stderr}`.includes(WEBHOOK_SECRET), 'the webhook URL leaked into the logs');
    }
    for (const h of handles) {
      const text = everyString(await h.fetchHistory()).join('\n');
      assert.ok(text.includes(h.workflowId), 'payloads were decoded');
      assert.ok(!text.includes(WEBHOOK_SECRET), `the webhook URL leaked into ${h.workflowId}'s history`);
    }
  }
});

/** Every string in a fetched history, payload bytes decoded as UTF-8 (where a leak would hide). */
function everyString(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (value instanceof Uint8Array) out.push(new TextDecoder().decode(value));
  else if (Array.isArray(value)) for (const v of value) everyString(v, out);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) everyString(v, out);
  return out;
}
