/**
 * The client against the simulator over real HTTP: what each failure means for the money. The charge count from the
 * simulator's billing is the ground truth every test checks.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { VendorClient } from '../../../src/vendor-api/client';
import {
  closedPort,
  clientFor,
  rejection,
  sleep,
  TEST_API_KEY,
  useSimulators,
  videoRequest,
  waitFor,
  asVendorError,
} from '../../../testkit/vendor';

describe('vendor client against the simulator', () => {
  const startSim = useSimulators();

  it('submits, polls, downloads the verified artifact, reads prices and billing', async () => {
    // Synthetic bytes: their documented size is checked below (a render's size is the encoder's).
    const sim = await startSim({ jobDurationMs: 20, media: 'synthetic' });
    const client = clientFor(sim);
    const submitted = await client.submitJob(videoRequest, '2026-W32-1-video-r0');
    assert.equal(submitted.replayed, false);
    assert.equal(submitted.client_ref, '2026-W32-1-video-r0');
    assert.deepEqual(submitted.quoted_cost, { amount_cents: 4200, currency: 'USD' });
    await sleep(30);
    const job = await client.getJob(submitted.job_id);
    assert.equal(job.status, 'succeeded');
    assert.ok(job.artifact_id);
    const artifact = await client.downloadArtifact(job.artifact_id);
    assert.equal(artifact.bytes.length, 8192);
    assert.equal(artifact.sha256, createHash('sha256').update(artifact.bytes).digest('hex'));
    assert.equal(artifact.contentType, 'video/mp4');
    assert.equal((await client.getPrices()).cover.amount_cents, 300);
    assert.deepEqual(await client.getBilling(), sim.billing());
  });

  it('a resubmission with the same key returns the same job, replayed, with one charge', async () => {
    const sim = await startSim();
    const client = clientFor(sim);
    const a = await client.submitJob(videoRequest, 'k1');
    const b = await client.submitJob(videoRequest, 'k1');
    assert.equal(b.job_id, a.job_id);
    assert.equal(b.replayed, true);
    assert.equal(sim.billing().length, 1);
  });

  it('findJobsByClientRef: found, none found, and "not supported" are three different answers', async () => {
    const sim = await startSim();
    const client = clientFor(sim);
    const { job_id } = await client.submitJob(videoRequest, 'k1');
    const found = await client.findJobsByClientRef('k1');
    assert.ok(found.supported);
    assert.deepEqual(
      found.jobs.map((j) => j.job_id),
      [job_id],
    );
    assert.deepEqual(await client.findJobsByClientRef('never-used'), { supported: true, jobs: [] });
    sim.setFaults({ noIdempotency: true });
    assert.deepEqual(await client.findJobsByClientRef('k1'), { supported: false });
  });

  describe('submission outcome classification', () => {
    it('accept-then-drop → SubmissionOutcomeUnknown, exactly one charge; reconciling finds the job', async () => {
      const sim = await startSim({ faults: { acceptThenDrop: { count: 1 } } });
      const client = clientFor(sim);
      const e = asVendorError(await rejection(client.submitJob(videoRequest, 'k1')));
      assert.equal(e.type, ErrorType.SubmissionOutcomeUnknown);
      assert.equal(e.outcome, 'unknown');
      assert.equal(e.retryable, false, 'Temporal must not blindly retry this');
      assert.equal(e.details.outcome, 'unknown', 'the outcome survives the ApplicationFailure conversion');
      assert.equal(sim.billing().length, 1);

      const lookup = await client.findJobsByClientRef('k1');
      assert.ok(lookup.supported);
      assert.deepEqual(
        lookup.jobs.map((j) => j.job_id),
        [sim.billing()[0]!.job_id],
      );
      // With an idempotent vendor, resubmitting with the same key is the other safe reconciliation.
      const again = await client.submitJob(videoRequest, 'k1');
      assert.equal(again.replayed, true);
      assert.equal(sim.billing().length, 1);
    });

    it('why "unknown" matters: the same blind resubmission against a non-idempotent vendor pays twice', async () => {
      const sim = await startSim({ faults: { acceptThenDrop: { count: 1 }, noIdempotency: true } });
      const client = clientFor(sim);
      const e = asVendorError(await rejection(client.submitJob(videoRequest, 'k1')));
      assert.equal(e.outcome, 'unknown');
      assert.deepEqual(await client.findJobsByClientRef('k1'), { supported: false });
      await client.submitJob(videoRequest, 'k1');
      assert.equal(sim.billing().length, 2);
    });

    it('5xx → VendorUnavailable, not accepted, nothing charged; the retry succeeds with one charge', async () => {
      const sim = await startSim({ faults: { fail5xx: { count: 1 } } });
      const client = clientFor(sim);
      const e = asVendorError(await rejection(client.submitJob(videoRequest, 'k1')));
      assert.equal(e.type, ErrorType.VendorUnavailable);
      assert.equal(e.outcome, 'not-accepted');
      assert.equal(e.status, 503);
      assert.equal(e.retryable, true);
      assert.equal(sim.billing().length, 0);
      await client.submitJob(videoRequest, 'k1');
      assert.equal(sim.billing().length, 1);
    });

    it('timeout after sending → SubmissionOutcomeUnknown; the vendor did accept and charge', async () => {
      const sim = await startSim({ faults: { latencyMs: 800 } });
      const client = clientFor(sim, { timeoutMs: 250 });
      const e = asVendorError(await rejection(client.submitJob(videoRequest, 'k1')));
      assert.equal(e.type, ErrorType.SubmissionOutcomeUnknown);
      assert.equal(e.outcome, 'unknown');
      assert.equal(e.reason, 'timeout');
      assert.equal(sim.billing().length, 0, 'the client gave up before the vendor decided');
      await waitFor(() => sim.billing().length === 1);
      sim.setFaults({});
      const lookup = await client.findJobsByClientRef('k1');
      assert.ok(lookup.supported);
      assert.equal(lookup.jobs[0]?.job_id, sim.billing()[0]!.job_id);
    });

    it('the caller cancelling mid-flight → outcome unknown too', async () => {
      const sim = await startSim({ faults: { latencyMs: 300 } });
      const client = clientFor(sim);
      const controller = new AbortController();
      const p = client.submitJob(videoRequest, 'k1', { signal: controller.signal });
      await waitFor(() => sim.requests().length === 1);
      controller.abort();
      const e = asVendorError(await rejection(p));
      assert.equal(e.reason, 'aborted');
      assert.equal(e.outcome, 'unknown');
    });

    it('connection refused → VendorUnavailable, not accepted', async () => {
      const client = new VendorClient({ baseUrl: `http://127.0.0.1:${await closedPort()}`, apiKey: TEST_API_KEY });
      const e = asVendorError(await rejection(client.submitJob(videoRequest, 'k1')));
      assert.equal(e.type, ErrorType.VendorUnavailable);
      assert.equal(e.outcome, 'not-accepted');
      assert.equal(e.reason, 'connect-failed');
    });

    it('409 (same key in flight) → VendorUnavailable, not accepted; the first request still gets its job', async () => {
      const sim = await startSim({ faults: { latencyMs: 300 } });
      const client = clientFor(sim);
      const first = client.submitJob(videoRequest, 'k1');
      await waitFor(() => sim.requests().length === 1);
      const e = asVendorError(await rejection(client.submitJob(videoRequest, 'k1')));
      assert.equal(e.type, ErrorType.VendorUnavailable);
      assert.equal(e.status, 409);
      assert.equal(e.outcome, 'not-accepted');
      assert.equal((await first).replayed, false);
      assert.equal(sim.billing().length, 1);
    });

    it('422 (key reused for another request) → VendorRejected, non-retryable', async () => {
      const sim = await startSim();
      const client = clientFor(sim);
      await client.submitJob(videoRequest, 'k1');
      const e = asVendorError(await rejection(client.submitJob({ ...videoRequest, kind: 'cover' }, 'k1')));
      assert.equal(e.type, ErrorType.VendorRejected);
      assert.equal(e.status, 422);
      assert.equal(e.vendorCode, 'idempotency_key_reused');
      assert.equal(e.outcome, 'not-accepted');
      assert.equal(e.retryable, false);
      assert.equal(sim.billing().length, 1);
    });

    it('a wrong key → VendorRejected 401 on submissions and reads, nothing charged', async () => {
      const sim = await startSim();
      const client = new VendorClient({ baseUrl: sim.url, apiKey: 'sk-test-not-the-right-key' });
      const submit = asVendorError(await rejection(client.submitJob(videoRequest, 'k1')));
      assert.deepEqual([submit.type, submit.status, submit.outcome], [ErrorType.VendorRejected, 401, 'not-accepted']);
      const read = asVendorError(await rejection(client.getPrices()));
      assert.deepEqual([read.type, read.status, read.outcome], [ErrorType.VendorRejected, 401, null]);
      assert.equal(sim.billing().length, 0);
    });
  });

  describe('reads', () => {
    it('getJob of an unknown job → VendorRejected 404', async () => {
      const sim = await startSim();
      const e = asVendorError(await rejection(clientFor(sim).getJob('job_missing')));
      assert.deepEqual([e.type, e.status], [ErrorType.VendorRejected, 404]);
    });

    it('a read that times out → VendorUnavailable (retryable), no outcome', async () => {
      const sim = await startSim({ faults: { latencyMs: 400 } });
      const e = asVendorError(await rejection(clientFor(sim, { timeoutMs: 100 }).getBilling()));
      assert.deepEqual(
        [e.type, e.reason, e.outcome, e.retryable],
        [ErrorType.VendorUnavailable, 'timeout', null, true],
      );
    });

    it('a per-call timeout overrides the client default', async () => {
      const sim = await startSim({ faults: { latencyMs: 200 } });
      const client = clientFor(sim, { timeoutMs: 50 });
      assert.equal((await client.getPrices({ timeoutMs: 2000 })).video.amount_cents, 4200);
    });
  });

  describe('input checks before anything is sent', () => {
    it('refuses bad idempotency keys, bad requests and path-like ids with InvalidInput', async () => {
      const sim = await startSim();
      const client = clientFor(sim);
      const cases: Promise<unknown>[] = [
        client.submitJob(videoRequest, ''),
        client.submitJob(videoRequest, 'with space'),
        client.submitJob(videoRequest, 'quote"'),
        client.submitJob({ ...videoRequest, kind: 'podcast' as 'video' }, 'k1'),
        client.submitJob({ ...videoRequest, spec: { n: 1n } }, 'k1'),
        client.getJob('../billing'),
        client.downloadArtifact('a/b'),
        client.findJobsByClientRef(''),
      ];
      for (const p of cases) {
        const e = await rejection(p);
        assert.ok(isPipelineError(e, ErrorType.InvalidInput), String(e));
      }
      assert.equal(sim.requests().length, 0);
    });

    it('refuses to send the key over plain http to a non-local host, or with credentials in the URL', () => {
      for (const baseUrl of ['http://vendor.example.com', 'https://u:p@vendor.example.com', 'ftp://127.0.0.1']) {
        assert.throws(
          () => new VendorClient({ baseUrl, apiKey: TEST_API_KEY }),
          (e) => isPipelineError(e, ErrorType.InvalidInput),
        );
      }
      assert.equal(
        new VendorClient({ baseUrl: 'https://vendor.example.com/api', apiKey: TEST_API_KEY }).baseUrl.href,
        'https://vendor.example.com/api/',
      );
    });
  });
});
