/**
 * The Replicate adapter over real HTTP: against the docs' sample bodies (served as they are, a correlation value added
 * where a test needs one) and against the simulator. No mocks, never the real service.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { ErrorType } from '../../../src/domain/errors';
import { meteredCents } from '../../../src/domain/metered-cost';
import type { EpisodeId } from '../../../src/domain/episode-id';
import {
  CORRELATION_INPUT,
  predictionListSchema,
  predictionSchema,
  problemSchema,
  webhookSecretSchema,
  webhookSignature,
} from '../../../src/vendor-api/replicate-api';
import { startReplicateSimulator, type ReplicateSimulator } from '../../../src/vendor-sim/replicate';
import type { CallbackRequest, Submission, VendorAdapter } from '../../../src/vendors/port';
import { replicateAdapter } from '../../../src/vendors/replicate';
import {
  asVendorError,
  assertNoSecret,
  rejection,
  useHostileServers,
  waitFor,
  webhookCapture,
} from '../../../testkit/vendor';
import { until } from '../../../testkit/wait';

/** Polls an async condition (bounded). */
const eventually = (what: string, fn: () => Promise<boolean>) =>
  until(what, async () => ((await fn()) ? true : undefined), 5_000, 10);

const SAMPLES = path.resolve(__dirname, '../../../../test/vendor-samples/replicate');
const TOKEN = 'r8_test-SECRET-9c2e4a7b1d';
const PRICE = 0.0014;
const MAX = { video: 1000, cover: 300, rework: 1000, assembly: 500 };
const MODEL = 'minimax/video-01';
const REF = '2026-W32-1:video:r0';

const sample = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(path.join(SAMPLES, name), 'utf8')) as Record<string, unknown>;

function adapterFor(url: string, options: { model?: string; token?: string } = {}): VendorAdapter {
  return replicateAdapter({
    baseUrl: url,
    token: options.token ?? TOKEN,
    model: options.model ?? MODEL,
    usdPerSecond: PRICE,
    maxCents: MAX,
    timeoutMs: 2_000,
  });
}

const submission = (ref = REF, callbackUrl: URL | null = null): Submission => ({
  step: 'video',
  episodeId: ref.split(':')[0] as EpisodeId,
  spec: { prompt: 'A lighthouse at dawn' },
  ref,
  callbackUrl,
});

/** A receiver of webhooks: every request as the adapter would be handed it. */
async function receiver(): Promise<{ url: string; got: CallbackRequest[]; close(): Promise<void> }> {
  const r = await webhookCapture();
  return { ...r, url: `${r.url}/hooks/replicate` };
}

describe('replicate adapter: the docs’ sample bodies', () => {
  const serve = useHostileServers();
  /** A server answering every request with `status` and `body`. */
  const answering = (status: number, body: unknown) =>
    serve((_req, res) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)));

  it('every sample parses with its schema', () => {
    const files = readdirSync(SAMPLES).filter((f) => f.endsWith('.json'));
    assert.equal(files.length, 11);
    for (const file of files) {
      const body = sample(file);
      const schema =
        file.startsWith('prediction-') || file === 'webhook.json'
          ? predictionSchema
          : file === 'predictions-list.json'
            ? predictionListSchema
            : file === 'webhook-secret.json'
              ? webhookSecretSchema
              : problemSchema;
      assert.ok(schema.safeParse(body).success, `${file} parses`);
    }
  });

  for (const [file, status, cost] of [
    ['prediction-starting.json', 'queued', null],
    ['prediction-processing.json', 'running', null],
    ['prediction-succeeded.json', 'succeeded', meteredCents(188.338, PRICE)],
    ['prediction-failed.json', 'failed', meteredCents(0.568, PRICE)],
    ['prediction-canceled.json', 'failed', meteredCents(60.008, PRICE)],
  ] as const) {
    it(`get: ${file} → ${status}, cost ${cost ?? 'null'}`, async () => {
      const body = sample(file);
      const server = await answering(200, { ...body, input: { ...(body.input as object), [CORRELATION_INPUT]: REF } });
      const job = await adapterFor(server.url).get(String(body.id));
      assert.equal(job.status, status);
      assert.deepEqual(job.cost, cost === null ? null : { amount_cents: cost, currency: 'USD' });
      assert.equal(job.artifact, status === 'succeeded' ? body.output : null);
      assert.deepEqual([job.episode_id, job.kind, job.client_ref], ['2026-W32-1', 'video', REF]);
    });
  }

  it('get: prediction-data-removed.json (input gone, no webhook query) → 410: it cannot be tied to a step', async () => {
    const body = sample('prediction-data-removed.json');
    const server = await answering(200, body);
    const e = asVendorError(await rejection(adapterFor(server.url).get(String(body.id))));
    assert.deepEqual([e.operation, e.status], ['getJob', 410]);
  });

  it('find: predictions-list.json, the one carrying the correlation value', async () => {
    const list = sample('predictions-list.json') as { results: Record<string, unknown>[] };
    const results = list.results.map((p, i) => ({
      ...p,
      input: { ...(p.input as object), [CORRELATION_INPUT]: `${REF}${i}` },
    }));
    results[1]!.input = { ...(results[1]!.input as object), [CORRELATION_INPUT]: REF };
    const server = await answering(200, { ...list, next: null, results });
    const found = await adapterFor(server.url).find(REF, new Date().toISOString());
    assert.ok(Array.isArray(found));
    assert.deepEqual(
      found.map((j) => j.job_id),
      ['q7hx2m3kfnrgc0cq9abv4xk1pw'],
    );
  });

  it('find: a `next` page on another host is refused (the token stays home)', async () => {
    const server = await answering(200, { ...sample('predictions-list.json'), results: [] });
    const e = asVendorError(await rejection(adapterFor(server.url).find(REF)));
    assert.equal(e.reason, 'malformed-response');
  });

  for (const [file, status, type] of [
    ['error.json', 422, ErrorType.VendorRejected],
    ['error-429.json', 429, ErrorType.VendorUnavailable],
  ] as const) {
    it(`submit answered ${status} (${file}): not accepted`, async () => {
      const server = await answering(status, sample(file));
      const e = asVendorError(await rejection(adapterFor(server.url).submit(submission())));
      assert.deepEqual([e.outcome, e.status, e.type], ['not-accepted', status, type]);
    });
  }

  it('readCallback: webhook.json signed with webhook-secret.json’s key is read; its correlation from the URL', async () => {
    const { key } = sample('webhook-secret.json') as { key: string };
    const server = await answering(200, { key });
    const body = Buffer.from(JSON.stringify(sample('webhook.json')));
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = webhookSignature(key, 'msg_1', timestamp, body);
    const request: CallbackRequest = {
      url: new URL(`https://example.test/hooks?ref=${encodeURIComponent(REF)}`),
      headers: {
        'webhook-id': 'msg_1',
        'webhook-timestamp': timestamp,
        'webhook-signature': `v1,bogus v1,${signature}`,
      },
      body,
    };
    const callback = await adapterFor(server.url).readCallback!(request);
    assert.deepEqual(callback, { ref: REF, jobId: 'q7hx2m3kfnrgc0cq9abv4xk1pw', status: 'succeeded' });
  });

  it('the signature scheme is Standard Webhooks’ (its published test vector)', () => {
    const signature = webhookSignature(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      '1614265330',
      Buffer.from('{"test": 2432232314}'),
    );
    assert.equal(signature, 'g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});

describe('replicate adapter against the simulator', function () {
  this.timeout(30_000);
  const sims: ReplicateSimulator[] = [];
  const start = async (options: Partial<Parameters<typeof startReplicateSimulator>[0]> = {}) => {
    const sim = await startReplicateSimulator({ token: TOKEN, predictionMs: 40, media: 'synthetic', ...options });
    sims.push(sim);
    return sim;
  };
  afterEach(async () => {
    await Promise.all(sims.splice(0).map((s) => s.close()));
  });
  const finished = async (adapter: VendorAdapter, jobId: string) => {
    let job = await adapter.get(jobId);
    await eventually('the prediction’s end', async () => {
      job = await adapter.get(jobId);
      return job.status === 'succeeded' || job.status === 'failed';
    });
    return job;
  };

  it('submit, get, download: the metered cost is the journal’s, to the cent', async () => {
    const sim = await start({ media: 'render' });
    const adapter = adapterFor(sim.url);
    const accepted = await adapter.submit(submission());
    assert.deepEqual([accepted.status, accepted.cost, accepted.client_ref], ['queued', null, REF]);
    const job = await finished(adapter, accepted.job_id);
    assert.equal(job.status, 'succeeded');
    const bytes = await adapter.download(job);
    assert.ok(bytes.length > 0);
    const [charge] = sim.journal();
    assert.equal(charge?.id, job.job_id);
    assert.deepEqual(job.cost, { amount_cents: charge.amount_cents, currency: 'USD' });
    assert.equal(charge.amount_cents, meteredCents(120, PRICE));
    assert.equal(await adapter.billing(REF), null, 'Replicate shows no charges');
  });

  it('a version id is created at /v1/predictions, a model at /v1/models/{owner}/{name}/predictions', async () => {
    const sim = await start();
    await adapterFor(sim.url, { model: 'a'.repeat(64) }).submit(submission());
    await adapterFor(sim.url).submit(submission('2026-W32-1:cover:r0'));
    const creates = sim
      .requests()
      .filter((r) => r.method === 'POST')
      .map((r) => r.path);
    assert.deepEqual(creates, ['/v1/predictions', `/v1/models/${MODEL}/predictions`]);
  });

  it('find: the prediction carrying the step’s correlation value, across pages, newest first', async () => {
    const sim = await start({ pageSize: 2 });
    const adapter = adapterFor(sim.url);
    const since = new Date().toISOString();
    const first = await adapter.submit(submission('2026-W32-1:video:r0'));
    for (let round = 1; round <= 4; round++) await adapter.submit(submission(`2026-W32-1:rework:r${round}`));
    const found = await adapter.find('2026-W32-1:video:r0', since);
    assert.ok(Array.isArray(found));
    assert.deepEqual(
      found.map((j) => j.job_id),
      [first.job_id],
    );
    const pages = sim.requests().filter((r) => r.method === 'GET' && r.path === '/v1/predictions').length;
    assert.equal(pages, 3, 'five predictions, two a page');
    assert.deepEqual(await adapter.find('2026-W32-1:cover:r0', since), [], 'none for a step never sent');
  });

  it('submit: a reply dropped or a gateway 5xx after the create is unknown; a 503 before it, unknown too; 429 not accepted', async () => {
    const sim = await start();
    const adapter = adapterFor(sim.url);
    const outcomes: unknown[] = [];
    for (const faults of [
      { acceptThenDrop: { count: 1 } },
      { fail5xx: { count: 1, created: true } },
      { fail5xx: { count: 1 } },
      { throttle: { count: 1 } },
    ]) {
      sim.setFaults(faults);
      const e = asVendorError(await rejection(adapter.submit(submission())));
      outcomes.push([e.outcome, e.status]);
    }
    assert.deepEqual(outcomes, [
      ['unknown', null],
      ['unknown', 502],
      ['unknown', 503],
      ['not-accepted', 429],
    ]);
    assert.equal(((await adapter.find(REF, new Date(Date.now() - 60_000).toISOString())) as unknown[]).length, 2);
  });

  it('a wrong token: 401, not accepted, and the token never in the error', async () => {
    const sim = await start();
    const e = asVendorError(
      await rejection(adapterFor(sim.url, { token: 'r8_wrong-token-000000' }).submit(submission())),
    );
    assert.deepEqual([e.outcome, e.status, e.type], ['not-accepted', 401, ErrorType.VendorRejected]);
    assertNoSecret(e, 'r8_wrong-token-000000');
  });

  it('webhooks: a signed `completed` is read; a tampered body, another secret or an old timestamp are refused', async () => {
    const sim = await start();
    const hooks = await receiver();
    try {
      const adapter = adapterFor(sim.url);
      const job = await adapter.submit(submission(REF, new URL(hooks.url)));
      await waitFor(() => hooks.got.length > 0);
      const good = hooks.got[0]!;
      assert.equal(good.url.searchParams.get('ref'), REF, 'our correlation rides in the query');
      assert.deepEqual(await adapter.readCallback!(good), { ref: REF, jobId: job.job_id, status: 'succeeded' });
      const tampered = { ...good, body: Buffer.from(good.body.toString('utf8').replace('succeeded', 'failed')) };
      const now = Math.floor(Date.now() / 1000);
      const old = String(now - 3600);
      const resigned = (secret: string, ts: string) => ({
        ...good,
        headers: {
          ...good.headers,
          'webhook-timestamp': ts,
          'webhook-signature': `v1,${webhookSignature(secret, good.headers['webhook-id']!, ts, good.body)}`,
        },
      });
      for (const bad of [
        tampered,
        resigned('whsec_' + Buffer.from('another secret!!').toString('base64'), String(now)),
        resigned(sim.webhookSecret, old),
        { ...good, headers: {} },
      ]) {
        const e = asVendorError(await rejection(adapter.readCallback!(bad)));
        assert.deepEqual([e.operation, e.type], ['readCallback', ErrorType.VendorRejected]);
      }
      const secretFetches = sim.requests().filter((r) => r.path === '/v1/webhooks/default/secret').length;
      assert.equal(secretFetches, 1, 'the secret is fetched once and kept');
    } finally {
      await hooks.close();
    }
  });

  it('the `completed` webhook is retried until the receiver takes it (same webhook-id)', async () => {
    const sim = await start({ webhookRetryDelaysMs: [20, 20, 20] });
    let refusals = 2;
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(refusals-- > 0 ? 500 : 200).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
      await adapterFor(sim.url).submit(submission(REF, url));
      await waitFor(() => sim.deliveries().some((d) => d.status === 200));
      const tries = sim.deliveries().map((d) => [d.attempt, d.status]);
      assert.deepEqual(tries, [
        [1, 500],
        [2, 500],
        [3, 200],
      ]);
      assert.equal(new Set(sim.deliveries().map((d) => d.webhookId)).size, 1);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('an output URL expired before the fetch: downloadArtifact 404', async () => {
    const sim = await start({ faults: { expireOutputs: { count: 1 } } });
    const adapter = adapterFor(sim.url);
    const job = await finished(adapter, (await adapter.submit(submission())).job_id);
    const e = asVendorError(await rejection(adapter.download(job)));
    assert.deepEqual([e.operation, e.status], ['downloadArtifact', 404]);
  });

  it('after the retention time (data_removed): the output is gone, downloadArtifact 410; the file URL answers 404', async () => {
    const sim = await start({ retentionMs: 150 });
    const hooks = await receiver();
    try {
      const adapter = adapterFor(sim.url);
      const live = await finished(adapter, (await adapter.submit(submission(REF, new URL(hooks.url)))).job_id);
      await eventually(
        'data_removed',
        async () => (await adapter.get(live.job_id)).artifact?.startsWith('data-removed:') === true,
      );
      const removed = await adapter.get(live.job_id);
      assert.equal(removed.status, 'succeeded', 'its correlation survives in the webhook URL');
      const e = asVendorError(await rejection(adapter.download(removed)));
      assert.deepEqual([e.operation, e.status], ['downloadArtifact', 410]);
      const old = asVendorError(await rejection(adapter.download(live)));
      assert.deepEqual([old.operation, old.status], ['downloadArtifact', 404]);
      // Without a webhook query its input was the only place of the correlation: now neither get nor find can tell.
      const since = new Date(Date.now() - 1000).toISOString();
      const bare = await adapter.submit(submission('2026-W32-1:cover:r0'));
      await eventually('the input removed', () =>
        adapter.get(bare.job_id).then(
          () => false,
          (e: unknown) => asVendorError(e).status === 410,
        ),
      );
      assert.equal(await adapter.find('2026-W32-1:rework:r1', since), 'unsupported', 'it might be that step’s');
    } finally {
      await hooks.close();
    }
  });
});
