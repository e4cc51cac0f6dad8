/**
 * The worker's callback receiver with each vendor's real signed webhook, as its simulator sends it for a submission
 * that carried the receiver's URL: a parked step (its submission's outcome unknown) takes the vendor's job and is
 * signalled. Found by `npm run campaign -- --vendor replicate`: the receiver read `ref` from the query, the
 * Replicate adapter wrote `episodes_ref`, so every Replicate callback was refused as a bad ref.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import type { StepRecord } from '../../../src/domain/episode-state';
import { parseWeekId } from '../../../src/domain/week-id';
import { receiveCallback } from '../../../src/process/callback-receiver';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { startReplicateSimulator } from '../../../src/vendor-sim/replicate';
import { vendorDirectory } from '../../../src/vendors/directory';
import type { VendorAdapter } from '../../../src/vendors/port';
import { replicateAdapter } from '../../../src/vendors/replicate';
import { FAL_TEST_MODEL, falVendors, startTestFal, testFalAdapter } from '../../../testkit/fal';
import { webhookCapture } from '../../../testkit/vendor';
import { until } from '../../../testkit/wait';

const TOKEN = 'r8_receiver-test-SECRET-3a9d';
const MODEL = 'acme/media-model';

describe('the callback receiver, with each vendor’s signed webhook', function () {
  this.timeout(20_000);
  let dir: string;
  let store: FileEpisodeStore;
  let id: EpisodeId;
  const closers: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'callback-receiver-'));
    store = new FileEpisodeStore(dir);
    ({ episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('callback-receiver'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'callback receiver' },
    }));
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The step parked as a submission whose outcome is unknown; then its job's webhook, through the receiver. */
  async function parkedThenCalledBack(vendor: string, adapter: VendorAdapter, vendors = directoryOf(vendor, adapter)) {
    const ref = `${id}:video:r0`;
    const record: StepRecord = {
      step: 'video',
      round: 0,
      idempotency_key: ref,
      status: 'needs_reconciliation',
      intent_at: new Date().toISOString(),
      spec: { prompt: 'a lighthouse' },
      remote_job_id: null,
      submitted_at: null,
      quoted_cost: null,
      artifact: null,
      charged: false,
      reconciliation: null,
      error: 'outcome unknown',
      vendor,
    };
    await store.updateEpisode(id, (s) => ({ ...s, steps: { ...s.steps, 'video-r0': record } }));
    const hooks = await webhookCapture();
    closers.push(() => hooks.close());
    const name = vendor.split(':')[0]!;
    const job = await adapter.submit({
      step: 'video',
      episodeId: id,
      spec: { prompt: 'a lighthouse' },
      ref,
      callbackUrl: new URL(`/callbacks/${name}`, hooks.url),
    });
    await until('the completion webhook', () => (hooks.got.length > 0 ? true : undefined));
    const signalled: string[] = [];
    const logged: string[] = [];
    const hook = hooks.got[0]!;
    const answer = await receiveCallback(
      {
        store,
        vendors,
        signalReconciled: (e, step, round) => Promise.resolve(void signalled.push(`${e}:${step}:r${round}`)),
        log: (line) => logged.push(line),
      },
      { method: 'POST', url: hook.url, headers: hook.headers, body: hook.body },
    );
    return { job, answer, signalled, logged, ref };
  }

  function directoryOf(vendor: string, adapter: VendorAdapter) {
    const name = vendor.split(':')[0]!;
    const callbacks = { readCallback: adapter.readCallback!.bind(adapter) };
    return vendorDirectory({ [name]: () => Promise.resolve(adapter) }, () => vendor, undefined, {
      [name]: () => Promise.resolve(callbacks),
    });
  }

  it('Replicate: the parked step takes the prediction and is signalled', async () => {
    const sim = await startReplicateSimulator({ token: TOKEN, predictionMs: 30, media: 'synthetic' });
    closers.push(() => sim.close());
    const adapter = replicateAdapter({
      baseUrl: sim.url,
      token: TOKEN,
      model: MODEL,
      usdPerSecond: 0.0014,
      maxCents: { video: 1000, cover: 300, rework: 1000, assembly: 500 },
      timeoutMs: 2_000,
    });
    const r = await parkedThenCalledBack(`replicate:${MODEL}`, adapter);
    assert.deepEqual(r.answer, { status: 200, text: 'adopted' }, r.logged.join('\n'));
    const step = (await store.requireEpisode(id)).steps['video-r0'];
    assert.equal(step?.remote_job_id, r.job.job_id);
    assert.equal(step?.status, 'submitted');
    assert.deepEqual(r.signalled, [r.ref]);
  });

  it('fal: the parked step takes the request and is signalled', async () => {
    const sim = await startTestFal();
    closers.push(() => sim.close());
    const adapter = testFalAdapter(sim);
    const r = await parkedThenCalledBack(`fal:${FAL_TEST_MODEL}`, adapter, falVendors(sim));
    assert.deepEqual(r.answer, { status: 200, text: 'adopted' }, r.logged.join('\n'));
    assert.equal((await store.requireEpisode(id)).steps['video-r0']?.remote_job_id, r.job.job_id);
    assert.deepEqual(r.signalled, [r.ref]);
  });
});
