/**
 * Paid steps when the store forgets its last writes (a failover to an asynchronous replica, a restore from backup),
 * at the activity level and without timing: a store wrapper puts one earlier state of the episode back at an exact
 * point of the protocol. Real file store, real vendor simulator over HTTP, the activities as the worker runs them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type Activities } from '../../src/activities';
import type { CompleteInput } from '../../src/activities/episode-lifecycle';
import type { CompletedStep, PaidStepInput, SubmittedStep } from '../../src/activities/paid-steps';
import { parseAllocationKey } from '../../src/domain/allocation-key';
import type { EpisodeId } from '../../src/domain/episode-id';
import type { HistoryEntry, PaidStep } from '../../src/domain/episode-state';
import { parseWeekId } from '../../src/domain/week-id';
import { ErrorType } from '../../src/domain/errors';
import { FileEpisodeStore } from '../../src/store/file-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { fileStoreSource } from '../../src/verify/file-store-source';
import { verifyStore } from '../../src/verify/verify-store';
import { startTestVendor, testDeps } from '../helpers/deps';
import { RollbackStore } from '../helpers/rollback-store';

const SPECS: Record<PaidStep, Record<string, unknown>> = {
  video: { format: 'mp4' },
  cover: { format: 'png' },
  rework: { notes: 'n' },
  assembly: { format: 'mp4' },
};

describe('paid steps when the store forgets its last writes (activity level, no timing)', function () {
  this.timeout(60_000);
  let dir: string;
  let vendor: VendorSimulator;
  let store: RollbackStore;
  let acts: Activities;
  let id: EpisodeId;
  const mock = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'store-rollback-'));
    vendor = await startTestVendor();
    store = new RollbackStore(new FileEpisodeStore(dir));
    acts = createActivities(testDeps(store, vendor));
    ({ episodeId: id } = await store.allocate({
      allocationKey: parseAllocationKey('rollback-test'),
      weekId: parseWeekId('2026-W32'),
      allocatedBy: { kind: 'test', note: 'store rollback' },
    }));
  });
  afterEach(async () => {
    await store.close();
    await vendor.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const submit = (step: PaidStep, round = 0, spec = SPECS[step]) =>
    mock.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(acts.submitPaidStep, {
      episodeId: id,
      step,
      round,
      spec,
    });
  const wait = (step: PaidStep, round = 0) =>
    mock.run<[Omit<PaidStepInput, 'spec'>], CompletedStep, Activities['awaitPaidStep']>(acts.awaitPaidStep, {
      episodeId: id,
      step,
      round,
    });
  /** A step as the production runs it: submitted with its spec, then waited for. */
  const run = async (step: PaidStep, round: number, spec: Record<string, unknown>) => {
    await submit(step, round, spec);
    return wait(step, round);
  };
  const complete = () =>
    mock.run<[CompleteInput], HistoryEntry, Activities['completeEpisode']>(acts.completeEpisode, {
      episodeId: id,
      completedAt: new Date().toISOString(),
      finalVideo: 'assembly-r0',
      finalCover: 'cover-r0',
    });
  const lookups = () => vendor.requests().filter((r) => r.path.includes('client_ref=')).length;
  /** Back to the state in which the step's record was a bare intent: its reference (and all after it) forgotten. */
  const forgetReference = (step: PaidStep) =>
    store.rollBack(id, (s) => s.steps[`${step}-r0`]?.status === 'intent' && !s.steps[`${step}-r0`]?.remote_job_id);

  async function assertLedgerIsBilling(): Promise<void> {
    const state = await store.requireEpisode(id);
    const ledger = state.ledger.map((l) => `${l.step} ${l.remote_job_id} ${l.amount_cents} ${l.currency}`).sort();
    const billed = vendor
      .billing()
      .map((c) => `${c.kind} ${c.job_id} ${c.amount_cents} ${c.currency}`)
      .sort();
    assert.deepEqual(ledger, billed, 'ledger = vendor billing, to the cent');
    for (const l of state.ledger) {
      const record = state.steps[`${l.step}-r${l.round}`];
      assert.equal(record?.remote_job_id, l.remote_job_id, `${l.step}: the record names the charged job`);
      assert.deepEqual(record?.quoted_cost, { amount_cents: l.amount_cents, currency: l.currency });
    }
    const report = await verifyStore(fileStoreSource(dir));
    assert.deepEqual(report.problems, [], 'episodes verify is clean');
  }

  it('between the await’s read and its charge: the charge is the vendor’s price and the reference is repaired', async () => {
    await submit('video');
    store.beforeNextUpdate(async () => {
      await forgetReference('video');
    });
    const done = await wait('video');
    assert.equal(done.costCents, 4200, 'the vendor billed 42.00 for the job');
    const record = (await store.requireEpisode(id)).steps['video-r0']!;
    assert.equal(record.remote_job_id, done.remoteJobId, 'remote_job_id written back with the charge');
    assert.equal(record.charged, true);
    await assertLedgerIsBilling();
  });

  it('before the await starts: the job is found by its idempotency key, not refused', async () => {
    const submitted = await submit('video');
    await forgetReference('video');
    const done = await wait('video');
    assert.equal(done.remoteJobId, submitted.remoteJobId, 'the job the vendor accepted, found by idempotency key');
    assert.equal(done.costCents, 4200);
    await assertLedgerIsBilling();
  });

  it('after the charge: completion settles the forgotten charge before it writes history', async () => {
    await submit('video');
    await wait('video');
    await forgetReference('video');
    for (const step of ['cover', 'assembly'] as const) {
      await submit(step);
      await wait(step);
    }
    const entry = await mock.run<[CompleteInput], HistoryEntry, Activities['completeEpisode']>(acts.completeEpisode, {
      episodeId: id,
      completedAt: new Date().toISOString(),
      finalVideo: 'assembly-r0',
      finalCover: 'cover-r0',
    });
    assert.equal(entry.total_cost_cents, 4200 + 300 + 800, 'history bills video, cover and assembly');
    assert.equal(vendor.billing().length, 3, 'nothing charged twice');
    await assertLedgerIsBilling();
  });

  it('a rework round whose whole record was forgotten: completion finds it at the vendor and settles its charge', async () => {
    const video = await run('video', 0, SPECS.video);
    const cover = await run('cover', 0, SPECS.cover);
    const r1 = await run('rework', 1, { notes: 'warmer', base_job: video.remoteJobId });
    const r2 = await run('rework', 2, { notes: 'shorter', base_job: r1.remoteJobId });
    // Back to the state before round 2 was submitted: its record and its charge are forgotten.
    await store.rollBack(id, (s) => s.steps['rework-r1']?.charged === true && !s.steps['rework-r2']);
    await run('assembly', 0, { video_job: r2.remoteJobId, cover_job: cover.remoteJobId });
    const entry = await complete();
    assert.equal(entry.total_cost_cents, 4200 + 300 + 1500 + 1500 + 800, 'history bills both rework rounds');
    assert.deepEqual(
      entry.remote_jobs.filter((j) => j.step === 'rework').map((j) => [j.round, j.remote_job_id]),
      [
        [1, r1.remoteJobId],
        [2, r2.remoteJobId],
      ],
    );
    assert.equal(vendor.billing().length, 5, 'nothing charged twice');
    await assertLedgerIsBilling();
  });

  it('every round in the store, its chain of cuts whole: completion asks the vendor nothing', async () => {
    const video = await run('video', 0, SPECS.video);
    const cover = await run('cover', 0, SPECS.cover);
    const r1 = await run('rework', 1, { notes: 'warmer', base_job: video.remoteJobId });
    await run('assembly', 0, { video_job: r1.remoteJobId, cover_job: cover.remoteJobId });
    const before = lookups();
    const entry = await complete();
    assert.equal(entry.total_cost_cents, 4200 + 300 + 1500 + 800);
    assert.equal(lookups(), before, 'no lookup by key when the chain of cuts is whole');
    await assertLedgerIsBilling();
  });

  it('before the await starts, at a vendor that cannot look jobs up: parked for `episodes reconcile`, then settled', async () => {
    const submitted = await submit('video');
    await forgetReference('video');
    vendor.setFaults({ noIdempotency: true });
    await assert.rejects(
      wait('video'),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.RemoteJobUnknown && !e.nonRetryable,
    );
    const parked = (await store.requireEpisode(id)).steps['video-r0']!;
    assert.equal(parked.status, 'needs_reconciliation');
    assert.match(parked.error ?? '', /^[^\n]*cannot look it up[^\n]*$/, 'one line saying why');
    assert.equal((await store.requireEpisode(id)).ledger.length, 0, 'nothing charged on a guess');
    // What `episodes reconcile <id> --step video-r0 --remote-job J` writes once the operator found J in the billing.
    const job = vendor.billing().find((c) => c.client_ref === parked.idempotency_key)!;
    await store.updateEpisode(id, (s) => ({
      ...s,
      steps: {
        ...s.steps,
        'video-r0': { ...parked, status: 'submitted', remote_job_id: job.job_id, quoted_cost: null, error: null },
      },
    }));
    const done = await wait('video');
    assert.equal(done.remoteJobId, submitted.remoteJobId);
    assert.equal(done.costCents, 4200, 'the vendor’s price, not the record’s (none)');
    await assertLedgerIsBilling();
  });

  it('a record naming another job than the vendor’s for its key is refused (StoreCorrupt), nothing charged', async () => {
    await submit('cover');
    const cover = await wait('cover');
    await submit('video');
    store.beforeNextUpdate(async () => {
      await store.updateEpisode(id, (s) => ({
        ...s,
        steps: { ...s.steps, 'video-r0': { ...s.steps['video-r0']!, remote_job_id: cover.remoteJobId } },
      }));
    });
    await assert.rejects(
      wait('video'),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.StoreCorrupt && e.nonRetryable,
    );
    const state = await store.requireEpisode(id);
    assert.deepEqual(
      state.ledger.map((l) => l.step),
      ['cover'],
      'no ledger line for the video',
    );
  });
});
