/**
 * What a vendor's public API promises about money, declared once per adapter (docs/vendors.md has the table with a
 * doc URL per fact). The pay-once rules (pay-once.ts) are derived from it, never from the adapter's name.
 */
import type { PaidStep } from './paid-step';

export interface VendorProfile {
  /** `key`: a resend with the step's key returns the first job. `none`: every send may create (and bill) a job. */
  idempotency: 'key' | 'none';
  /**
   * How a submission whose outcome is unknown is found again: by its key, by listing jobs and matching the
   * correlation value the submission carried, or not at all (the step parks for an operator).
   */
  lookup: 'by-key' | 'list-correlation' | 'none';
  /** A lookup that finds nothing proves the vendor holds no job (false: e.g. a queued job may not be listed yet). */
  lookupSeesEveryJob: boolean;
  /** `webhook`: the vendor calls back when a job ends (and polling still works when no callback comes). */
  completion: 'poll' | 'webhook';
  /** `fixed`: the price quoted at acceptance is the charge. `metered`: known when the job ends, at most `maxCents`. */
  charging: { mode: 'fixed' } | { mode: 'metered'; maxCents: Readonly<Record<PaidStep, number>> };
  /** How long the vendor keeps an output downloadable; null: kept. */
  artifactTtlMs: number | null;
  /** A job that ends `failed` is documented as not billed: its ledger line is 0. */
  failedJobsUnbilled: boolean;
  /** The vendor shows its charges per job (`billing`): a lookup that finds nothing is believed only if none is billed. */
  billingJournal: boolean;
}
