/**
 * The pay-once fault rows every vendor adapter must pass, the same rows for each: the paid-step activities as the
 * worker runs them, a real file store, the adapter over HTTP to its simulator. Each row's expected result comes from
 * the adapter's profile through the rules of src/domain/pay-once.ts, never from its name; the simulator's journal is
 * the ground truth of what was charged. A test file calls `describeConformance(name, setup)` for one adapter
 * (`test/integration/vendors/<name>-conformance.test.ts`); `npm run vendor:conformance -- <name>` runs that file.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type Activities } from '../../../src/activities';
import type { CompletedStep, PaidStepInput, SubmittedStep } from '../../../src/activities/paid-steps';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import type { PaidStep } from '../../../src/domain/paid-step';
import { ErrorType } from '../../../src/domain/errors';
import { afterLookup, ledgerCost, reserveCents } from '../../../src/domain/pay-once';
import type { VendorProfile } from '../../../src/domain/vendor-profile';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { Vendors } from '../../../src/vendors/port';

/** One charge in the simulator's journal, in the vendor's own terms. */
export interface JournalCharge {
  /** The vendor's id of the charged job (`jobOf` maps a ledger line's `remote_job_id` to it). */
  job: string;
  /** The correlation value the submission carried, as the simulator saw it. */
  ref: string | null;
  amount_cents: number;
  currency: string;
}

/**
 * The simulator's faults a row needs, mapped to the vendor. Each affects the next submission only. Optional ones are
 * left out where the vendor's docs rule the failure out; their rows are then skipped (pending).
 */
export interface ConformanceFaults {
  /** The job is accepted (and will be billed), then the connection drops without an answer. */
  dropReply: () => void;
  /** The job is accepted, then a gateway answers 5xx. Leave out where a 5xx is documented as "nothing happened". */
  gateway5xxAfterAccept?: () => void;
  /** The accepted job is not shown by the vendor's lookup (lost, or not listed yet), though it is billed. */
  lookupMisses?: () => void;
  /** The job bills another amount than usual (a metered vendor). */
  meteredDrift?: () => void;
  /** The job's output is gone before anyone fetches it. Required when the profile says outputs expire. */
  expireOutput?: () => void;
  /** The job ends failed, after doing work. */
  failJob: () => void;
}

/** An adapter at its simulator, as one row uses it: set up per row, closed after it. */
export interface ConformanceVendor {
  /** Every kind assigned to the adapter (`adapter:model`), opened through a `vendorDirectory`. */
  vendors: Vendors;
  faults: ConformanceFaults;
  /** Submissions the simulator received (answered, dropped or failed). */
  sent(): number;
  journal(): JournalCharge[];
  /** The vendor's job id in a ledger line's `remote_job_id` (the adapter's job id may wrap it). */
  jobOf(remoteJobId: string): string;
  close(): Promise<void>;
}

export type ConformanceSetup = () => Promise<ConformanceVendor>;

const STEP: PaidStep = 'video';
const typed = (type: string) => (e: unknown) => e instanceof ApplicationFailure && e.type === type;

export function describeConformance(name: string, setup: ConformanceSetup): void {
  describe(`vendor conformance: ${name}`, function () {
    this.timeout(60_000);
    let dir: string;
    let store: FileEpisodeStore;
    let vendor: ConformanceVendor;
    let profile: VendorProfile;
    let id: EpisodeId;
    const first = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
    const retry = new MockActivityEnvironment({ attempt: 2 }, { logger: new DefaultLogger('ERROR') });

    beforeEach(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), `conformance-${name}-`));
      store = new FileEpisodeStore(dir);
      vendor = await setup();
      profile = (await vendor.vendors.open(vendor.vendors.assigned(STEP))).profile;
      ({ episodeId: id } = await store.allocate({
        allocationKey: parseAllocationKey(`conformance-${name}`),
        weekId: parseWeekId('2026-W32'),
        allocatedBy: { kind: 'test', note: `${name} conformance` },
      }));
    });
    afterEach(async () => {
      await vendor.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const acts = (budgetCents = 20_000) =>
      createActivities({ store, vendors: vendor.vendors, budgetCents, pollIntervalMs: 20 });
    const input = () => ({ episodeId: id, step: STEP, round: 0 });
    const submit = (env = first, a = acts()) =>
      env.run<[PaidStepInput], SubmittedStep, Activities['submitPaidStep']>(a.submitPaidStep, {
        ...input(),
        spec: { prompt: 'a lighthouse at dawn' },
      });
    const wait = () =>
      first.run<[Omit<PaidStepInput, 'spec'>], CompletedStep, Activities['awaitPaidStep']>(
        acts().awaitPaidStep,
        input(),
      );
    const record = async () => (await store.requireEpisode(id)).steps[`${STEP}-r0`];
    const charges = () => vendor.journal().filter((c) => c.ref === `${id}:${STEP}:r0`);
    const lines = (entries: { job: string; amount_cents: number; currency: string }[]) =>
      entries.map((c) => `${c.job} ${c.amount_cents} ${c.currency}`).sort();
    async function assertLedgerIsJournal(): Promise<void> {
      const { ledger } = await store.requireEpisode(id);
      const booked = ledger.map((l) => ({ ...l, job: vendor.jobOf(l.remote_job_id) }));
      assert.deepEqual(lines(booked), lines(vendor.journal()), 'ledger = the vendor’s journal, to the cent');
    }
    /** What a submission must fit in the budget (pay-once.ts): the quote, or a metered step's declared maximum. */
    async function reserve(): Promise<number> {
      const price = (await (await vendor.vendors.open(vendor.vendors.assigned(STEP))).prices())[STEP];
      return reserveCents(profile, STEP, { amount_cents: price.max_cents, currency: price.currency });
    }
    /** Sent once, charged at most once: whatever the row, the step never pays twice. */
    function assertNeverTwice(): void {
      assert.equal(vendor.sent(), 1, 'sent once');
      assert.ok(charges().length <= 1, `charged ${charges().length} times`);
    }
    /** What a row whose reply was lost must show, given the lookup's verdict from the profile. */
    async function assertSettledAsProfiled(verdict: ReturnType<typeof afterLookup>): Promise<void> {
      if ('send' in verdict) assert.fail('the profile would resend after an unknown outcome: it can pay twice');
      if ('adopt' in verdict) {
        const submitted = await submit();
        assert.deepEqual(await submit(retry), submitted, 'a retried submit returns the adopted job');
        const done = await wait();
        assert.equal(done.remoteJobId, submitted.remoteJobId, 'the job the vendor accepted');
        assertNeverTwice();
        assert.equal(charges().length, 1, 'charged once');
        return assertLedgerIsJournal();
      }
      await assert.rejects(submit(), typed(ErrorType.SubmissionOutcomeUnknown));
      assert.equal((await record())?.status, 'needs_reconciliation');
      await assert.rejects(submit(retry), typed(ErrorType.SubmissionOutcomeUnknown));
      assertNeverTwice();
    }

    it('a reply dropped after acceptance: adopted when the lookup can find it, parked otherwise; never resent', async () => {
      vendor.faults.dropReply();
      await assertSettledAsProfiled(afterLookup(profile, { jobs: 1, billed: true }));
    });

    it('a gateway 5xx after acceptance: settled like a dropped reply, never resent', async function () {
      if (!vendor.faults.gateway5xxAfterAccept) this.skip(); // the vendor documents a 5xx as "nothing happened"
      vendor.faults.gateway5xxAfterAccept();
      await assertSettledAsProfiled(afterLookup(profile, { jobs: 1, billed: true }));
    });

    it('a reply dropped and the job missing from the lookup, though billed: parked, never resent', async function () {
      if (!vendor.faults.lookupMisses) this.skip(); // the simulator has no way to hide an accepted job
      vendor.faults.dropReply();
      vendor.faults.lookupMisses();
      await assertSettledAsProfiled(afterLookup(profile, { jobs: 0, billed: true }));
    });

    it('the cost: the ledger records what the vendor billed (a metered step holds its maximum until then)', async () => {
      vendor.faults.meteredDrift?.();
      await submit();
      assert.equal((await record())?.reserved_cents, await reserve(), 'held: the quote, or the declared maximum');
      const done = await wait();
      assert.equal(charges().length, 1);
      assert.equal(done.costCents, charges()[0]!.amount_cents, 'the amount billed, not an estimate');
      await assertLedgerIsJournal();
    });

    it('the budget check: refused when the declared maximum (or quote) exceeds what is left; nothing sent', async () => {
      const cents = await reserve();
      await assert.rejects(submit(first, acts(cents - 1)), typed(ErrorType.BudgetExceeded));
      assert.equal(vendor.sent(), 0, 'nothing sent');
      assert.equal(await record(), undefined, 'no intent saved');
      await submit(first, acts(cents));
      assert.equal(vendor.sent(), 1, 'exactly the reserve fits');
    });

    it('an output expired before the fetch: the step parks, nothing is sent again', async function () {
      if (profile.artifactTtlMs === null) this.skip(); // the profile says outputs are kept
      assert.ok(vendor.faults.expireOutput, 'outputs expire (profile): the setup must offer expireOutput');
      vendor.faults.expireOutput();
      const submitted = await submit();
      await assert.rejects(wait(), typed(ErrorType.RemoteJobUnknown));
      assert.equal((await record())?.status, 'needs_reconciliation');
      assert.deepEqual(await submit(retry), submitted, 'a retried submit returns the saved job');
      assertNeverTwice();
      assert.equal(charges().length, 1, 'done and paid once; `episodes reconcile` settles the ledger');
    });

    it('a failed job: ledgered per the profile (0 where failures are documented unbilled), never resent', async () => {
      vendor.faults.failJob();
      await submit();
      await assert.rejects(wait(), typed(ErrorType.VendorRejected));
      const billed = charges()[0];
      const expected = ledgerCost(profile, { status: 'failed', cost: billed ?? null });
      assert.ok(!('park' in expected), 'a failure the vendor bills reports its amount');
      const { ledger } = await store.requireEpisode(id);
      assert.deepEqual(
        ledger.map((l) => l.amount_cents),
        [expected.amount_cents],
      );
      assertNeverTwice();
      if (billed) await assertLedgerIsJournal();
    });
  });
}
