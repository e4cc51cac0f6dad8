/**
 * The vendor client against random responses (fast-check): any status, any body (valid ones with one field changed,
 * arbitrary JSON, binary garbage, error bodies with hostile messages), any artifact headers. A call succeeds exactly
 * when the response is a valid answer to it; otherwise it is a VendorError whose type, retryability and submission
 * outcome follow the documented table, and whose message is one printable line. the vendor-api and vendor-sim tests cover the named cases
 * (oversized, slow, cut off, redirects); this explores the space between them.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type * as http from 'node:http';
import fc from 'fast-check';
import type { z } from 'zod';
import {
  ARTIFACT_SHA256_HEADER,
  billingSchema,
  jobAcceptedSchema,
  jobListSchema,
  pricesSchema,
  vendorJobSchema,
} from '../../../src/vendor-api/api';
import type { VendorClient } from '../../../src/vendor-api/client';
import { isVendorError } from '../../../src/vendor-api/vendor-error';
import { ErrorType } from '../../../src/domain/errors';
import { TEST_API_KEY, clientFor, useHostileServers, videoRequest } from '../../../testkit/vendor';

const money = { amount_cents: 4200, currency: 'USD' };
const job = {
  job_id: 'job_1',
  kind: 'video',
  episode_id: '2026-W32-1',
  status: 'succeeded',
  quoted_cost: money,
  artifact_id: 'art_1',
  client_ref: 'k1',
  accepted_at: '2026-08-03T09:00:00Z',
};
const charge = {
  charge_id: 'ch_1',
  job_id: 'job_1',
  kind: 'video',
  episode_id: '2026-W32-1',
  client_ref: 'k1',
  amount_cents: 4200,
  currency: 'USD',
  at: '2026-08-03T09:00:00Z',
};

interface Operation {
  name: string;
  call: (client: VendorClient) => Promise<unknown>;
  /** A well-formed answer, which the generators mutate. */
  valid: unknown;
  /** Whether a success is the right answer to this response. */
  accepts: (status: number, body: Buffer, headers: http.OutgoingHttpHeaders) => boolean;
  submission?: true;
}

function json(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

const ok2xx = (status: number) => status >= 200 && status <= 299;
const parses = (schema: z.ZodType, body: Buffer) => schema.safeParse(json(body)).success;

const OPERATIONS: Operation[] = [
  {
    name: 'submitJob',
    call: (c) => c.submitJob(videoRequest, 'k1'),
    valid: { job_id: 'job_1', status: 'queued', quoted_cost: money, client_ref: 'k1' },
    accepts: (s, b) =>
      ok2xx(s) && parses(jobAcceptedSchema, b) && [null, 'k1'].includes(jobAcceptedSchema.parse(json(b)).client_ref),
    submission: true,
  },
  {
    name: 'getJob',
    call: (c) => c.getJob('job_1'),
    valid: job,
    accepts: (s, b) => ok2xx(s) && parses(vendorJobSchema, b) && vendorJobSchema.parse(json(b)).job_id === 'job_1',
  },
  {
    name: 'findJobsByClientRef',
    call: (c) => c.findJobsByClientRef('k1'),
    valid: { jobs: [job] },
    accepts: (s, b) =>
      s === 404 ||
      s === 501 || // "lookup not supported" is an answer, not a failure
      (ok2xx(s) && parses(jobListSchema, b) && jobListSchema.parse(json(b)).jobs.every((j) => j.client_ref === 'k1')),
  },
  {
    name: 'getPrices',
    call: (c) => c.getPrices(),
    valid: { prices: { video: money, cover: money, rework: money, assembly: money } },
    accepts: (s, b) => ok2xx(s) && parses(pricesSchema, b),
  },
  {
    name: 'getBilling',
    call: (c) => c.getBilling(),
    valid: { charges: [charge] },
    accepts: (s, b) => ok2xx(s) && parses(billingSchema, b),
  },
  {
    name: 'downloadArtifact',
    call: (c) => c.downloadArtifact('art_1'),
    valid: 'artifact bytes',
    accepts: (s, b, h) => s === 200 && h[ARTIFACT_SHA256_HEADER] === createHash('sha256').update(b).digest('hex'),
  },
];

interface Reply {
  status: number;
  body: Buffer;
  headers: http.OutgoingHttpHeaders;
}

/** A valid answer with one field replaced, added or removed; arbitrary JSON; garbage; an error body. */
function replies(op: Operation): fc.Arbitrary<Reply> {
  const valid = op.valid;
  const mutated: fc.Arbitrary<unknown> =
    typeof valid === 'object' && valid !== null
      ? fc
          .tuple(fc.constantFrom(...Object.keys(valid), 'extra'), fc.option(fc.jsonValue(), { nil: undefined }))
          .map(([k, v]) => {
            const copy: Record<string, unknown> = { ...(valid as Record<string, unknown>) };
            if (v === undefined) delete copy[k];
            else copy[k] = v;
            return copy;
          })
      : fc.string();
  const errorBody = fc
    .record({
      code: fc.oneof(fc.constantFrom('not_found', 'unauthorized'), fc.string()),
      message: fc.string({ unit: 'binary' }),
    })
    .map((error) => ({ error: { ...error, message: `${error.message} ${TEST_API_KEY} \u001b[2J\n` } }));
  const body = fc.oneof(
    { weight: 3, arbitrary: fc.constant(valid).map((v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v))) },
    { weight: 3, arbitrary: mutated.map((v) => Buffer.from(JSON.stringify(v) ?? '')) },
    { weight: 2, arbitrary: fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? '')) },
    { weight: 1, arbitrary: errorBody.map((v) => Buffer.from(JSON.stringify(v))) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)) },
  );
  const status = fc.oneof(
    fc.constantFrom(200, 200, 201, 202, 204, 301, 302, 307, 400, 401, 403, 404, 409, 413, 422, 429, 500, 501, 503),
    fc.integer({ min: 200, max: 599 }),
  );
  const sha = fc.oneof(
    fc.constant('right'),
    fc.constant('absent'),
    fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }),
  );
  return fc.tuple(status, body, sha).map(([s, b, h]) => {
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
    if (h === 'right') headers[ARTIFACT_SHA256_HEADER] = createHash('sha256').update(b).digest('hex');
    else if (h !== 'absent') headers[ARTIFACT_SHA256_HEADER] = h;
    // 204 and 304 carry no body: what the client receives is empty.
    const sent = s === 204 || s === 304 ? Buffer.alloc(0) : b;
    return { status: s, body: sent, headers: { ...headers, 'content-length': sent.length } };
  });
}

/** The documented classification of a failed call (docs/vendor-api.md, client outcome table). */
function assertClassified(op: Operation, reply: Reply, e: unknown): void {
  const what = `${op.name} ← ${reply.status} ${reply.body.toString('latin1').slice(0, 80)}`;
  assert.ok(isVendorError(e), `${what}: not a VendorError: ${String(e)}`);
  assert.match(e.message, /^[\x20-\x7e]*$/, `${what}: the message is not one printable line`);
  assert.ok(!e.message.includes(TEST_API_KEY), `${what}: the key is in the message`);
  assert.equal(e.retryable, e.type === ErrorType.VendorUnavailable, what);
  const s = reply.status;
  const saidLater = s === 409 || s === 429 || (s >= 500 && s <= 599);
  const expectedType = saidLater
    ? ErrorType.VendorUnavailable
    : s >= 400 && s <= 499
      ? ErrorType.VendorRejected
      : op.submission
        ? ErrorType.SubmissionOutcomeUnknown // a 2xx (or 3xx) we cannot use may still be an accepted job
        : ErrorType.VendorUnavailable;
  assert.equal(e.type, expectedType, what);
  if (op.submission)
    assert.equal(e.outcome, expectedType === ErrorType.SubmissionOutcomeUnknown ? 'unknown' : 'not-accepted', what);
  else assert.equal(e.outcome, null, what);
}

describe('hostile input: the vendor client against random responses (fast-check)', () => {
  const serve = useHostileServers();

  it('succeeds exactly on a valid answer; otherwise a classified, retry-correct, one-line VendorError', async () => {
    let current: Reply = { status: 500, body: Buffer.alloc(0), headers: {} };
    const server = await serve((_req, res) => {
      res.writeHead(current.status, current.headers);
      res.end(current.body);
    });
    const client = clientFor(server, { timeoutMs: 5_000 });
    const outcomes = { succeeded: 0, failed: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...OPERATIONS).chain((op) => fc.tuple(fc.constant(op), replies(op))),
        async ([op, reply]) => {
          current = reply;
          const shouldSucceed = op.accepts(reply.status, reply.body, reply.headers);
          try {
            await op.call(client);
          } catch (e) {
            assert.ok(!shouldSucceed, `${op.name} failed on a valid answer ${reply.status}: ${String(e)}`);
            assertClassified(op, reply, e);
            outcomes.failed++;
            return;
          }
          assert.ok(
            shouldSucceed,
            `${op.name} succeeded on ${reply.status} ${reply.body.toString('latin1').slice(0, 120)}`,
          );
          outcomes.succeeded++;
        },
      ),
      { numRuns: 600 },
    );
    assert.ok(outcomes.succeeded > 20 && outcomes.failed > 100, JSON.stringify(outcomes));
  });
});
