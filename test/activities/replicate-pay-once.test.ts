/**
 * Paying once at a vendor without idempotency keys, metered and with expiring outputs: the paid-step activities as the
 * worker runs them, with every step assigned to the Replicate adapter, against the Replicate simulator over real HTTP
 * and a real file store. The simulator's journal is the ground truth of what was charged.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type Activities } from '../../src/activities';
import type { CompletedStep, PaidStepInput, SubmittedStep } from '../../src/activities/paid-steps';
import { parseAllocationKey } from '../../src/domain/allocation-key';
import type { EpisodeId } from '../../src/domain/episode-id';
import type { PaidStep } from '../../src/domain/episode-state';
import { ErrorType } from '../../src/domain/errors';
import { meteredCents } from '../../src/domain/metered-cost';
import { parseWeekId } from '../../src/domain/week-id';
import { FileEpisodeStore } from '../../src/store/file-store';
import { startReplicateSimulator, type ReplicateSimulator } from '../../src/vendor-sim/replicate';
import { vendorDirectory, type AdapterOpener } from '../../src/vendors/directory';
import type { VendorAdapter } from '../../src/vendors/port';
import { replicateAdapter } from '../../src/vendors/replicate';
import { reportingEstimate } from '../helpers/unsafe-vendors';

const TOKEN = 'r8_activity-test-SECRET-41f0';
const PRICE = 0.0014;
const SECONDS = 120;
/** What a step costs when it runs its usual time: the estimate a metered amount may differ from. */
const ESTIMATE_CENTS = meteredCents(SECONDS, PRICE);
const MAX = { video: 1000, cover: 300, rework: 1000, assembly: 500 };

describe('paying once at Replicate (activity level, no idempotency key, metered)', function () {
  this.timeout(30_000);
  let dir: string;
  let sim: ReplicateSimulator;
  let store: FileEpisodeStore;
  let id: EpisodeId;
  let wrap: (adapter: VendorAdapter) => VendorAdapter;
  const mock = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });

  const acts = (budgetCents = 20_000): Activities => {
    const opener: AdapterOpener = (model, logger) =>
      Promise.resolve(
        wrap(
          replicateAdapter({
            baseUrl: sim.url,
            token: TOKEN,
            model: model!,
            usdPerSecond: PRICE,
            maxCents: MAX,
            timeoutMs: 2_000,
            logger,
          }),
        ),
      );
    const vendors = vendorDirectory({ replicate: opener }, () => 'replicate:acme/media-model');
    return createActivities({ store, vendors, budgetCents, pollIntervalMs: 20 });
  };

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'replicate-pay-once-'));
    sim = await startReplicateSimulator({
      token: TOKEN,
      predictionMs: 40,
      predictSeconds: SECONDS,
      usdPerSecond: PRICE,
      media: 'synthetic',
    });
    store = new FileEpisodeStore(dir);
    wrap = (adapter) => adapter;
    ({ episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('replicate-test'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'replicate pay once' },
    }));
  });
  afterEach(async () => {
    await store.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const submit = (step: PaidStep, a = acts()) =>
    mock.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(a.submitPaidStep, {
      episodeId: id,
      step,
      round: 0,
      spec: { prompt: `a ${step}` },
    });
  const wait = (step: PaidStep, a = acts()) =>
    mock.run<[Omit<PaidStepInput, 'spec'>], CompletedStep, Activities['awaitPaidStep']>(a.awaitPaidStep, {
      episodeId: id,
      step,
      round: 0,
    });
  /** The ledger and the simulator's journal, line for line: job and amount in cents. */
  const books = async () => {
    const state = await store.requireEpisode(id);
    const ledger = state.ledger.map((l) => `${l.remote_job_id} ${l.amount_cents} ${l.currency}`).sort();
    const journal = sim
      .journal()
      .map((c) => `${c.id} ${c.amount_cents} ${c.currency}`)
      .sort();
    const sum = (lines: { amount_cents: number }[]) => lines.reduce((s, l) => s + l.amount_cents, 0);
    return { ledger, journal, difference: sum(state.ledger) - sum(sim.journal()) };
  };

  it('a reply dropped after the create: the prediction is found by listing and adopted; charged once', async () => {
    sim.setFaults({ acceptThenDrop: { count: 1 } });
    const submitted = await submit('video');
    assert.equal(sim.creates(), 1, 'sent once');
    const done = await wait('video');
    assert.equal(done.remoteJobId, submitted.remoteJobId, 'the adopted prediction');
    assert.deepEqual(
      sim.journal().map((c) => c.id),
      [submitted.remoteJobId],
      'one charge',
    );
    const { ledger, journal } = await books();
    assert.deepEqual(ledger, journal);
  });

  it('a gateway 5xx after the create: found by listing and adopted; charged once', async () => {
    sim.setFaults({ fail5xx: { count: 1, created: true } });
    await submit('cover');
    await wait('cover');
    assert.equal(sim.creates(), 1);
    assert.equal(sim.journal().length, 1);
    const { ledger, journal } = await books();
    assert.deepEqual(ledger, journal);
  });

  it('a retry after a reply dropped and the first attempt lost: the listing finds it, nothing sent again', async () => {
    sim.setFaults({ acceptThenDrop: { count: 1 } });
    const retry = new MockActivityEnvironment({ attempt: 2 }, { logger: new DefaultLogger('ERROR') });
    await submit('video');
    const again = await retry.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(acts().submitPaidStep, {
      episodeId: id,
      step: 'video',
      round: 0,
      spec: { prompt: 'a video' },
    });
    await wait('video');
    assert.equal(sim.creates(), 1, 'sent once');
    assert.equal(again.remoteJobId, sim.journal()[0]?.id);
  });

  it('metered cost: the ledger records the amount Replicate measured, not the estimate, equal to its journal', async () => {
    sim.setFaults({ meteredDrift: { count: 1, factor: 1.5 } });
    await submit('video');
    const done = await wait('video');
    assert.equal(done.costCents, meteredCents(SECONDS * 1.5, PRICE));
    assert.notEqual(done.costCents, ESTIMATE_CENTS);
    const { ledger, journal, difference } = await books();
    assert.deepEqual(ledger, journal, 'ledger = journal, entry for entry');
    assert.equal(difference, 0, 'to the cent');
  });

  it('unsafe variant (test-only): the estimate reported as the cost → ledger − journal ≠ 0', async () => {
    wrap = (adapter) => reportingEstimate(adapter, { amount_cents: ESTIMATE_CENTS, currency: 'USD' });
    sim.setFaults({ meteredDrift: { count: 1, factor: 1.5 } });
    await submit('video');
    await wait('video');
    const { difference } = await books();
    assert.equal(difference, ESTIMATE_CENTS - meteredCents(SECONDS * 1.5, PRICE), 'the estimate is not the charge');
    assert.notEqual(difference, 0);
  });

  it('the budget check refuses a step whose declared maximum exceeds what is left; nothing sent', async () => {
    const a = acts(MAX.video); // the video's maximum, exactly
    await submit('cover', a);
    await wait('cover', a); // charged ESTIMATE_CENTS: what is left is now below the video's maximum
    await assert.rejects(
      submit('video', a),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.BudgetExceeded && e.nonRetryable,
    );
    assert.equal(sim.creates(), 1, 'only the cover was sent');
    assert.equal((await store.requireEpisode(id)).steps['video-r0'], undefined, 'no intent saved');
  });

  it('an output URL expired before the fetch: the step parks, nothing is sent again', async () => {
    sim.setFaults({ expireOutputs: { count: 1 } });
    await submit('video');
    await assert.rejects(
      wait('video'),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.RemoteJobUnknown && !e.nonRetryable,
    );
    const parked = (await store.requireEpisode(id)).steps['video-r0']!;
    assert.equal(parked.status, 'needs_reconciliation');
    assert.match(parked.error ?? '', /expired/);
    assert.equal((await submit('video')).remoteJobId, parked.remote_job_id, 'a resubmit names the same job');
    await assert.rejects(
      wait('video'),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.RemoteJobUnknown,
    );
    assert.equal(sim.creates(), 1, 'sent once');
    assert.equal(sim.journal().length, 1, 'paid once; the ledger waits for `episodes reconcile`');
    assert.equal((await store.requireEpisode(id)).ledger.length, 0);
  });
});
