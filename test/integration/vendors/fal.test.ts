/** The fal adapter against the fal simulator over real HTTP, and against fal's documented sample bodies. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { z } from 'zod';
import type { EpisodeId } from '../../../src/domain/episode-id';
import type { FalSimulator } from '../../../src/vendor-sim/fal';
import { vendorsFromEnv } from '../../../src/vendors/directory';
import { FalHttp } from '../../../src/vendors/fal-http';
import { FAL_JWKS_TTL_MS } from '../../../src/vendors/fal-jwks';
import { firstFileUrl, listSchema, statusSchema, submitSchema, webhookSchema } from '../../../src/vendors/fal-api';
import type { CallbackRequest, VendorAdapter, VendorJob } from '../../../src/vendors/port';
import { isVendorError } from '../../../src/vendor-api/vendor-error';
import { until, waitFor } from '../../../testkit/wait';
import { FAL_TEST_KEY, startTestFal, testFalAdapter } from '../../../testkit/fal';
import { webhookCapture } from '../../../testkit/vendor';

const SAMPLES = path.join(__dirname, '..', '..', '..', '..', 'test', 'vendor-samples', 'fal');
const EPISODE = '2026-W32-1' as EpisodeId;

describe('fal adapter', function () {
  this.timeout(30_000);
  let sim: FalSimulator;
  let fal: VendorAdapter;
  beforeEach(async () => {
    sim = await startTestFal();
    fal = testFalAdapter(sim);
  });
  afterEach(() => sim.close());

  const submit = (round = 0, callbackUrl: URL | null = null) =>
    fal.submit({
      step: 'video',
      episodeId: EPISODE,
      spec: { prompt: 'a lighthouse' },
      ref: `${EPISODE}:video:r${round}`,
      callbackUrl,
    });
  const finished = (jobId: string) =>
    until(
      'the request to end',
      async () => {
        const job = await fal.get(jobId);
        return job.status === 'succeeded' || job.status === 'failed' ? job : undefined;
      },
      10_000,
      20,
    );

  it('parses every documented sample body', () => {
    const http = new FalHttp(FAL_TEST_KEY, 1000);
    const parsers: Record<string, (json: unknown, raw: Buffer) => void> = {
      'submit.json': (j) => assert.ok(parse(submitSchema, j).request_id),
      'status-in-queue.json': (j) => assert.equal(parse(statusSchema, j).status, 'IN_QUEUE'),
      'status-in-progress.json': (j) => assert.equal(parse(statusSchema, j).status, 'IN_PROGRESS'),
      'status-completed.json': (j) => assert.equal(parse(statusSchema, j).error, undefined),
      'status-completed-error.json': (j) => assert.equal(parse(statusSchema, j).error_type, 'runner_disconnected'),
      'result.json': (j) => assert.match(firstFileUrl(j) ?? '', /^https:\/\/v3b\.fal\.media\//),
      'requests-by-endpoint.json': (j) => assert.equal(parse(listSchema, j).items.length, 1),
      'webhook-ok.json': (j) => assert.equal(parse(webhookSchema, j).status, 'OK'),
      'webhook-error.json': (j) => assert.equal(parse(webhookSchema, j).status, 'ERROR'),
      'webhook-payload-error.json': (j) => assert.equal(parse(webhookSchema, j).payload, null),
      'error-422.json': (_, raw) => {
        const e = http.statusError('submitJob', 422, raw);
        assert.equal(e.outcome, 'not-accepted');
        assert.match(e.message, /Input should be/);
      },
      'error-request-timeout.json': (_, raw) => {
        const e = http.statusError('submitJob', 504, raw);
        assert.equal(e.outcome, 'unknown', 'a gateway 5xx may come after the request was queued');
        assert.match(e.message, /Request timed out/);
      },
      // The adapter never cancels (a cancel does not stop a running model from billing); the body is fal's.
      'cancel.json': (j) => assert.deepEqual(j, { status: 'CANCELLATION_REQUESTED' }),
    };
    const files = readdirSync(SAMPLES).filter((f) => f.endsWith('.json'));
    assert.deepEqual(files.sort(), Object.keys(parsers).sort(), 'every sample has a parser');
    for (const f of files) {
      const raw = readFileSync(path.join(SAMPLES, f));
      parsers[f]!(JSON.parse(raw.toString('utf8')), raw);
    }
  });

  it('submit, get, download and billing round trip: the cost is the metered amount, at the end', async () => {
    const accepted = await submit();
    assert.equal(accepted.cost, null, 'metered: no cost at acceptance');
    const done = await finished(accepted.job_id);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.client_ref, `${EPISODE}:video:r0`, 'the listing vouches for the step');
    assert.equal(done.kind, 'video');
    assert.deepEqual(done.cost, { amount_cents: 35, currency: 'USD' }, '5 seconds at 7 cents');
    const bytes = await fal.download(done);
    assert.ok(bytes.length > 0);
    const charges = await fal.billing(`${EPISODE}:video:r0`);
    assert.deepEqual(
      charges?.map((c) => [c.job_id, c.amount_cents]),
      [[done.job_id, 35]],
    );
    assert.deepEqual(
      sim.billing().map((c) => c.amount_cents),
      [35],
    );
    const found = await fal.find(`${EPISODE}:video:r0`);
    assert.deepEqual(found === 'unsupported' ? found : found.map((j) => j.job_id), [done.job_id]);
    const prices = await fal.prices();
    assert.deepEqual(prices.video, { min_cents: 7, max_cents: 6000, currency: 'USD' });
  });

  it('a platform retry keeps the request id and bills once', async () => {
    sim.setFaults({ runnerRetries: { count: 1, attempts: 2 } });
    const done = await finished((await submit()).job_id);
    assert.equal(done.status, 'succeeded');
    assert.equal(sim.billing().length, 1);
  });

  it('a 500 is never charged (ledger 0); a 422 is billed as the events say', async () => {
    sim.setFaults({ failJobs: { count: 1, status: 500 } });
    const a = await finished((await submit(0)).job_id);
    assert.equal(a.status, 'failed');
    assert.deepEqual(a.cost, { amount_cents: 0, currency: 'USD' });
    sim.setFaults({ failJobs: { count: 1, status: 422 } });
    const b = await finished((await submit(1)).job_id);
    assert.equal(b.status, 'failed');
    assert.deepEqual(b.cost, { amount_cents: 7, currency: 'USD' }, 'one unit of GPU time');
  });

  it('a webhook whose signature fails, or is too old, is refused', async () => {
    const done = await finished((await submit()).job_id);
    const requestId = done.job_id.split('@')[1]!;
    const body = Buffer.from(JSON.stringify({ request_id: requestId, status: 'OK', payload: {}, error: null }));
    const url = new URL(`http://127.0.0.1/hook?ref=${encodeURIComponent(`${EPISODE}:video:r0`)}`);
    const ok = await fal.readCallback!({ url, headers: sim.signWebhook(requestId, body), body });
    assert.deepEqual(ok, { ref: `${EPISODE}:video:r0`, jobId: done.job_id, status: 'succeeded' });
    const tampered = Buffer.from(body.toString('utf8').replace('"OK"', '"ERROR"'));
    const refusals = [
      { url, headers: sim.signWebhook(requestId, body), body: tampered },
      { url, headers: sim.signWebhook(requestId, body, Math.floor(Date.now() / 1000) - 301), body },
      { url, headers: { ...sim.signWebhook(requestId, body), 'x-fal-webhook-signature': 'ab'.repeat(64) }, body },
      { url, headers: {}, body },
    ];
    for (const request of refusals) {
      await assert.rejects(fal.readCallback!(request), (e) => isVendorError(e) && e.operation === 'readCallback');
    }
  });

  it('the JWKS is kept: many webhooks cost one fetch, forged ones no more, a rotated key is fetched once', async () => {
    let now = Date.now();
    const clocked = testFalAdapter(sim, undefined, { now: () => now });
    const done = await finished((await submit()).job_id);
    const requestId = done.job_id.split('@')[1]!;
    const body = Buffer.from(JSON.stringify({ request_id: requestId, status: 'OK', payload: {}, error: null }));
    const url = new URL(`http://127.0.0.1/hook?ref=${encodeURIComponent(`${EPISODE}:video:r0`)}`);
    const signed = () => ({ url, headers: sim.signWebhook(requestId, body, Math.floor(now / 1000)), body });
    const forged = () => ({ url, headers: { ...signed().headers, 'x-fal-webhook-signature': 'ab'.repeat(64) }, body });
    const fetches = () => sim.requests().filter((r) => r.path === '/.well-known/jwks.json').length;
    const refusedAll = async (n: number, request: () => CallbackRequest) => {
      const results = await Promise.allSettled(Array.from({ length: n }, () => clocked.readCallback!(request())));
      assert.ok(results.every((r) => r.status === 'rejected'));
    };

    const first = await Promise.all(Array.from({ length: 10 }, () => clocked.readCallback!(signed())));
    for (let i = 0; i < 10; i++) await clocked.readCallback!(signed());
    assert.ok(first.every((c) => c.jobId === done.job_id));
    assert.equal(fetches(), 1, '20 webhooks, 10 of them at once: one fetch');
    await refusedAll(50, forged);
    assert.equal(fetches(), 1, 'forged signatures within the minute: no refetch');

    sim.rotateWebhookKey();
    await refusedAll(1, signed);
    assert.equal(fetches(), 1, 'a new key within a minute of the last fetch waits');
    now += 61_000;
    assert.equal((await clocked.readCallback!(signed())).jobId, done.job_id, 'the rotated key is picked up');
    assert.equal(fetches(), 2);
    await Promise.all(Array.from({ length: 10 }, () => clocked.readCallback!(signed())));
    await refusedAll(50, forged);
    assert.equal(fetches(), 2, 'and kept');
    now += 61_000;
    await refusedAll(50, forged);
    assert.equal(fetches(), 3, 'a minute on, 50 forged signatures at once cost one refetch between them');
    now += FAL_JWKS_TTL_MS;
    await clocked.readCallback!(signed());
    assert.equal(fetches(), 4, 'kept for FAL_JWKS_TTL_MS at most');
  });

  it('the callback receiver’s reader (vendorsFromEnv) needs no key and keeps one JWKS for every callback', async () => {
    const done = await finished((await submit()).job_id);
    const requestId = done.job_id.split('@')[1]!;
    const body = Buffer.from(JSON.stringify({ request_id: requestId, status: 'OK', payload: {}, error: null }));
    const url = new URL(`http://127.0.0.1/hook?ref=${encodeURIComponent(`${EPISODE}:video:r0`)}`);
    const vendors = vendorsFromEnv({ EPISODES_FAL_JWKS_URL: sim.jwksUrl });
    for (let i = 0; i < 5; i++) {
      const reader = await vendors.openCallbacks('fal');
      const callback = await reader!.readCallback({ url, headers: sim.signWebhook(requestId, body), body });
      assert.equal(callback.jobId, done.job_id);
    }
    assert.equal(sim.requests().filter((r) => r.path === '/.well-known/jwks.json').length, 1);
    assert.equal(await vendors.openCallbacks('native'), null, 'the native vendor sends no callbacks');
  });

  it('a webhook delivered twice verifies twice and names the same request', async () => {
    const hooks = await rawReceiver();
    try {
      sim.setFaults({ webhookTwice: { count: 1 } });
      const accepted = await submit(0, new URL(`${hooks.url}/fal?ours=1`));
      // The simulator logs a delivery once its answer is in, a moment after the receiver has the request.
      const answered = () => sim.webhooks().filter((d) => d.status !== null).length;
      await waitFor(() => hooks.received.length >= 2 && answered() >= 2, 5_000, 'two deliveries');
      assert.equal(sim.webhooks().filter((d) => d.duplicate).length, 1);
      const callbacks = await Promise.all(hooks.received.map((r) => fal.readCallback!(r)));
      assert.equal(callbacks.length, 2);
      assert.deepEqual(callbacks[0], callbacks[1]);
      assert.deepEqual(callbacks[0], { ref: `${EPISODE}:video:r0`, jobId: accepted.job_id, status: 'succeeded' });
      assert.equal(hooks.received[0]!.url.searchParams.get('ours'), '1', 'our own query is kept');
    } finally {
      await hooks.close();
    }
  });

  it('an output URL expired before the fetch: 404 from downloadArtifact, nothing else', async () => {
    sim.setFaults({ expireFiles: { count: 1 } });
    const done: VendorJob = await finished((await submit()).job_id);
    assert.equal(done.status, 'succeeded');
    await assert.rejects(
      fal.download(done),
      (e) => isVendorError(e) && e.operation === 'downloadArtifact' && e.status === 404,
    );
    assert.equal(sim.requests().filter((r) => r.method === 'POST').length, 1);
  });

  it('a lost request is an unknown job (404 from getJob)', async () => {
    sim.setFaults({ loseJobs: { count: 1 } });
    const accepted = await submit();
    await assert.rejects(
      fal.get(accepted.job_id),
      (e) => isVendorError(e) && e.operation === 'getJob' && e.status === 404,
    );
  });
});

function parse<S extends z.ZodType>(schema: S, json: unknown): z.output<S> {
  return schema.parse(json);
}

/** A webhook receiver keeping each delivery as it arrived: URL, headers, raw bytes (what readCallback is given). */
async function rawReceiver(): Promise<{ url: string; received: CallbackRequest[]; close(): Promise<void> }> {
  const r = await webhookCapture();
  return { url: r.url, received: r.got, close: () => r.close() };
}
