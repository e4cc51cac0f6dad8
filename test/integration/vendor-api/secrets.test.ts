/**
 * The API key never appears in an error (message, stack, causes, details), a log line, or the client object, in every
 * failure mode, including a vendor that echoes the Authorization header back.
 */
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { VendorClient, type VendorClientLogger } from '../../../src/vendor-api/client';
import {
  assertNoSecret,
  closedPort,
  clientFor,
  everyRendering,
  rejection,
  TEST_API_KEY,
  useHostileServers,
  useSimulators,
  videoRequest,
} from '../../../testkit/vendor';

function capturingLogger(): { logger: VendorClientLogger; lines: string[] } {
  const lines: string[] = [];
  const record = (message: string, meta?: Record<string, unknown>) => lines.push(`${message} ${inspect(meta)}`);
  return { logger: { debug: record, warn: record }, lines };
}

describe('the vendor API key never leaks', () => {
  const startSim = useSimulators();
  const serve = useHostileServers();

  it('the checker itself finds a key hidden in a nested cause (so a pass below means something)', () => {
    const leaky = new Error('outer', { cause: new Error('inner', { cause: { header: `Bearer ${TEST_API_KEY}` } }) });
    assert.ok(everyRendering(leaky).includes(TEST_API_KEY));
    assert.throws(() => assertNoSecret(leaky));
  });

  it('not in errors or log lines of any failure mode against the simulator', async () => {
    const sim = await startSim();
    const { logger, lines } = capturingLogger();
    const client = clientFor(sim, { logger });
    const errors: unknown[] = [];
    sim.setFaults({ fail5xx: { count: 1 } });
    errors.push(await rejection(client.submitJob(videoRequest, 'k1')));
    sim.setFaults({ acceptThenDrop: { count: 1 } });
    errors.push(await rejection(client.submitJob(videoRequest, 'k2')));
    sim.setFaults({ latencyMs: 300 });
    errors.push(await rejection(client.submitJob(videoRequest, 'k3', { timeoutMs: 100 })));
    errors.push(await rejection(client.getBilling({ timeoutMs: 100 })));
    sim.setFaults({});
    errors.push(await rejection(client.submitJob({ ...videoRequest, kind: 'cover' }, 'k2')));
    errors.push(await rejection(client.getJob('job_missing')));
    errors.push(await rejection(client.submitJob(videoRequest, 'bad key')));
    const refused = new VendorClient({
      baseUrl: `http://127.0.0.1:${await closedPort()}`,
      apiKey: TEST_API_KEY,
      logger,
    });
    errors.push(await rejection(refused.submitJob(videoRequest, 'k1')));

    assert.equal(errors.length, 8);
    for (const e of errors) assertNoSecret(e);
    assert.equal(lines.length, 7, 'one log line per request sent (the bad key is refused before sending)');
    assertNoSecret(lines);
    assertNoSecret(client);
    assertNoSecret(sim.requests());
  });

  it('not even when the vendor echoes the Authorization header in its error message or body', async () => {
    const echo = await serve((req, res) => {
      const message = `bad request from ${req.headers.authorization ?? ''}`;
      if (req.url === '/v1/prices') {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { code: 'bad', message } }));
      } else {
        res.writeHead(202, { 'content-type': 'application/json' }).end(`not json: ${message}`);
      }
    });
    // The server really does echo the key: without redaction these errors would carry it.
    const rawRes = await fetch(`${echo.url}/v1/prices`, { headers: { authorization: `Bearer ${TEST_API_KEY}` } });
    assert.ok((await rawRes.text()).includes(TEST_API_KEY));

    const { logger, lines } = capturingLogger();
    const client = clientFor(echo, { logger });
    const rejected = await rejection(client.getPrices());
    assert.ok(String((rejected as Error).message).includes('[REDACTED]'), 'the vendor message is kept, minus the key');
    assertNoSecret(rejected);
    assertNoSecret(await rejection(client.submitJob(videoRequest, 'k1')));
    assertNoSecret(lines);
  });

  it('the key is not in the inspected, stringified or spread client', () => {
    const client = new VendorClient({ baseUrl: 'http://127.0.0.1:1', apiKey: TEST_API_KEY });
    assertNoSecret(client);
    assertNoSecret({ ...client });
  });
});
