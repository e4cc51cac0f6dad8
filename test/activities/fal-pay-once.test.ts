/**
 * Pay once at fal (no idempotency key, metered cost, expiring outputs), at the activity level: the activities as the
 * worker runs them, a real file store, the fal adapter over HTTP to the fal simulator. The last row removes the fal
 * rules (the adapter given the native vendor's promises) and shows the dropped reply is then paid twice.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type Activities } from '../../src/activities';
import type { CompletedStep, PaidStepInput, SubmittedStep } from '../../src/activities/paid-steps';
import { parseAllocationKey } from '../../src/domain/allocation-key';
import type { EpisodeId } from '../../src/domain/episode-id';
import { ErrorType } from '../../src/domain/errors';
import { parseWeekId } from '../../src/domain/week-id';
import { FileEpisodeStore } from '../../src/store/file-store';
import type { FalFaults, FalSimulator, FalSimulatorOptions } from '../../src/vendor-sim/fal';
import { falVendors, startTestFal } from '../helpers/fal';
import { until } from '../helpers/wait';

describe('pay once at fal (activity level)', function () {
  this.timeout(60_000);
  let dir: string;
  let sim: FalSimulator;
  let store: FileEpisodeStore;
  let id: EpisodeId;
  const mock = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
  const retry = new MockActivityEnvironment({ attempt: 2 }, { logger: new DefaultLogger('ERROR') });

  async function setUp(options: Partial<FalSimulatorOptions>, deps: { budgetCents?: number; unsafe?: boolean } = {}) {
    sim = await startTestFal(options);
    const acts = createActivities({
      store,
      vendors: falVendors(sim, { unsafe: deps.unsafe }),
      budgetCents: deps.budgetCents ?? 20_000,
      pollIntervalMs: 20,
    });
    const input = { episodeId: id, step: 'video' as const, round: 0 };
    return {
      submit: (env = mock) =>
        env.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(acts.submitPaidStep, {
          ...input,
          spec: { prompt: 'a lighthouse at dawn' },
        }),
      wait: () =>
        mock.run<[Omit<PaidStepInput, 'spec'>], CompletedStep, Activities['awaitPaidStep']>(acts.awaitPaidStep, input),
    };
  }
  const posts = () => sim.requests().filter((r) => r.method === 'POST').length;
  const charges = () => sim.billing().filter((c) => c.ref === `${id}:video:r0`);
  const record = async () => (await store.requireEpisode(id)).steps['video-r0'];
  const faults = (f: FalFaults) => sim.setFaults(f);

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fal-pay-once-'));
    store = new FileEpisodeStore(dir);
    ({ episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('fal-pay-once'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'fal pay once' },
    }));
  });
  afterEach(async () => {
    await sim.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function assertLedgerIsJournal(): Promise<void> {
    const state = await store.requireEpisode(id);
    const ledger = state.ledger.map((l) => `${l.remote_job_id.split('@')[1]} ${l.amount_cents} ${l.currency}`).sort();
    const journal = sim
      .billing()
      .map((c) => `${c.request_id} ${c.amount_cents} ${c.currency}`)
      .sort();
    assert.deepEqual(ledger, journal, 'ledger = fal billing, to the cent');
  }

  it('a reply dropped after acceptance, once listed: the step adopts the job, never sends again, one charge', async () => {
    const step = await setUp({ listingDelayMs: 0 });
    faults({ acceptThenDrop: { count: 1 } });
    const submitted = await step.submit();
    const done = await step.wait();
    assert.equal(done.remoteJobId, submitted.remoteJobId);
    assert.equal(posts(), 1, 'sent once');
    assert.equal(charges().length, 1, 'billed once');
    await assertLedgerIsJournal();
  });

  it('a reply dropped after acceptance, not listed yet: parks needs_reconciliation, a retry sends nothing', async () => {
    const step = await setUp({ listingDelayMs: 600_000 });
    faults({ acceptThenDrop: { count: 1 } });
    await assert.rejects(
      step.submit(),
      (e: Error & { type?: string }) => e.type === ErrorType.SubmissionOutcomeUnknown,
    );
    assert.equal((await record())?.status, 'needs_reconciliation');
    await assert.rejects(
      step.submit(retry),
      (e: Error & { type?: string }) => e.type === ErrorType.SubmissionOutcomeUnknown,
    );
    await until('the queued request to be billed', () => (charges().length > 0 ? true : undefined));
    assert.equal(posts(), 1, 'never sent again');
    assert.equal(charges().length, 1, 'exactly one charge');
  });

  it('a gateway 5xx after the request was queued: found by the listing, one charge', async () => {
    const step = await setUp({ listingDelayMs: 0 });
    faults({ gateway5xxAfterQueue: { count: 1 } });
    await step.submit();
    await step.wait();
    assert.equal(posts(), 1);
    assert.equal(charges().length, 1);
    await assertLedgerIsJournal();
  });

  it('metered cost: the ledger records what fal billed, not the estimate or the maximum', async () => {
    const step = await setUp({ listingDelayMs: 0, unitPriceCents: 7, unitsPerRequest: 5 });
    faults({ meteredUnits: { count: 1, units: 13 } });
    await step.submit();
    assert.equal((await record())?.reserved_cents, 6000, 'the declared maximum is held until the bill');
    const done = await step.wait();
    assert.equal(done.costCents, 91, '13 seconds at 7 cents, not the 35 estimated');
    await assertLedgerIsJournal();
  });

  it('the budget check refuses a step whose declared maximum exceeds what is left; nothing is sent', async () => {
    const step = await setUp({ listingDelayMs: 0 }, { budgetCents: 5_999 });
    await assert.rejects(step.submit(), (e: Error & { type?: string }) => e.type === ErrorType.BudgetExceeded);
    assert.equal(posts(), 0);
  });

  it('an output URL expired before the fetch: the step parks, nothing is sent again', async () => {
    const step = await setUp({ listingDelayMs: 0 });
    faults({ expireFiles: { count: 1 } });
    const submitted = await step.submit();
    await assert.rejects(step.wait(), (e: Error & { type?: string }) => e.type === ErrorType.RemoteJobUnknown);
    assert.equal((await record())?.status, 'needs_reconciliation');
    assert.deepEqual(await step.submit(retry), submitted, 'a retried submit returns the saved job');
    assert.equal(posts(), 1);
    assert.equal(charges().length, 1);
  });

  it('proof that it bites: fal with the native rules (its listing believed) pays the dropped reply twice', async () => {
    const step = await setUp({ listingDelayMs: 600_000 }, { unsafe: true });
    faults({ acceptThenDrop: { count: 1 } });
    // The listing does not show the queued request; believed, "no job" means send again.
    await assert.rejects(step.submit(), (e: Error & { type?: string }) => e.type === ErrorType.VendorUnavailable);
    await step.submit(retry);
    await until('both requests billed', () => (charges().length >= 2 ? true : undefined));
    assert.equal(posts(), 2, 'sent twice');
    assert.equal(charges().length, 2, 'the step is paid twice');
  });
});
