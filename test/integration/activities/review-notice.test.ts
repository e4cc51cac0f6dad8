/**
 * The send activity on its own (MockActivityEnvironment, a real receiver on 127.0.0.1): which answers are retried,
 * which are not, that a redirect is not followed, and that no failure message quotes the webhook's secret path.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure, CancelledFailure, type MetricMeter } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createReviewNoticeActivities, type ReviewNoticeSettings } from '../../../src/activities/review-notice';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import { buildReviewNotice } from '../../../src/domain/review-notice';
import { ErrorType } from '../../../src/domain/errors';
import type { EpisodeStore } from '../../../src/store/episode-store';
import { closedPort } from '../../../testkit/vendor';
import {
  WEBHOOK_SECRET,
  startWebhookReceiver,
  type Answer,
  type WebhookReceiver,
} from '../../../testkit/webhook-receiver';

const { episodeId, weekId } = parseEpisodeId('2026-W32-0');
const notice = buildReviewNotice({
  episodeId,
  weekId,
  round: 1,
  costCents: 4200,
  budgetCents: 20_000,
  currency: 'USD',
  waitingSince: '2026-08-03T09:00:00.000Z',
  publicUrl: new URL('https://desk.example.com/'),
});

function sender(webhookUrl: string | undefined, timeoutMs = 2_000) {
  const settings: ReviewNoticeSettings = {
    webhookUrl: webhookUrl === undefined ? undefined : new URL(webhookUrl),
    publicUrl: undefined,
    timeoutMs,
  };
  // The send reads nothing from the store.
  return createReviewNoticeActivities({ store: {} as EpisodeStore, budgetCents: 20_000, reviewNotice: settings });
}

/** Counted outcomes of `episodes_review_notices`, and log lines, of the activities run in `mock()`. */
let counted: string[] = [];
let logged: string[] = [];
const meter = {
  createCounter: (name: string) => ({
    add: (_value: number, tags: Record<string, string>) => counted.push(`${name}:${tags.outcome}`),
  }),
} as unknown as MetricMeter;
const logger = new DefaultLogger('DEBUG', (entry) => logged.push(`${entry.level} ${entry.message}`));
const mock = () => new MockActivityEnvironment(undefined, { metricMeter: meter, logger });

/** The failure a send ends with, and whether Temporal would retry it. */
async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const e = await p.then(
    () => assert.fail('the send succeeded'),
    (x: unknown) => x,
  );
  assert.ok(e instanceof ApplicationFailure, String(e));
  assert.equal(e.type, ErrorType.ReviewWebhookFailed);
  assert.ok(!e.message.includes(WEBHOOK_SECRET), `the secret path in: ${e.message}`);
  return e;
}

describe('sendReviewNotice: answers, retries, redirects, timeouts', () => {
  let receiver: WebhookReceiver | undefined;
  beforeEach(() => {
    counted = [];
    logged = [];
  });
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });
  const receiving = async (answer: Answer) => (receiver = await startWebhookReceiver(() => answer));

  it('2xx: sent once, with the round dedupe key and the message as JSON', async () => {
    const r = await receiving(200);
    await mock().run(sender(r.url).sendReviewNotice, notice);
    assert.equal(r.received.length, 1);
    assert.equal(r.received[0]!.key, '2026-W32-0:review:r1');
    assert.deepEqual(r.received[0]!.body, JSON.parse(JSON.stringify(notice)));
    assert.deepEqual(counted, ['episodes_review_notices:sent']);
  });

  it('5xx, 429, 408 are retried; other 4xx are not', async () => {
    for (const [status, retried] of [
      [500, true],
      [503, true],
      [429, true],
      [408, true],
      [400, false],
      [404, false],
      [410, false],
    ] as const) {
      const r = await receiving(status);
      const e = await failureOf(mock().run(sender(r.url).sendReviewNotice, notice));
      assert.equal(e.nonRetryable, !retried, `HTTP ${status}`);
      assert.deepEqual(counted, [`episodes_review_notices:${retried ? 'failed' : 'refused'}`]);
      assert.ok(logged.some((l) => l.startsWith('WARN') && l.includes(`failed: HTTP ${status}`)));
      assert.ok(logged.every((l) => !l.includes(WEBHOOK_SECRET)));
      counted = [];
      await r.close();
      receiver = undefined;
    }
  });

  it('a redirect is not followed (the message would go elsewhere) and is not retried', async () => {
    const r = await receiving(200);
    const redirecting = http.createServer((_req, res) => res.writeHead(307, { location: r.url }).end());
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/hooks/${WEBHOOK_SECRET}`;
      const e = await failureOf(mock().run(sender(url).sendReviewNotice, notice));
      assert.equal(e.nonRetryable, true);
      assert.equal(r.received.length, 0, 'nothing reached the redirect target');
    } finally {
      redirecting.closeAllConnections();
      await new Promise<void>((resolve) => redirecting.close(() => resolve()));
    }
  });

  it('no answer in time, or nobody listening: retried, said without the URL', async () => {
    const r = await receiving('hang');
    const hung = await failureOf(mock().run(sender(r.url, 300).sendReviewNotice, notice));
    assert.equal(hung.nonRetryable, false);
    assert.match(hung.message, /no answer within 300 ms/);
    const url = `http://127.0.0.1:${await closedPort()}/hooks/${WEBHOOK_SECRET}`;
    const refused = await failureOf(mock().run(sender(url).sendReviewNotice, notice));
    assert.equal(refused.nonRetryable, false);
    assert.match(refused.message, /ECONNREFUSED/);
  });

  it('cancelled (its round was decided): the POST is abandoned and the activity reports a cancellation', async () => {
    const r = await receiving('hang');
    const env = mock();
    const sending = env.run(sender(r.url, 30_000).sendReviewNotice, notice);
    while (r.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    env.cancel();
    await assert.rejects(sending, (e) => e instanceof CancelledFailure);
    assert.deepEqual(counted, [], 'a cancellation is no failure of the webhook');
  });

  it('a worker without a webhook sends nothing and does not fail', async () => {
    await mock().run(sender(undefined).sendReviewNotice, notice);
    assert.deepEqual(counted, []);
    assert.ok(logged.some((l) => l.includes('no EPISODES_REVIEW_WEBHOOK_URL')));
  });
});
