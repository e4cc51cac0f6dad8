import { PipelineError, type ErrorType } from '../domain/errors';

/**
 * What a failed submission means for the money:
 * - `not-accepted`: the vendor certainly did not create a job (nothing reached it, or it answered 409/429/4xx/5xx).
 *   Retrying with the SAME idempotency key is safe.
 * - `unknown`: the request may have been accepted and charged (timeout or connection lost after sending, unreadable
 *   success response). The caller must reconcile (`findJobsByClientRef`) and never blindly resubmit.
 */
export type SubmissionOutcome = 'not-accepted' | 'unknown';

export type VendorOperation =
  | 'submitJob'
  | 'getJob'
  | 'findJobsByClientRef'
  | 'getPrices'
  | 'downloadArtifact'
  | 'getBilling'
  | 'getWebhookSecret'
  | 'readCallback';

export type VendorFailureReason =
  | 'connect-failed'
  | 'timeout'
  | 'aborted'
  | 'connection-lost'
  | 'http-status'
  | 'malformed-response'
  | 'response-too-large'
  | 'integrity-mismatch';

export type VendorErrorType =
  typeof ErrorType.VendorUnavailable | typeof ErrorType.VendorRejected | typeof ErrorType.SubmissionOutcomeUnknown;

export interface VendorErrorInit {
  type: VendorErrorType;
  message: string;
  operation: VendorOperation;
  reason: VendorFailureReason;
  /** Null for reads: repeating a read never costs anything. */
  outcome: SubmissionOutcome | null;
  /** The HTTP status the vendor answered, when it answered. */
  status?: number | null;
  /** The vendor's own error code from its error body. */
  vendorCode?: string | null;
  cause?: unknown;
}

/**
 * A `PipelineError` so activities map it with `toApplicationFailure` like any other; the classification is also in
 * `details` so it survives that conversion.
 */
export class VendorError extends PipelineError {
  declare readonly type: VendorErrorType;
  readonly operation: VendorOperation;
  readonly reason: VendorFailureReason;
  readonly outcome: SubmissionOutcome | null;
  readonly status: number | null;
  readonly vendorCode: string | null;

  constructor(init: VendorErrorInit) {
    const { type, message, operation, reason, outcome, status = null, vendorCode = null } = init;
    super(
      type,
      message,
      { operation, reason, outcome, status, vendor_code: vendorCode },
      'cause' in init ? { cause: init.cause } : undefined,
    );
    this.operation = operation;
    this.reason = reason;
    this.outcome = outcome;
    this.status = status;
    this.vendorCode = vendorCode;
  }
}

export function isVendorError(e: unknown): e is VendorError {
  return e instanceof VendorError;
}

/** `getJob` answered 404 (the vendor does not know the job: never had it, or lost it) or 410 (removed its data). */
export function isUnknownJob(e: unknown): boolean {
  return isVendorError(e) && e.operation === 'getJob' && (e.status === 404 || e.status === 410);
}
