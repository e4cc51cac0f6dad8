/**
 * The vendor simulator lets nothing but the exact key through (fast-check): random Authorization headers, near-misses
 * of the key (case, one character more or less, another scheme, the key without a scheme, the key in another header
 * or the query) are 401 and charge nothing; only `Bearer <key>` passes. test/integration/vendor-sim/simulator.test.ts covers the named
 * cases on every route.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as net from 'node:net';
import { TEST_API_KEY, useSimulators, videoRequest } from '../../../testkit/vendor';

/** Header-safe characters (fetch refuses CR, LF and NUL in a header value before sending). */
const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) });

const nearMisses = fc.oneof(
  fc.constant(TEST_API_KEY.toUpperCase()),
  fc.constant(TEST_API_KEY.slice(1)),
  fc.nat({ max: TEST_API_KEY.length - 1 }).map((i) => TEST_API_KEY.slice(0, i) + TEST_API_KEY.slice(i + 1)),
  fc
    .tuple(fc.nat({ max: TEST_API_KEY.length }), fc.integer({ min: 0x21, max: 0x7e }))
    .map(([i, c]) => TEST_API_KEY.slice(0, i) + String.fromCharCode(c) + TEST_API_KEY.slice(i)),
  printable.filter((s) => s.length > 0 && !/\s/.test(s)),
);

interface Attempt {
  headers: Record<string, string>;
  query: string;
  /** What the simulator must decide. */
  authorized: boolean;
}

const attempts: fc.Arbitrary<Attempt> = fc.oneof(
  nearMisses.map((k) => ({ headers: { authorization: `Bearer ${k}` }, query: '', authorized: k === TEST_API_KEY })),
  fc.constantFrom('Basic', 'Token', 'Bearer:', 'Bearer-', '').map((scheme) => ({
    headers: { authorization: `${scheme} ${TEST_API_KEY}`.trim() },
    query: '',
    authorized: false,
  })),
  fc.constant({ headers: { authorization: `Bearer ${TEST_API_KEY} ${TEST_API_KEY}` }, query: '', authorized: false }),
  fc.constant({ headers: { 'x-api-key': TEST_API_KEY }, query: '', authorized: false }),
  fc.constant({ headers: {}, query: `?api_key=${TEST_API_KEY}`, authorized: false }),
  printable.map((h) => ({ headers: { authorization: h }, query: '', authorized: false })),
  fc.constant({ headers: { authorization: `Bearer ${TEST_API_KEY}` }, query: '', authorized: true }),
);

describe('the vendor simulator rejects every credential but the exact key (fast-check)', () => {
  const startSim = useSimulators();

  it('401 and no charge for missing, wrong, near-miss or misplaced keys; the exact key passes', async () => {
    const sim = await startSim();
    let n = 0;
    const seen = { authorized: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(attempts, fc.boolean(), async (attempt, submit) => {
        n++;
        const res = await fetch(`${sim.url}${submit ? '/v1/jobs' : '/v1/prices'}${attempt.query}`, {
          method: submit ? 'POST' : 'GET',
          headers: {
            ...attempt.headers,
            ...(submit ? { 'content-type': 'application/json', 'idempotency-key': `"k${n}"` } : {}),
          },
          body: submit ? JSON.stringify(videoRequest) : undefined,
        });
        await res.arrayBuffer();
        const what = `${JSON.stringify(attempt)} → ${res.status}`;
        if (attempt.authorized) {
          assert.ok(res.status === 200 || res.status === 202, what);
          seen.authorized++;
        } else {
          assert.equal(res.status, 401, what);
          seen.refused++;
        }
        const authorizedSubmissions = sim.requests().filter((r) => r.method === 'POST' && r.authorized).length;
        assert.equal(sim.billing().length, authorizedSubmissions, 'a charge without the key');
      }),
      { numRuns: 300 },
    );
    assert.ok(seen.authorized > 5 && seen.refused > 200, JSON.stringify(seen));
  });

  it('answers a caller without the key before reading its body, and closes the connection', async () => {
    const sim = await startSim();
    const { port } = new URL(sim.url);
    // A body announced as 1 GB and not sent: read first, this would never be answered. Once the answer is in, 1 MB
    // of the body follows; the server has closed by then, so the kernel may answer it with a reset (unread data at
    // close), which counts as the close. An error before the answer fails the test.
    const answer = await new Promise<{ head: string; closed: boolean }>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let head = '';
      socket.on('error', (e: NodeJS.ErrnoException) =>
        head && ['ECONNRESET', 'EPIPE'].includes(e.code ?? '') ? resolve({ head, closed: true }) : reject(e),
      );
      socket.on('data', (d: Buffer) => {
        const first = head === '';
        head += d.toString('latin1');
        if (first) socket.write(Buffer.alloc(1 << 20, 'x'));
      });
      socket.on('close', () => resolve({ head, closed: true }));
      socket.write(
        'POST /v1/jobs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n' +
          'content-length: 1000000000\r\n\r\n',
      );
    });
    assert.match(answer.head, /^HTTP\/1\.1 401 /);
    assert.ok(answer.closed);
    assert.equal(sim.billing().length, 0);
  });
});
