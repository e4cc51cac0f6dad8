/**
 * The vendor port: what a paid step needs from any vendor, whatever its API. An adapter translates one vendor's API
 * to it and declares the vendor's promises in its profile (domain/vendor-profile.ts); the paid step obeys the rules
 * derived from the profile (domain/pay-once.ts). Failures are `VendorError`s whose `outcome` says, for a submission,
 * whether the vendor certainly created nothing (`not-accepted`) or may have (`unknown`).
 */
import type { EpisodeId } from '../domain/episode-id';
import type { Money } from '../domain/episode-state';
import type { PaidStep } from '../domain/paid-step';
import type { VendorProfile } from '../domain/vendor-profile';

/**
 * The query parameter that carries the step's ref in a callback URL (`…/callbacks/<adapter>?ref=<episode:step:rN>`):
 * the receiver finds the step by it once the adapter has checked the callback; every adapter that calls back writes it.
 */
export const CALLBACK_REF_QUERY = 'ref';

export interface Submission {
  step: PaidStep;
  episodeId: EpisodeId;
  spec: Record<string, unknown>;
  /** The step's one correlation value (`episode:step:rN`): its idempotency key, or echoed back where the vendor can. */
  ref: string;
  /** Where the vendor may call back (the adapter adds the ref to its query); null: no callbacks, polling only. */
  callbackUrl: URL | null;
}

/** A callback as it arrived: the adapter checks its signature before reading anything from it. */
export interface CallbackRequest {
  url: URL;
  headers: Readonly<Record<string, string | undefined>>;
  body: Buffer;
}

/** What checks an adapter's callbacks: one per account, whatever the model (no signature depends on it). */
export interface CallbackReader {
  /** Verifies the signature (throws a `VendorError` if it fails) before reading a byte of the callback. */
  readCallback(request: CallbackRequest): Promise<VendorCallback>;
}

/** What a verified callback says: which job of which step ended how. */
export interface VendorCallback {
  ref: string;
  jobId: string;
  status: JobStatus;
}

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

/** One vendor job, as every adapter shows it. */
export interface VendorJob {
  job_id: string;
  kind: PaidStep;
  episode_id: string;
  status: JobStatus;
  /** Fixed pricing: the quote from acceptance on. Metered: null until the job ends, then the amount billed. */
  cost: Money | null;
  /** What `download` fetches once the job succeeded; null before (or for a failure). */
  artifact: string | null;
  /** The correlation value the vendor holds for the job; null when it keeps none. */
  client_ref: string | null;
  accepted_at: string;
}

/** A job the vendor charged, from its journal. */
export interface VendorCharge {
  job_id: string;
  kind: PaidStep;
  episode_id: string;
  client_ref: string | null;
  amount_cents: number;
  currency: string;
}

/** What a step will cost before it is sent: one amount for fixed pricing, a range for metered. */
export interface PriceRange {
  min_cents: number;
  max_cents: number;
  currency: string;
}

export interface VendorAdapter {
  readonly name: string;
  readonly profile: VendorProfile;
  prices(): Promise<Record<PaidStep, PriceRange>>;
  /** Sends once; no retries inside. The answer's `cost` is the quote (fixed) or null (metered). */
  submit(s: Submission): Promise<VendorJob>;
  /**
   * The jobs the step's submission created, by key or correlation; `unsupported` when the vendor cannot say. `since`:
   * the step's intent time (nothing was sent before it), for vendors that list by time; absent: any time.
   */
  find(ref: string, since?: string): Promise<VendorJob[] | 'unsupported'>;
  /** Throws a `VendorError` with status 404 (`isUnknownJob`) when the vendor does not know the job. */
  get(jobId: string): Promise<VendorJob>;
  download(job: VendorJob): Promise<Buffer>;
  /** The vendor's charges, all or for one correlation value; null when it shows none (`profile.billingJournal`). */
  billing(ref?: string): Promise<VendorCharge[] | null>;
  /** Present where the vendor calls back: verifies the signature (throws a `VendorError` if it fails) and reads it. */
  readCallback?(request: CallbackRequest): Promise<VendorCallback>;
}

/** Logs of a vendor call carry method, path, status: never a key. Compatible with the activity log and `console`. */
export interface VendorLogger {
  debug(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
}

/** Opens the adapter a step's job lives at (credentials are read here, so only after the episode guard). */
export interface Vendors {
  /** The adapter assigned to new jobs of this kind. */
  assigned(step: PaidStep): string;
  /** The profile of each adapter that is set up, without opening any (no key is read). */
  profiles(): Readonly<Record<string, VendorProfile>>;
  open(name: string, logger?: VendorLogger): Promise<VendorAdapter>;
  /** What checks the callbacks sent to `/callbacks/<adapter>`, for any model; null: it sends none, or is not set up. */
  openCallbacks(adapter: string): Promise<CallbackReader | null>;
}
