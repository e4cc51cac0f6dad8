/** The simulator over raw HTTP: the API contract of docs/vendor-api.md, byte for byte where it matters. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { raw, sleep, TEST_API_KEY, useSimulators, videoRequest, waitFor } from '../../../testkit/vendor';
import { scratchDir } from '../../../testkit/scratch';

describe('vendor simulator (raw HTTP)', () => {
  const startSim = useSimulators();

  describe('authentication', () => {
    const endpoints: [string, string][] = [
      ['POST', '/v1/jobs'],
      ['GET', '/v1/jobs/job_x'],
      ['GET', '/v1/jobs?client_ref=k'],
      ['GET', '/v1/prices'],
      ['GET', '/v1/artifacts/art_x'],
      ['GET', '/v1/billing'],
      ['GET', '/v1/no-such-route'],
      ['POST', '/_sim/faults'],
    ];
    for (const [method, p] of endpoints) {
      it(`401 on ${method} ${p} without a key, with a wrong key, with a prefix of the key`, async () => {
        const sim = await startSim();
        const body = method === 'POST' ? videoRequest : undefined;
        for (const key of [null, 'sk-test-wrong', TEST_API_KEY.slice(0, -1), `${TEST_API_KEY}x`]) {
          const res = await raw(sim, method, p, { key, body, idempotencyKey: 'k1' });
          assert.equal(res.status, 401, `key ${String(key)}`);
          assert.equal((res.json as { error: { code: string } }).error.code, 'unauthorized');
        }
        assert.equal(sim.billing().length, 0, 'no unauthenticated request may charge');
        // The right key gets past authentication (whatever the route then says).
        assert.notEqual((await raw(sim, method, p, { body, idempotencyKey: 'k1' })).status, 401);
      });
    }

    it('logs whether a request was authorized, never the key', async () => {
      const lines: string[] = [];
      const sim = await startSim({ log: (l) => lines.push(l) });
      await raw(sim, 'GET', '/v1/prices', { key: null });
      await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      assert.deepEqual(
        sim.requests().map((r) => [r.method, r.path, r.authorized, r.status]),
        [
          ['GET', '/v1/prices', false, 401],
          ['POST', '/v1/jobs', true, 202],
        ],
      );
      assert.equal(lines.length, 2);
      assert.ok(!JSON.stringify([sim.requests(), lines]).includes(TEST_API_KEY));
    });
  });

  describe('POST /v1/jobs', () => {
    it('accepts a job with 202, quotes the price and records exactly one charge', async () => {
      const sim = await startSim();
      const res = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: '"k1"' });
      assert.equal(res.status, 202);
      const accepted = res.json as { job_id: string; status: string; quoted_cost: unknown; client_ref: string };
      assert.equal(accepted.status, 'queued');
      assert.equal(accepted.client_ref, 'k1', 'the RFC 8941 quotes are not part of the key');
      assert.deepEqual(accepted.quoted_cost, { amount_cents: 4200, currency: 'USD' });
      const charges = sim.billing();
      assert.equal(charges.length, 1);
      assert.equal(charges[0]!.job_id, accepted.job_id);
      assert.equal(charges[0]!.client_ref, 'k1');
      assert.equal(charges[0]!.amount_cents, 4200);
    });

    it('same key and same body: the same job replayed, no second charge', async () => {
      const sim = await startSim();
      const first = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      // Same request with its keys in another order: the fingerprint is of the content, not the bytes.
      const reordered = { spec: { style: 'calm', duration_s: 60 }, episode_id: '2026-W32-1', kind: 'video' };
      const second = await raw(sim, 'POST', '/v1/jobs', { body: reordered, idempotencyKey: 'k1' });
      assert.equal(second.status, 202);
      assert.equal(second.text, first.text, 'the stored response is replayed verbatim');
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.equal(sim.billing().length, 1);
    });

    it('same key and a different body: 422, no charge', async () => {
      const sim = await startSim();
      await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      const res = await raw(sim, 'POST', '/v1/jobs', {
        body: { ...videoRequest, spec: { duration_s: 61, style: 'calm' } },
        idempotencyKey: 'k1',
      });
      assert.equal(res.status, 422);
      assert.equal((res.json as { error: { code: string } }).error.code, 'idempotency_key_reused');
      assert.equal(sim.billing().length, 1);
    });

    it('same key while the first request is in flight: 409; after it, a replay', async () => {
      const sim = await startSim({ faults: { latencyMs: 300 } });
      const first = raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      await waitFor(() => sim.requests().length === 1);
      const second = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      assert.equal(second.status, 409);
      assert.equal((second.json as { error: { code: string } }).error.code, 'idempotency_key_in_flight');
      assert.equal((await first).status, 202);
      const third = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      assert.equal(third.status, 202);
      assert.equal(sim.billing().length, 1);
    });

    it('400 without an Idempotency-Key, for malformed JSON and for bad fields; none charges', async () => {
      const sim = await startSim();
      const cases = [
        { body: videoRequest },
        { rawBody: '{"kind":', idempotencyKey: 'k1' },
        { body: { ...videoRequest, kind: 'podcast' }, idempotencyKey: 'k2' },
        { body: { ...videoRequest, episode_id: '' }, idempotencyKey: 'k3' },
        { body: { ...videoRequest, extra: 1 }, idempotencyKey: 'k4' },
        { body: videoRequest, idempotencyKey: 'has space' },
      ];
      for (const c of cases) assert.equal((await raw(sim, 'POST', '/v1/jobs', c)).status, 400, JSON.stringify(c));
      assert.equal(sim.billing().length, 0);
    });

    it('413 for a body over the limit (and the same request under the limit is accepted)', async () => {
      const sim = await startSim({ maxBodyBytes: 1024 });
      const big = { ...videoRequest, spec: { notes: 'x'.repeat(2000) } };
      const res = await raw(sim, 'POST', '/v1/jobs', { body: big, idempotencyKey: 'k1' });
      assert.equal(res.status, 413);
      const small = { ...videoRequest, spec: { notes: 'x'.repeat(500) } };
      assert.equal((await raw(sim, 'POST', '/v1/jobs', { body: small, idempotencyKey: 'k1' })).status, 202);
      assert.equal(sim.billing().length, 1);
    });
  });

  describe('jobs, prices, artifacts', () => {
    it('a job goes queued → running → succeeded by time since acceptance, then has an artifact', async () => {
      const sim = await startSim({ jobDurationMs: 1000 });
      const { job_id } = (await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' })).json as {
        job_id: string;
      };
      const status = async () => (await raw(sim, 'GET', `/v1/jobs/${job_id}`)).json as Record<string, unknown>;
      const early = await status();
      assert.equal(early.status, 'queued');
      assert.equal(early.artifact_id, null);
      assert.equal(early.kind, 'video');
      assert.equal(early.episode_id, '2026-W32-1');
      assert.equal(early.client_ref, 'k1');
      await sleep(600);
      assert.equal((await status()).status, 'running');
      await sleep(500);
      const done = await status();
      assert.equal(done.status, 'succeeded');
      assert.match(String(done.artifact_id), /^art_/);
      assert.equal((await raw(sim, 'GET', '/v1/jobs/job_unknown')).status, 404);
    });

    it('artifacts are deterministic bytes with Content-Length and a sha256 header; 404 before success', async () => {
      const sim = await startSim({ jobDurationMs: 0, artifactBytes: { cover: 1000 } });
      const { job_id } = (await raw(sim, 'POST', '/v1/jobs', {
        body: { ...videoRequest, kind: 'cover' },
        idempotencyKey: 'k1',
      }).then((r) => r.json)) as { job_id: string };
      const job = (await raw(sim, 'GET', `/v1/jobs/${job_id}`)).json as { artifact_id: string };
      const fetchBytes = async () => {
        const res = await fetch(`${sim.url}/v1/artifacts/${job.artifact_id}`, {
          headers: { authorization: `Bearer ${TEST_API_KEY}` },
        });
        return { res, bytes: Buffer.from(await res.arrayBuffer()) };
      };
      const a = await fetchBytes();
      const b = await fetchBytes();
      assert.equal(a.res.status, 200);
      assert.equal(a.bytes.length, 1000);
      assert.equal(a.res.headers.get('content-length'), '1000');
      assert.equal(a.res.headers.get('content-type'), 'image/png');
      assert.equal(a.res.headers.get('x-artifact-sha256'), createHash('sha256').update(a.bytes).digest('hex'));
      assert.deepEqual(a.bytes, b.bytes);
      assert.ok(new Set(a.bytes).size > 200, 'pseudo-random content, not a constant fill');

      const slow = await startSim({ jobDurationMs: 60_000 });
      const queued = (await raw(slow, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' })).json as {
        job_id: string;
      };
      const view = (await raw(slow, 'GET', `/v1/jobs/${queued.job_id}`)).json as { artifact_id: unknown };
      assert.equal(view.artifact_id, null);
      assert.equal((await raw(slow, 'GET', '/v1/artifacts/art_nothing')).status, 404);
    });

    it('prices: defaults, and configurable per kind', async () => {
      const sim = await startSim({ pricesCents: { cover: 999 } });
      assert.deepEqual((await raw(sim, 'GET', '/v1/prices')).json, {
        prices: {
          video: { amount_cents: 4200, currency: 'USD' },
          cover: { amount_cents: 999, currency: 'USD' },
          rework: { amount_cents: 1500, currency: 'USD' },
          assembly: { amount_cents: 800, currency: 'USD' },
        },
      });
      await raw(sim, 'POST', '/v1/jobs', { body: { ...videoRequest, kind: 'cover' }, idempotencyKey: 'k1' });
      assert.equal(sim.billing()[0]!.amount_cents, 999);
    });

    it('GET /v1/jobs?client_ref finds the job of a key, and an empty list for an unused key', async () => {
      const sim = await startSim();
      const accepted = (await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' })).json as {
        job_id: string;
      };
      await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k2' });
      const found = (await raw(sim, 'GET', '/v1/jobs?client_ref=k1')).json as { jobs: { job_id: string }[] };
      assert.deepEqual(
        found.jobs.map((j) => j.job_id),
        [accepted.job_id],
      );
      assert.deepEqual((await raw(sim, 'GET', '/v1/jobs?client_ref=unused')).json, { jobs: [] });
    });

    it('GET /v1/billing lists every charge ever made, or those of one key', async () => {
      const sim = await startSim();
      await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      await raw(sim, 'POST', '/v1/jobs', { body: { ...videoRequest, kind: 'assembly' }, idempotencyKey: 'k2' });
      const { charges } = (await raw(sim, 'GET', '/v1/billing')).json as { charges: unknown[] };
      assert.deepEqual(charges, sim.billing());
      assert.equal(charges.length, 2);
      const ofKey = (await raw(sim, 'GET', '/v1/billing?client_ref=k2')).json as { charges: { client_ref: string }[] };
      assert.deepEqual(
        ofKey.charges.map((c) => c.client_ref),
        ['k2'],
      );
    });
  });

  describe('faults', () => {
    it('fail5xx count: 503 before doing anything, then normal service', async () => {
      const sim = await startSim({ faults: { fail5xx: { count: 2 } } });
      const post = () => raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      assert.equal((await post()).status, 503);
      assert.equal((await raw(sim, 'GET', '/v1/prices')).status, 503);
      assert.equal(sim.billing().length, 0);
      assert.equal((await post()).status, 202);
      assert.equal(sim.billing().length, 1);
    });

    it('fail5xx probability is seeded: the same seed fails the same requests', async () => {
      const pattern = async (seed: number) => {
        const sim = await startSim({ seed, faults: { fail5xx: { probability: 0.5 } } });
        const statuses: number[] = [];
        for (let i = 0; i < 20; i++) statuses.push((await raw(sim, 'GET', '/v1/prices')).status);
        return statuses.join(',');
      };
      const a = await pattern(7);
      assert.equal(await pattern(7), a);
      assert.match(a, /503/);
      assert.match(a, /200/);
    });

    it('fail5xx scope submit: only submissions fail', async () => {
      const sim = await startSim({ faults: { fail5xx: { probability: 1, scope: 'submit' } } });
      assert.equal((await raw(sim, 'GET', '/v1/prices')).status, 200);
      assert.equal((await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' })).status, 503);
      assert.equal(sim.billing().length, 0);
    });

    it('acceptThenDrop: charged, no answer; a retry with the same key replays the same job', async () => {
      const sim = await startSim({ faults: { acceptThenDrop: { count: 1 } } });
      await assert.rejects(raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' }), TypeError);
      assert.equal(sim.billing().length, 1);
      assert.equal(sim.requests()[0]!.dropped, true);
      const retry = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      assert.equal(retry.status, 202);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.equal((retry.json as { job_id: string }).job_id, sim.billing()[0]!.job_id);
      assert.equal(sim.billing().length, 1);
    });

    it('noIdempotency: every POST creates and charges a new job; lookup by reference is 501', async () => {
      const sim = await startSim({ faults: { noIdempotency: true } });
      const a = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      const b = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      const c = await raw(sim, 'POST', '/v1/jobs', { body: videoRequest });
      assert.deepEqual([a.status, b.status, c.status], [202, 202, 202]);
      assert.notEqual((a.json as { job_id: string }).job_id, (b.json as { job_id: string }).job_id);
      assert.equal(sim.billing().length, 3);
      assert.equal((await raw(sim, 'GET', '/v1/jobs?client_ref=k1')).status, 501);
    });

    it('failJobs: the job ends failed, without an artifact, and stays charged', async () => {
      const sim = await startSim({ jobDurationMs: 0, faults: { failJobs: { count: 1 } } });
      const first = (await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' })).json as {
        job_id: string;
      };
      const second = (await raw(sim, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k2' })).json as {
        job_id: string;
      };
      const view = async (id: string) => (await raw(sim, 'GET', `/v1/jobs/${id}`)).json as Record<string, unknown>;
      assert.deepEqual([(await view(first.job_id)).status, (await view(first.job_id)).artifact_id], ['failed', null]);
      assert.equal((await view(second.job_id)).status, 'succeeded');
      assert.equal(sim.billing().length, 2);
    });

    it('holdKinds: a held kind stays running, other kinds finish; a set without it releases it', async () => {
      const sim = await startSim({ jobDurationMs: 0, media: 'synthetic', faults: { holdKinds: ['video'] } });
      const submit = async (body: Record<string, unknown>, key: string) =>
        ((await raw(sim, 'POST', '/v1/jobs', { body, idempotencyKey: key })).json as { job_id: string }).job_id;
      const video = await submit(videoRequest, 'k1');
      const cover = await submit({ ...videoRequest, kind: 'cover' }, 'k2');
      const status = async (id: string) =>
        ((await raw(sim, 'GET', `/v1/jobs/${id}`)).json as { status: string }).status;
      assert.deepEqual([await status(video), await status(cover)], ['running', 'succeeded']);
      sim.setFaults({});
      assert.equal(await status(video), 'succeeded');
      assert.equal(sim.billing().length, 2);
    });

    it('latencyMs delays answers', async () => {
      const sim = await startSim({ faults: { latencyMs: 400 } });
      const started = Date.now();
      await raw(sim, 'GET', '/v1/prices');
      assert.ok(Date.now() - started >= 390);
      sim.setFaults({});
      const again = Date.now();
      await raw(sim, 'GET', '/v1/prices');
      assert.ok(Date.now() - again < 390);
    });

    it('setFaults and POST /_sim/faults replace the fault set; counts are consumed; bad sets are refused', async () => {
      const sim = await startSim();
      sim.setFaults({ fail5xx: { count: 1 } });
      assert.equal((await raw(sim, 'GET', '/v1/prices')).status, 503);
      assert.deepEqual(sim.faults(), { fail5xx: { count: 0 } });

      const set = await raw(sim, 'POST', '/_sim/faults', { body: { noIdempotency: true } });
      assert.equal(set.status, 200);
      assert.deepEqual(sim.faults(), { noIdempotency: true });
      assert.deepEqual((await raw(sim, 'GET', '/_sim/faults')).json, { noIdempotency: true });
      assert.equal((await raw(sim, 'POST', '/_sim/faults', { body: { latencyMs: -1 } })).status, 400);
      assert.equal((await raw(sim, 'POST', '/_sim/faults', { body: { nope: true } })).status, 400);
      assert.equal((await raw(sim, 'POST', '/_sim/faults', { body: {}, key: 'wrong-key-123' })).status, 401);
      assert.deepEqual(sim.faults(), { noIdempotency: true });
      assert.throws(() => sim.setFaults({ acceptThenDrop: { count: -1 } }));
    });
  });

  describe('stateFile', () => {
    it('jobs, charges and idempotency records survive a restart', async () => {
      const stateFile = path.join(scratchDir('vendor-sim-'), 'nested', 'state.json');
      const first = await startSim({ stateFile });
      const accepted = await raw(first, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      await first.close();
      assert.equal(JSON.parse(readFileSync(stateFile, 'utf8')).schema, 'vendor-sim-state/v1');

      const second = await startSim({ stateFile });
      assert.deepEqual(second.billing(), first.billing());
      const replay = await raw(second, 'POST', '/v1/jobs', { body: videoRequest, idempotencyKey: 'k1' });
      assert.equal(replay.status, 202);
      assert.equal(replay.text, accepted.text);
      const conflict = await raw(second, 'POST', '/v1/jobs', {
        body: { ...videoRequest, spec: {} },
        idempotencyKey: 'k1',
      });
      assert.equal(conflict.status, 422);
      const job = (accepted.json as { job_id: string }).job_id;
      assert.equal((await raw(second, 'GET', `/v1/jobs/${job}`)).status, 200);
      assert.equal(second.billing().length, 1);
    });
  });
});
