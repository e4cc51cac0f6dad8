/**
 * The error vocabulary: `ErrorType` (what `ApplicationFailure.type`, exit codes and tests match on) and the one class
 * that carries it. Importable from workflow code: no Node builtins, no I/O.
 */
/** `ApplicationFailure.type` values. Tests and callers match on these, never on message text. */
export const ErrorType = {
  InvalidAllocationRequest: 'InvalidAllocationRequest',
  AllocationKeyCrossesWeek: 'AllocationKeyCrossesWeek',
  AmbiguousAllocationKey: 'AmbiguousAllocationKey',
  /** A forgotten allocation cannot be re-asserted: its id, or its key, was given out again meanwhile. */
  AllocationConflict: 'AllocationConflict',
  StoreCorrupt: 'StoreCorrupt',
  LockTimeout: 'LockTimeout',
  LockCompromised: 'LockCompromised',
  StorageFailure: 'StorageFailure',
  InvalidInput: 'InvalidInput',
  EpisodeNotFound: 'EpisodeNotFound',
  SubmissionOutcomeUnknown: 'SubmissionOutcomeUnknown',
  BudgetExceeded: 'BudgetExceeded',
  VendorRejected: 'VendorRejected',
  VendorUnavailable: 'VendorUnavailable',
  CredentialsMissing: 'CredentialsMissing',
  InvalidState: 'InvalidState',
  /** The vendor no longer knows a job we saved (its state lost): the step is parked, retried until an operator acts. */
  RemoteJobUnknown: 'RemoteJobUnknown',
  /** Temporal could not be reached with the configured address, TLS and credentials. */
  ConnectionFailed: 'ConnectionFailed',
  /** The namespace is missing, or lacks the search attributes the workflows set. */
  NamespaceNotReady: 'NamespaceNotReady',
  /** `episodes deploy` refused a routing change (unknown build, no pollers, nothing to roll back to, a race). */
  DeploymentRefused: 'DeploymentRefused',
  /** `episodes cluster check` found something missing. */
  ClusterCheckFailed: 'ClusterCheckFailed',
  /** The review webhook did not take a notice: retried unless it answered a status a retry cannot change (4xx). */
  ReviewWebhookFailed: 'ReviewWebhookFailed',
} as const;
export type ErrorType = (typeof ErrorType)[keyof typeof ErrorType];

/** Errors that a retry cannot fix. Everything else (lock timeouts, I/O hiccups, vendor 5xx) is retried. */
export const NON_RETRYABLE_ERROR_TYPES: readonly ErrorType[] = [
  ErrorType.InvalidAllocationRequest,
  ErrorType.AllocationKeyCrossesWeek,
  ErrorType.AmbiguousAllocationKey,
  ErrorType.AllocationConflict,
  ErrorType.StoreCorrupt,
  ErrorType.InvalidInput,
  ErrorType.EpisodeNotFound,
  ErrorType.SubmissionOutcomeUnknown,
  ErrorType.BudgetExceeded,
  ErrorType.VendorRejected,
  ErrorType.CredentialsMissing,
  ErrorType.InvalidState,
];

/**
 * The one error class of the domain and the stores. It carries an `ErrorType` so that activities can turn it into
 * an `ApplicationFailure` and the CLI into an exit code, without either parsing messages.
 */
export class PipelineError extends Error {
  override readonly name = 'PipelineError';
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get retryable(): boolean {
    return !NON_RETRYABLE_ERROR_TYPES.includes(this.type);
  }
}

export function isPipelineError(e: unknown, type?: ErrorType): e is PipelineError {
  return e instanceof PipelineError && (type === undefined || e.type === type);
}
