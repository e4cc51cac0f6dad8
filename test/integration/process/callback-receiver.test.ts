/**
 * Vendor callbacks over real HTTP: the fal simulator's signed webhooks reach the worker's callback receiver. A
 * submission whose reply was lost and that fal does not list yet parks; its webhook then reconciles the step to the
 * vendor's job (once, whatever the redeliveries), and the step settles with one charge. A forged callback changes
 * nothing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type Activities } from '../../../src/activities';
import type { CompletedStep, PaidStepInput, SubmittedStep } from '../../../src/activities/paid-steps';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import { ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';
import { startCallbackReceiver, type CallbackReceiver } from '../../../src/process/callback-receiver';
import type { EpisodeStore } from '../../../src/store/episode-store';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { FalSimulator } from '../../../src/vendor-sim/fal';
import { falVendors, startTestFal } from '../../../testkit/fal';
import { until } from '../../../testkit/wait';

describe('vendor callbacks: signed webhooks reconcile a parked step once', function () {
  this.timeout(60_000);
  let dir: string;
  let sim: FalSimulator;
  let store: FileEpisodeStore;
  let receiver: CallbackReceiver;
  let id: EpisodeId;
  let signals: string[];
  let logged: string[];
  const mock = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'callbacks-'));
    store = new FileEpisodeStore(dir);
    ({ episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('callbacks'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'callbacks' },
    }));
    // fal lists a new request only after a while: the lookup right after the lost reply cannot find its job (the
    // adapter confirms a finished request's ref by the listing, so the wait completes once it is listed).
    sim = await startTestFal({ listingDelayMs: 3_000, jobDurationMs: 200 });
    signals = [];
    logged = [];
    receiver = await startCallbackReceiver(
      {
        store,
        vendors: falVendors(sim),
        signalReconciled: (episode, step, round) => {
          signals.push(`${episode} ${step} r${round}`);
          return Promise.resolve();
        },
        log: (line) => logged.push(line),
      },
      '127.0.0.1:0',
    );
  });
  afterEach(async () => {
    await receiver.close();
    await sim.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function activities() {
    const acts = createActivities({
      store,
      vendors: falVendors(sim),
      budgetCents: 20_000,
      pollIntervalMs: 20,
      callbackUrl: new URL(receiver.url),
    });
    const input = { episodeId: id, step: 'video' as const, round: 0 };
    return {
      submit: () =>
        mock.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(acts.submitPaidStep, {
          ...input,
          spec: { prompt: 'a lighthouse at dawn' },
        }),
      wait: () =>
        mock.run<[Omit<PaidStepInput, 'spec'>], CompletedStep, Activities['awaitPaidStep']>(acts.awaitPaidStep, input),
    };
  }
  const record = async () => (await store.requireEpisode(id)).steps['video-r0'];
  const charges = () => sim.billing().filter((c) => c.ref === `${id}:video:r0`);

  it('a lost reply parks the step; the webhook, delivered twice, reconciles it once; one charge', async () => {
    const step = activities();
    sim.setFaults({ acceptThenDrop: { count: 1 }, webhookTwice: { count: 1 } });
    await assert.rejects(
      step.submit(),
      (e: Error & { type?: string }) => e.type === ErrorType.SubmissionOutcomeUnknown,
    );
    assert.equal((await record())?.status, 'needs_reconciliation');
    await until('both deliveries answered', () =>
      sim.webhooks().filter((w) => w.status !== null).length >= 2 ? true : undefined,
    );
    assert.deepEqual(
      sim.webhooks().map((w) => w.status),
      [200, 200],
      'verified deliveries are acknowledged, so fal stops redelivering',
    );
    const reconciled = await record();
    assert.equal(reconciled?.status, 'submitted');
    assert.equal(reconciled?.reconciliation?.by, 'fal callback');
    assert.match(reconciled?.remote_job_id ?? '', /@/);
    assert.deepEqual(signals, [`${id} video r0`], 'the parked step workflow is signalled once');
    const done = await step.wait();
    assert.equal(done.remoteJobId, reconciled?.remote_job_id);
    assert.equal(sim.requests().filter((r) => r.method === 'POST').length, 1, 'sent once');
    assert.equal(charges().length, 1, 'billed once');
    assert.deepEqual(
      (await store.requireEpisode(id)).ledger.map((l) => l.amount_cents),
      charges().map((c) => c.amount_cents),
    );
  });

  it('a verified delivery after the step settled (late, or redelivered) is a duplicate and changes nothing', async () => {
    const step = activities();
    sim.setFaults({ webhookNever: { count: 1 } });
    await step.submit();
    const done = await step.wait();
    const settled = await record();
    assert.equal(settled?.status, 'succeeded');
    const requestId = done.remoteJobId.slice(done.remoteJobId.lastIndexOf('@') + 1);
    const hook = { request_id: requestId, gateway_request_id: 'g', status: 'OK', payload: {}, error: null };
    const body = Buffer.from(JSON.stringify(hook));
    const url = `${receiver.url}/callbacks/fal?ref=${encodeURIComponent(`${id}:video:r0`)}`;
    const res = await fetch(url, { method: 'POST', body, headers: sim.signWebhook(requestId, body) });
    const answer = [res.status, await res.text()];
    assert.deepEqual(await record(), settled, 'the settled step is not taken back to "submitted"');
    assert.deepEqual(answer, [200, 'duplicate']);
    assert.deepEqual(signals, []);
    assert.equal(charges().length, 1, 'billed once');
  });

  it('a callback whose signature fails is refused (401), logged, and changes nothing', async () => {
    const step = activities();
    sim.setFaults({ acceptThenDrop: { count: 1 }, webhookNever: { count: 1 } });
    await assert.rejects(step.submit());
    const before = await record();
    const body = Buffer.from(JSON.stringify({ request_id: 'req_forged', gateway_request_id: 'g', status: 'OK' }));
    const headers = sim.signWebhook('req_forged', Buffer.from('another body'));
    const url = `${receiver.url}/callbacks/fal?ref=${encodeURIComponent(`${id}:video:r0`)}`;
    const res = await fetch(url, { method: 'POST', body, headers: { ...headers, 'content-type': 'application/json' } });
    assert.equal(res.status, 401);
    assert.deepEqual(await record(), before);
    assert.deepEqual(signals, []);
    assert.match(logged.join('\n'), /refused/);
  });

  it('an unverified callback costs no store read; a verified one is matched to its step', async () => {
    const counted = countingStore(store);
    const guarded = await startCallbackReceiver(
      { store: counted.store, vendors: falVendors(sim), signalReconciled: () => Promise.resolve(), log: () => {} },
      '127.0.0.1:0',
    );
    try {
      const ref = encodeURIComponent(`${id}:video:r0`);
      const requestId = '00000000-0000-4000-8000-0000000000ee';
      const hook = { request_id: requestId, gateway_request_id: 'g', status: 'OK', payload: {}, error: null };
      const body = Buffer.from(JSON.stringify(hook));
      const post = (adapter: string, headers: Record<string, string>) =>
        fetch(`${guarded.url}/callbacks/${adapter}?ref=${ref}`, { method: 'POST', body, headers });
      const forged = sim.signWebhook(requestId, Buffer.from('another body'));
      assert.equal((await post('fal', forged)).status, 401, 'signed over another body');
      assert.equal((await post('fal', { 'content-type': 'application/json' })).status, 401, 'no signature');
      assert.equal((await post('replicate', sim.signWebhook(requestId, body))).status, 404, 'no such adapter');
      assert.deepEqual(counted.calls, [], 'the store is not touched before the signature is verified');
      assert.equal((await post('fal', sim.signWebhook(requestId, body))).status, 200);
      assert.equal(counted.calls[0], 'getEpisode', 'a verified callback reads the step');
    } finally {
      await guarded.close();
    }
  });

  it('a body over 64 KiB, declared or sent, is refused (413) before any check; a stalled request is cut off (408)', async () => {
    const counted = countingStore(store);
    const vendors = falVendors(sim);
    const opened: string[] = [];
    const openCallbacks = (adapter: string) => {
      opened.push(adapter);
      return vendors.openCallbacks(adapter);
    };
    const limited = await startCallbackReceiver(
      {
        store: counted.store,
        vendors: { ...vendors, openCallbacks },
        signalReconciled: () => Promise.resolve(),
        log: () => {},
      },
      '127.0.0.1:0',
    );
    try {
      const head = `POST /callbacks/fal?ref=${encodeURIComponent(`${id}:video:r0`)} HTTP/1.1\r\nHost: receiver\r\n`;
      const chunk = `1000\r\n${'x'.repeat(4096)}\r\n`;
      const [declared, streamed, headers, body] = await Promise.all([
        exchange(limited.url, [`${head}Content-Length: ${65 * 1024}\r\n\r\n`]),
        exchange(limited.url, [`${head}Transfer-Encoding: chunked\r\n\r\n`, chunk.repeat(17), '0\r\n\r\n']),
        exchange(limited.url, [head]),
        exchange(limited.url, [`${head}Content-Length: 100\r\n\r\n{"request_id":`]),
      ]);
      assert.equal(declared, 'HTTP/1.1 413 Payload Too Large', 'a Content-Length over the limit, before the body');
      assert.equal(streamed, 'HTTP/1.1 413 Payload Too Large', 'a chunked body that grows over the limit');
      assert.equal(headers, 'HTTP/1.1 408 Request Timeout', 'headers never finished (headersTimeout)');
      assert.equal(body, 'HTTP/1.1 408 Request Timeout', 'a body that stops short (requestTimeout)');
      assert.deepEqual([opened, counted.calls], [[], []], 'no adapter opened, no store read');
    } finally {
      await limited.close();
    }
  });

  it('bad requests: wrong path or method, a ref that is no step, an oversized body', async () => {
    const get = await fetch(`${receiver.url}/callbacks/fal`);
    assert.equal(get.status, 404);
    const noRef = await fetch(`${receiver.url}/callbacks/fal?ref=..%2Fetc`, { method: 'POST', body: '{}' });
    assert.equal(noRef.status, 400);
    const huge = await fetch(`${receiver.url}/callbacks/fal?ref=${encodeURIComponent(`${id}:video:r0`)}`, {
      method: 'POST',
      body: Buffer.alloc(65 * 1024, 'x'),
    }).catch(() => ({ status: 413 }));
    assert.equal(huge.status, 413);
  });
});

/** The store, with every call it is asked (reads included) kept by name, in order. */
function countingStore(store: EpisodeStore): { store: EpisodeStore; calls: string[] } {
  const calls: string[] = [];
  const counted = new Proxy(store, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        calls.push(String(name));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: counted, calls };
}

/** Writes `parts` on a raw connection; resolves with the status line the receiver answered once it closes it. */
function exchange(url: string, parts: string[]): Promise<string> {
  return new Promise((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = net.connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (d: Buffer) => void (answer += d.toString('latin1')));
    // The receiver drops a connection it refused while the rest of the body is still on its way.
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''));
    for (const part of parts) socket.write(part);
  });
}
