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
import { createActivities, type Activities } from '../../../src/activities';
import type { AllocationRecords } from '../../../src/activities/allocation-records';
import type { CompleteInput } from '../../../src/activities/episode-lifecycle';
import type { CompletedStep, PaidStepInput, SubmittedStep } from '../../../src/activities/paid-steps';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import type { HistoryEntry, PaidStep } from '../../../src/domain/episode-state';
import { parseWeekId } from '../../../src/domain/week-id';
import { ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { fileStoreSource } from '../../../src/verify/file-store-source';
import { verifyStore } from '../../../src/verify/verify-store';
import { vendorDirectory } from '../../../src/vendors/directory';
import { startTestVendor, testDeps } from '../../../testkit/deps';
import { FAL_TEST_MODEL, startTestFal, testFalAdapter } from '../../../testkit/fal';
import { replicateVendors, startTestReplicate } from '../../../testkit/replicate';
import { RollbackStore } from '../../../testkit/rollback-store';

const SPECS: Record<PaidStep, Record<string, unknown>> = {
  video: { format: 'mp4' },
  cover: { format: 'png' },
  rework: { notes: 'n' },
  assembly: { format: 'mp4' },
};

/**
 * Temporal's records as the completion reads them: only the specs the steps' workflows were submitted with (key
 * `assembly-r0`); nothing else is asked of them at the activity level.
 */
function recordedSpecs(specs: Record<string, Record<string, unknown>>): AllocationRecords {
  const unused = () => Promise.reject(new Error('not recorded in this test'));
  return {
    allocationOf: unused,
    productionRunOf: unused,
    earlierAllocationOf: unused,
    handedOutIn: unused,
    answeredUnrecorded: unused,
    keysGiven: unused,
    stepSpecOf: (_id, step, round) => Promise.resolve(specs[`${step}-r${round}`]),
    earlierSubmission: () => Promise.resolve(false),
  };
}

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
  /** Video and cover, then `rounds` rework rounds, each reworking the cut before it: the cover and the cuts' jobs. */
  const reworked = async (rounds: number) => {
    const cuts = [(await run('video', 0, SPECS.video)).remoteJobId];
    const cover = (await run('cover', 0, SPECS.cover)).remoteJobId;
    for (let round = 1; round <= rounds; round++) {
      cuts.push((await run('rework', round, { notes: `round ${round}`, base_job: cuts.at(-1) })).remoteJobId);
    }
    return { cover, cuts };
  };
  /**
   * `rounds` rework rounds, then a restore to before round 1 (every round forgotten), then the assembly of the last
   * cut, at a vendor that from then on cannot look jobs up by key: the cuts' jobs.
   */
  const assembledAfterRoundsForgotten = async (rounds: number) => {
    const { cover, cuts } = await reworked(rounds);
    await store.rollBack(id, (s) => s.steps['cover-r0']?.charged === true && !s.steps['rework-r1']);
    await run('assembly', 0, { video_job: cuts.at(-1), cover_job: cover });
    vendor.setFaults({ noIdempotency: true });
    return cuts;
  };
  const complete = () =>
    mock.run<[CompleteInput], HistoryEntry, Activities['completeEpisode']>(acts.completeEpisode, {
      episodeId: id,
      completedAt: new Date().toISOString(),
      finalVideo: 'assembly-r0',
      finalCover: 'cover-r0',
    });
  /** The same activity as Temporal's attempt 2 runs it (the first attempt died or failed after it sent). */
  const retry = new MockActivityEnvironment({ attempt: 2 }, { logger: new DefaultLogger('ERROR') });
  const submitAgain = (step: PaidStep) =>
    retry.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(acts.submitPaidStep, {
      episodeId: id,
      step,
      round: 0,
      spec: SPECS[step],
    });
  const posts = () => vendor.requests().filter((r) => r.method === 'POST' && r.path === '/v1/jobs').length;
  const lookups = () => vendor.requests().filter((r) => r.path.includes('client_ref=')).length;
  /** Back to the state in which the step's record was a bare intent: its reference (and all after it) forgotten. */
  const forgetReference = (step: PaidStep) =>
    store.rollBack(id, (s) => s.steps[`${step}-r0`]?.status === 'intent' && !s.steps[`${step}-r0`]?.remote_job_id);

  /** What `episodes reconcile <id> --step <key> --remote-job J` writes once the operator found J in the billing. */
  async function reconcileToBilledJob(key: string): Promise<void> {
    const parked = (await store.requireEpisode(id)).steps[key]!;
    const job = vendor.billing().find((c) => c.client_ref === parked.idempotency_key)!;
    await store.updateEpisode(id, (s) => ({
      ...s,
      steps: {
        ...s.steps,
        [key]: { ...parked, status: 'submitted', remote_job_id: job.job_id, quoted_cost: null, error: null },
      },
    }));
  }

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
    const { cover, cuts } = await reworked(2);
    // Back to the state before round 2 was submitted: its record and its charge are forgotten.
    await store.rollBack(id, (s) => s.steps['rework-r1']?.charged === true && !s.steps['rework-r2']);
    await run('assembly', 0, { video_job: cuts[2], cover_job: cover });
    const entry = await complete();
    assert.equal(entry.total_cost_cents, 4200 + 300 + 1500 + 1500 + 800, 'history bills both rework rounds');
    assert.deepEqual(
      entry.remote_jobs.filter((j) => j.step === 'rework').map((j) => [j.round, j.remote_job_id]),
      [
        [1, cuts[1]],
        [2, cuts[2]],
      ],
    );
    assert.equal(vendor.billing().length, 5, 'nothing charged twice');
    await assertLedgerIsBilling();
  });

  it('the approved rework round forgotten, at a vendor that cannot look jobs up by key: found by its job id and settled', async () => {
    const cuts = await assembledAfterRoundsForgotten(1);
    const entry = await complete();
    assert.equal(entry.total_cost_cents, 4200 + 300 + 1500 + 800, 'history bills the forgotten round');
    assert.deepEqual(
      entry.remote_jobs.filter((j) => j.step === 'rework').map((j) => [j.round, j.remote_job_id]),
      [[1, cuts[1]]],
    );
    assert.equal(vendor.billing().length, 4, 'nothing charged twice');
    await assertLedgerIsBilling();
  });

  it('a round below the approved one forgotten, at a vendor that cannot look jobs up by key: the completion parks', async () => {
    // The approved cut (round 2) is found by its job id; round 1 cannot be looked up.
    await assembledAfterRoundsForgotten(2);
    await assert.rejects(
      complete(),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.RemoteJobUnknown && !e.nonRetryable,
    );
    const state = await store.requireEpisode(id);
    assert.equal(state.steps['rework-r1']?.status, 'needs_reconciliation', 'the round an operator must settle');
    assert.equal(state.status === 'completed', false, 'not completed without its charge');
    assert.equal((await store.listHistory()).length, 0, 'no history written');
    assert.equal(vendor.billing().length, 5, 'nothing sent');
  });

  it('the approved round and the final assembly both forgotten, at a vendor that cannot look jobs up by key: the cut is found from Temporal’s record of the assembly and settled', async () => {
    // Campaign seed 12565 (PostgreSQL): a restore forgot rework-r1, a failover then forgot the assembly after it.
    const { cover, cuts } = await reworked(1);
    const assemblySpec = { video_job: cuts[1], cover_job: cover };
    await run('assembly', 0, assemblySpec);
    await store.rollBack(id, (s) => s.steps['cover-r0']?.charged === true && !s.steps['rework-r1']);
    vendor.setFaults({ noIdempotency: true });
    acts = createActivities(
      testDeps(store, vendor, undefined, { allocationRecords: recordedSpecs({ 'assembly-r0': assemblySpec }) }),
    );
    // The forgotten assembly cannot be looked up by key: parked until the operator names its job.
    await assert.rejects(
      complete(),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.RemoteJobUnknown && !e.nonRetryable,
    );
    const parked = (await store.requireEpisode(id)).steps['assembly-r0']!;
    assert.deepEqual(parked.spec, {}, 'written back bare: the store no longer knows the approved cut');
    await reconcileToBilledJob('assembly-r0');
    const entry = await complete();
    assert.deepEqual(
      entry.remote_jobs.filter((j) => j.step === 'rework').map((j) => [j.round, j.remote_job_id]),
      [[1, cuts[1]]],
      'history names the approved round',
    );
    assert.equal(entry.total_cost_cents, 4200 + 300 + 1500 + 800, 'history bills the forgotten round');
    assert.equal(vendor.billing().length, 4, 'nothing charged twice');
    await assertLedgerIsBilling();
  });

  it('the first cut approved and forgotten, reworks at another vendor: completion settles it at its own vendor', async () => {
    // Campaign seed 4242 (PostgreSQL, --vendor mixed): a failover forgot video-r0 (fal) of an episode approved without
    // rework; the completion asked Replicate, the rework vendor, for fal's job id and failed the production.
    const fal = await startTestFal();
    const replicate = await startTestReplicate();
    try {
      const reworks = replicateVendors(replicate);
      const vendors = vendorDirectory(
        {
          fal: (model) => Promise.resolve(testFalAdapter(fal, model ?? FAL_TEST_MODEL)),
          replicate: (model) => reworks.open(`replicate:${model}`),
        },
        (step) => (step === 'rework' ? reworks.assigned(step) : `fal:${FAL_TEST_MODEL}`),
      );
      acts = createActivities({ store, vendors, budgetCents: 20_000, pollIntervalMs: 20 });
      const cover = await run('cover', 0, SPECS.cover);
      const video = await run('video', 0, SPECS.video);
      await store.rollBack(id, (s) => s.steps['cover-r0']?.charged === true && !s.steps['video-r0']);
      await run('assembly', 0, { video_job: video.remoteJobId, cover_job: cover.remoteJobId });
      const entry = await complete();
      assert.deepEqual(
        entry.remote_jobs.map((j) => [j.step, j.remote_job_id]).sort(),
        [
          ['assembly', entry.remote_jobs.find((j) => j.step === 'assembly')!.remote_job_id],
          ['cover', cover.remoteJobId],
          ['video', video.remoteJobId],
        ],
        'history names the approved first cut',
      );
      const billed = fal.billing().map((c) => `${c.ref} ${c.amount_cents}`);
      assert.equal(billed.length, 3, 'nothing charged twice');
      assert.deepEqual(
        (await store.requireEpisode(id)).ledger.map((l) => `${id}:${l.step}:r${l.round} ${l.amount_cents}`).sort(),
        billed.sort(),
        'ledger = fal billing',
      );
      assert.equal(replicate.journal().length, 0, 'nothing created at Replicate');
    } finally {
      await fal.close();
      await replicate.close();
    }
  });

  it('a step run again by a new production run, its record forgotten, at a vendor without keys: its job adopted, not sent again', async () => {
    // Campaign seed 4242 (PostgreSQL, --vendor mixed): a failover forgot video-r0 (fal); the production failed, and
    // `episodes generate` ran the step's workflow again: its first attempt took the missing record for "never sent".
    const fal = await startTestFal();
    try {
      const earlierRuns = new Set<string>();
      const allocationRecords: AllocationRecords = {
        ...recordedSpecs({}),
        productionRunOf: () => Promise.resolve(undefined),
        earlierSubmission: (_id, step, round, own) =>
          Promise.resolve(
            [...earlierRuns].some((r) => r !== `${step}-r${round}:${own.runId}` && r.startsWith(`${step}-r${round}:`)),
          ),
      };
      const vendors = vendorDirectory(
        { fal: (model) => Promise.resolve(testFalAdapter(fal, model ?? FAL_TEST_MODEL)) },
        () => `fal:${FAL_TEST_MODEL}`,
      );
      acts = createActivities({ store, vendors, budgetCents: 20_000, pollIntervalMs: 20, allocationRecords });
      const input = { episodeId: id, step: 'video' as const, round: 0 };
      const inRun = (runId: string) => {
        earlierRuns.add(`video-r0:${runId}`);
        const env = new MockActivityEnvironment(
          { attempt: 1, workflowExecution: { workflowId: `episode-${id}-video-r0`, runId } },
          { logger: new DefaultLogger('ERROR') },
        );
        return {
          submit: () =>
            env.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(acts.submitPaidStep, {
              ...input,
              spec: SPECS.video,
            }),
          wait: () =>
            env.run<[Omit<PaidStepInput, 'spec'>], CompletedStep, Activities['awaitPaidStep']>(
              acts.awaitPaidStep,
              input,
            ),
        };
      };
      await store.updateEpisode(id, (s) => s); // the state the failover goes back to: no video-r0
      const first = inRun('run-1');
      await first.submit();
      const done = await first.wait();
      await store.rollBack(id, (s) => !s.steps['video-r0']);
      const second = inRun('run-2');
      const again = await second.submit();
      assert.equal(again.remoteJobId, done.remoteJobId, 'the first run’s job, found in fal’s listing');
      assert.equal(fal.billing().length, 1, 'fal billed the step once');
      assert.equal((await second.wait()).remoteJobId, done.remoteJobId);
      assert.deepEqual(
        (await store.requireEpisode(id)).ledger.map((l) => l.amount_cents),
        fal.billing().map((c) => c.amount_cents),
        'ledger = fal billing',
      );
      // The operator's word after asking the vendor (`episodes reconcile --not-submitted`, then `episodes generate`):
      // a third run sends, where fal's listing alone would park it again.
      await store.updateEpisode(id, (s) => ({
        ...s,
        steps: {
          ...s.steps,
          'video-r0': {
            ...s.steps['video-r0']!,
            status: 'not_submitted',
            remote_job_id: null,
            reconciliation: { resolution: 'not-submitted', by: 'operator', at: new Date().toISOString() },
          },
        },
        ledger: [],
      }));
      const third = await inRun('run-3').submit();
      assert.notEqual(third.remoteJobId, done.remoteJobId, 'sent again, as the operator said');
    } finally {
      await fal.close();
    }
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
    await reconcileToBilledJob('video-r0');
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

  it('a retry whose sent intent was forgotten, at a vendor that ignores keys: parked, never sent again', async () => {
    await store.updateEpisode(id, (s) => s); // the backup: before the intent
    await submit('video');
    await store.rollBack(id, (s) => !s.steps['video-r0']);
    vendor.setFaults({ noIdempotency: true });
    await assert.rejects(
      submitAgain('video'),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.SubmissionOutcomeUnknown && e.nonRetryable,
    );
    assert.equal(vendor.billing().length, 1, 'charged once: the retry did not send again');
    const parked = (await store.requireEpisode(id)).steps['video-r0']!;
    assert.equal(parked.status, 'needs_reconciliation');
    assert.deepEqual(parked.spec, SPECS.video, 'the intent keeps its spec for a resend after --not-submitted');
  });

  it('a retry whose job the vendor accepted ignoring keys and then lost: parked on its billing, never sent again', async () => {
    vendor.setFaults({ noIdempotency: true, loseJobs: { count: 1 } });
    await submit('video'); // accepted with no record of its key, then lost: the lookup will not find it
    await forgetReference('video'); // the reply never reached the store: the record is the intent again
    vendor.setFaults({ loseJobs: { count: 0 } }); // keys honoured again, the job still lost
    await assert.rejects(
      submitAgain('video'),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.SubmissionOutcomeUnknown && e.nonRetryable,
    );
    assert.equal(posts(), 1, 'sent once: the billing showed the charge the lookup could not find');
    assert.equal(vendor.billing().length, 1);
    assert.equal((await store.requireEpisode(id)).steps['video-r0']?.status, 'needs_reconciliation');
  });

  it('a retry whose store went back to an older attempt’s not_submitted, at a vendor that ignores keys: parked', async () => {
    vendor.setFaults({ fail5xx: { count: 1, scope: 'submit' } });
    await assert.rejects(submit('video'));
    assert.equal((await store.requireEpisode(id)).steps['video-r0']?.status, 'not_submitted', 'a definite 503');
    vendor.setFaults({});
    await submitAgain('video');
    // The restore takes the record back to the first attempt's `not_submitted`: the second attempt's job is forgotten.
    await store.rollBack(id, (s) => s.steps['video-r0']?.status === 'not_submitted');
    vendor.setFaults({ noIdempotency: true });
    await assert.rejects(
      submitAgain('video'),
      (e) => e instanceof ApplicationFailure && e.type === ErrorType.SubmissionOutcomeUnknown && e.nonRetryable,
    );
    assert.equal(vendor.billing().length, 1, 'charged once: the retry did not send again');
    assert.equal((await store.requireEpisode(id)).steps['video-r0']?.status, 'needs_reconciliation');
  });

  it('a retry whose sent intent was forgotten, at a vendor that can look up: the job is adopted, nothing sent', async () => {
    await store.updateEpisode(id, (s) => s);
    const first = await submit('video');
    await store.rollBack(id, (s) => !s.steps['video-r0']);
    const sent = posts();
    const again = await submitAgain('video');
    assert.equal(again.remoteJobId, first.remoteJobId, 'the job found by its idempotency key');
    assert.equal(posts(), sent, 'no second POST /v1/jobs');
    const done = await wait('video');
    assert.equal(done.costCents, 4200);
    await assertLedgerIsBilling();
  });

  it('a completion retried after its assembly was forgotten and reconciled: episodes verify is clean', async () => {
    const video = await run('video', 0, SPECS.video);
    const cover = await run('cover', 0, SPECS.cover);
    await run('assembly', 0, { video_job: video.remoteJobId, cover_job: cover.remoteJobId });
    // Workflow time: every attempt of the completion carries the instant it was scheduled.
    const input = {
      episodeId: id,
      completedAt: new Date().toISOString(),
      finalVideo: 'assembly-r0',
      finalCover: 'cover-r0',
    };
    const completeAt = () =>
      mock.run<[CompleteInput], HistoryEntry, Activities['completeEpisode']>(acts.completeEpisode, input);
    // A restore to before the assembly, at a vendor that cannot look jobs up: the completion parks the step.
    await store.rollBack(id, (s) => s.steps['cover-r0']?.charged === true && !s.steps['assembly-r0']);
    vendor.setFaults({ noIdempotency: true });
    await assert.rejects(completeAt(), (e) => e instanceof ApplicationFailure && e.type === ErrorType.RemoteJobUnknown);
    const parked = (await store.requireEpisode(id)).steps['assembly-r0']!;
    assert.equal(parked.status, 'needs_reconciliation');
    // What `episodes reconcile <id> --step assembly-r0 --remote-job J` writes; then the completion's next attempt.
    const job = vendor.billing().find((c) => c.client_ref === parked.idempotency_key)!;
    await store.updateEpisode(id, (s) => ({
      ...s,
      steps: { ...s.steps, 'assembly-r0': { ...parked, status: 'submitted', remote_job_id: job.job_id, error: null } },
    }));
    vendor.setFaults({});
    const entry = await completeAt();
    await assertLedgerIsBilling();
    const assembly = (await store.requireEpisode(id)).steps['assembly-r0']!;
    assert.ok(
      Date.parse(assembly.intent_at) <= Date.parse(entry.completed_at),
      `the rebuilt assembly record (intent ${assembly.intent_at}) does not date from after the completion (${entry.completed_at})`,
    );
  });
});
