/**
 * Search attribute keys and error types shared by workflows, activities, the worker, the CLI and tests.
 * This file must stay importable from workflow code: no Node builtins, no I/O.
 */
import { defineSearchAttributeKey } from '@temporalio/common';

// Task queue, schedule and workflow ID names live in domain/names.ts.

export const EpisodeIdSearchAttribute = defineSearchAttributeKey('EpisodeId', 'KEYWORD');
export const WeekIdSearchAttribute = defineSearchAttributeKey('WeekId', 'KEYWORD');
/** Built-in attribute a schedule sets on every run it starts (the nominal, not the actual, start time). */
export const ScheduledStartTimeSearchAttribute = defineSearchAttributeKey('TemporalScheduledStartTime', 'DATETIME');

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
