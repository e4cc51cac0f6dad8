/**
 * The pay-once rules: pure functions of (vendor profile, step record, outcome) that the paid step obeys. One table
 * per profile in test/unit/domain/pay-once.test.ts.
 */
import type { EpisodeState, Money, StepRecord } from './episode-state';
import type { PaidStep } from './paid-step';
import type { VendorProfile } from './vendor-profile';

/** What the vendor answered to "which job did this step's submission create?" (`billed`: its journal's answer). */
export type LookupFacts =
  | { jobs: number; billed: boolean }
  /** The vendor cannot look submissions up. */
  | { unsupported: true };

export type LookupVerdict = { adopt: true } | { send: true } | { park: string };

/** After an unknown outcome (or a retry that may have sent): adopt the one job, send, or park with the reason. */
export function afterLookup(profile: VendorProfile, facts: LookupFacts): LookupVerdict {
  if (profile.lookup === 'none' || 'unsupported' in facts) {
    return { park: 'the vendor may have accepted this submission and cannot look it up' };
  }
  if (facts.jobs > 1) return { park: `the vendor holds ${facts.jobs} jobs for this step's one submission` };
  if (facts.jobs === 1) return { adopt: true };
  // "None" is believed only where the vendor's billing agrees, when it has one: a job it charged and then lost (or
  // accepted while it ignored keys) is not found, and a resend would be charged again.
  if (profile.billingJournal && facts.billed) return { park: 'the vendor billed this step and cannot find its job' };
  if (!profile.lookupSeesEveryJob) {
    return { park: 'the vendor lists no job for this step, but its listing may not show one it accepted yet' };
  }
  return { send: true };
}

/**
 * Whether a submission may already have reached the vendor, so that it must be looked up before anything is sent:
 * an intent saved but not settled, or any retry (a restore can take the record back to before an earlier attempt's
 * intent, even to an older attempt's `not_submitted`, and forget everything after it).
 */
export function mayHaveSent(record: StepRecord | undefined, attempt: number): boolean {
  return record?.status === 'intent' || attempt > 1;
}

/** What a submission must fit in the budget: the quote, or the metered step's declared maximum. */
export function reserveCents(profile: VendorProfile, step: PaidStep, quote: Money | null): number {
  if (profile.charging.mode === 'metered') return profile.charging.maxCents[step];
  return quote?.amount_cents ?? 0;
}

/** The finished job's ledger amount: its cost as the vendor reports it, 0 for a failure documented as unbilled. */
export function ledgerCost(
  profile: VendorProfile,
  job: { status: 'succeeded' | 'failed'; cost: Money | null },
): Money | { park: string } {
  if (job.status === 'failed' && profile.failedJobsUnbilled) {
    return { amount_cents: 0, currency: job.cost?.currency ?? 'USD' };
  }
  if (job.cost === null) return { park: 'the vendor reports no cost for this finished job' };
  return job.cost;
}

/** Money already spent or promised: ledger entries, plus each accepted job not charged yet at its quote or reserve. */
export function committedCents(state: EpisodeState): number {
  const charged = state.ledger.reduce((sum, l) => sum + l.amount_cents, 0);
  const pending = Object.values(state.steps)
    .filter((s) => s.remote_job_id !== null && !s.charged)
    .reduce((sum, s) => sum + (s.quoted_cost?.amount_cents ?? s.reserved_cents ?? 0), 0);
  return charged + pending;
}

/** What a verified vendor callback does to its step's record. */
export type CallbackVerdict =
  /** The record names no job yet: it takes this one (and a parked step is reconciled to it). */
  | { adopt: true; wasParked: boolean }
  /** Already the record's job (a redelivery, a late or a duplicate callback): nothing changes. */
  | { duplicate: true }
  /** The record names another job, or there is no record: nothing changes; an operator should look. */
  | { refuse: string };

/** Applied at most once per job: a callback only ever fills a step's empty job reference, never replaces one. */
export function onCallback(record: StepRecord | undefined, jobId: string): CallbackVerdict {
  if (!record) return { refuse: 'the store has no record of this step (run `episodes repair`)' };
  if (record.remote_job_id === jobId) return { duplicate: true };
  if (record.remote_job_id !== null) {
    return { refuse: `the step's job is ${record.remote_job_id}, the callback names ${jobId}: two jobs for one step` };
  }
  return { adopt: true, wasParked: record.status === 'needs_reconciliation' };
}
