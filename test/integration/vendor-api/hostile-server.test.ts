/**
 * Responses no honest vendor sends: malformed, oversized, slow, cut off, inconsistent. Each must be a clear error,
 * never a success; a submission's must say "outcome unknown" whenever a 2xx may have meant an accepted job. Where a
 * limit is the reason, the same server passes once the limit allows it, so the test proves the limit bites.
 */
import assert from 'node:assert/strict';
import type * as http from 'node:http';
import { ErrorType } from '../../../src/domain/errors';
import { clientFor, rejection, useHostileServers, videoRequest, asVendorError } from '../../../testkit/vendor';

const accepted = {
  job_id: 'job_1',
  status: 'queued',
  quoted_cost: { amount_cents: 4200, currency: 'USD' },
  client_ref: 'k1',
};

function json(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

describe('vendor client against a hostile server', () => {
  const serve = useHostileServers();

  it('the honest baseline passes: a well-formed 202 is a success', async () => {
    const server = await serve((_req, res) => json(res, 202, accepted));
    assert.equal((await clientFor(server).submitJob(videoRequest, 'k1')).job_id, 'job_1');
  });

  describe('a 2xx to a submission that cannot be read → outcome unknown, never success', () => {
    const cases: [string, http.RequestListener][] = [
      ['not JSON', (_q, res) => res.writeHead(202).end('<html>accepted</html>')],
      ['JSON of the wrong shape', (_q, res) => json(res, 202, { id: 'job_1' })],
      ['an invalid status', (_q, res) => json(res, 202, { ...accepted, status: 'done' })],
      ['a job id with a path in it', (_q, res) => json(res, 202, { ...accepted, job_id: '../billing' })],
      [
        'a negative price',
        (_q, res) => json(res, 202, { ...accepted, quoted_cost: { amount_cents: -1, currency: 'USD' } }),
      ],
      ['another reference than the key sent', (_q, res) => json(res, 202, { ...accepted, client_ref: 'other' })],
      ['an empty body', (_q, res) => res.writeHead(202).end()],
    ];
    for (const [what, handler] of cases) {
      it(what, async () => {
        const server = await serve(handler);
        const e = asVendorError(await rejection(clientFor(server).submitJob(videoRequest, 'k1')));
        assert.equal(e.type, ErrorType.SubmissionOutcomeUnknown);
        assert.equal(e.outcome, 'unknown');
        assert.equal(e.reason, 'malformed-response');
      });
    }
  });

  it('a malformed read → VendorUnavailable malformed-response', async () => {
    const server = await serve((_req, res) =>
      json(res, 200, { prices: { video: { amount_cents: 1, currency: 'USD' } } }),
    );
    const e = asVendorError(await rejection(clientFor(server).getPrices()));
    assert.deepEqual([e.type, e.reason, e.outcome], [ErrorType.VendorUnavailable, 'malformed-response', null]);
  });

  it('a lookup that returns jobs of another reference is refused, not adopted', async () => {
    const job = {
      ...accepted,
      kind: 'video',
      episode_id: '2026-W32-1',
      artifact_id: null,
      accepted_at: new Date().toISOString(),
    };
    const server = await serve((_req, res) => json(res, 200, { jobs: [{ ...job, client_ref: 'someone-else' }] }));
    const e = asVendorError(await rejection(clientFor(server).findJobsByClientRef('k1')));
    assert.equal(e.reason, 'malformed-response');
  });

  describe('oversized responses', () => {
    it('a declared Content-Length over the cap fails before the body is read', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(202, { 'content-length': 10_000_000 });
        res.write('{');
      });
      const e = asVendorError(
        await rejection(clientFor(server, { maxResponseBytes: 1024 }).submitJob(videoRequest, 'k1')),
      );
      assert.deepEqual([e.reason, e.outcome], ['response-too-large', 'unknown']);
    });

    it('a chunked body growing past the cap fails; the same body under a larger cap parses', async () => {
      const padded = { ...accepted, padding: 'x'.repeat(4000) };
      const server = await serve((_req, res) => {
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(JSON.stringify(padded));
      });
      const e = asVendorError(
        await rejection(clientFor(server, { maxResponseBytes: 1024 }).submitJob(videoRequest, 'k1')),
      );
      assert.deepEqual(
        [e.type, e.reason, e.outcome],
        [ErrorType.SubmissionOutcomeUnknown, 'response-too-large', 'unknown'],
      );
      assert.equal((await clientFor(server, { maxResponseBytes: 8192 }).submitJob(videoRequest, 'k1')).job_id, 'job_1');
    });
  });

  describe('slow and cut-off responses', () => {
    it('headers that never come → timeout, outcome unknown', async () => {
      const server = await serve(() => undefined);
      const e = asVendorError(await rejection(clientFor(server, { timeoutMs: 300 }).submitJob(videoRequest, 'k1')));
      assert.deepEqual([e.type, e.reason, e.outcome], [ErrorType.SubmissionOutcomeUnknown, 'timeout', 'unknown']);
    });

    it('a body that trickles past the deadline → timeout; the same trickle within a longer deadline succeeds', async () => {
      const body = JSON.stringify(accepted);
      const server = await serve((_req, res) => {
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': body.length });
        let i = 0;
        const timer = setInterval(() => {
          res.write(body.slice(i, i + 20));
          i += 20;
          if (i >= body.length) {
            clearInterval(timer);
            res.end();
          }
        }, 80);
        res.on('close', () => clearInterval(timer));
      });
      const e = asVendorError(await rejection(clientFor(server, { timeoutMs: 250 }).submitJob(videoRequest, 'k1')));
      assert.deepEqual([e.reason, e.outcome], ['timeout', 'unknown']);
      assert.equal((await clientFor(server, { timeoutMs: 2000 }).submitJob(videoRequest, 'k1')).job_id, 'job_1');
    });

    it('a 202 cut off mid-body → connection-lost, outcome unknown', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': 500 });
        res.write('{"job_id":"job_1",');
        setTimeout(() => res.socket?.destroy(), 20);
      });
      const e = asVendorError(await rejection(clientFor(server).submitJob(videoRequest, 'k1')));
      assert.deepEqual([e.reason, e.outcome], ['connection-lost', 'unknown']);
    });

    it('a 503 whose body never arrives is still a 503: not accepted', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(503, { 'content-length': 100 });
        res.write('{');
      });
      const e = asVendorError(await rejection(clientFor(server, { timeoutMs: 300 }).submitJob(videoRequest, 'k1')));
      assert.deepEqual([e.type, e.status, e.outcome], [ErrorType.VendorUnavailable, 503, 'not-accepted']);
    });

    it('a redirect is not followed (it would carry the key elsewhere): outcome unknown', async () => {
      const server = await serve((_req, res) => res.writeHead(307, { location: 'http://127.0.0.1:1/v1/jobs' }).end());
      const e = asVendorError(await rejection(clientFor(server).submitJob(videoRequest, 'k1')));
      assert.deepEqual([e.type, e.status, e.outcome], [ErrorType.SubmissionOutcomeUnknown, 307, 'unknown']);
    });
  });

  describe('artifacts', () => {
    const bytes = Buffer.from('artifact bytes');
    const sha = 'a'.repeat(64);

    it('a sha256 header that does not match the bytes → integrity-mismatch', async () => {
      const server = await serve((_req, res) =>
        res.writeHead(200, { 'content-length': bytes.length, 'x-artifact-sha256': sha }).end(bytes),
      );
      const e = asVendorError(await rejection(clientFor(server).downloadArtifact('art_1')));
      assert.deepEqual([e.type, e.reason], [ErrorType.VendorUnavailable, 'integrity-mismatch']);
    });

    it('no sha256 header, or no Content-Length → malformed-response', async () => {
      const noSha = await serve((_req, res) => res.writeHead(200, { 'content-length': bytes.length }).end(bytes));
      assert.equal(
        asVendorError(await rejection(clientFor(noSha).downloadArtifact('art_1'))).reason,
        'malformed-response',
      );
      const chunked = await serve((_req, res) => {
        res.writeHead(200, { 'x-artifact-sha256': sha });
        res.end(bytes);
      });
      assert.equal(
        asVendorError(await rejection(clientFor(chunked).downloadArtifact('art_1'))).reason,
        'malformed-response',
      );
    });

    it('an artifact over the artifact cap → response-too-large', async () => {
      const big = Buffer.alloc(5000, 1);
      const server = await serve((_req, res) => res.writeHead(200, { 'content-length': big.length }).end(big));
      const e = asVendorError(await rejection(clientFor(server, { maxArtifactBytes: 4096 }).downloadArtifact('art_1')));
      assert.equal(e.reason, 'response-too-large');
    });
  });
});
