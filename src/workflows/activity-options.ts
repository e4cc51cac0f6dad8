/** Timeouts and retry policies of every activity proxy, side by side so their reasons can be compared. */
import type { ActivityOptions, RetryPolicy } from '@temporalio/workflow';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/errors';

/** Business refusals never retry; everything else (lock timeouts, I/O hiccups, vendor outages) backs off to 1 min. */
const retry: RetryPolicy = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '1m',
  nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
};

/**
 * Allocation is milliseconds of local I/O but may queue behind other allocations for up to the lock timeout (30 s).
 * The activity heartbeats every second, so a dead worker is noticed after 5 s; retries are unlimited because the
 * allocation key makes every retry return the same episode.
 */
export const allocationActivityOptions = {
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { ...retry, maximumInterval: '30s' },
} satisfies ActivityOptions;

/** Bookkeeping is local file or database I/O behind the pipeline lock: short, and always safe to retry. */
export const lifecycleActivityOptions = {
  startToCloseTimeout: '1m',
  retry: { ...retry, maximumInterval: '30s' },
} satisfies ActivityOptions;

/**
 * Submission is a few short HTTP calls plus state writes; it retries on vendor outages (5xx, 409, refused
 * connections), never on a business refusal or an unknown outcome, which go to an operator instead. It heartbeats
 * every second, so a worker that dies mid-submission is replaced within 10 s.
 */
export const submitActivityOptions = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '10s',
  retry: { ...retry, initialInterval: '2s' },
} satisfies ActivityOptions;

/** Vendor jobs may run for hours; the poller heartbeats, so a dead worker is replaced within 30 s. */
export const awaitActivityOptions = {
  startToCloseTimeout: '6h',
  heartbeatTimeout: '30s',
  retry: { ...retry, initialInterval: '2s' },
} satisfies ActivityOptions;

/**
 * A review notice is one short POST, sent beside the approval wait, never in its way. It retries a webhook that fails
 * (backing off to 10 min) for up to a day, and stops when its round closes (the workflow cancels it); it heartbeats
 * every second, so a worker that dies mid-POST is replaced within 5 s and a cancellation reaches the POST.
 */
export const reviewNoticeActivityOptions = {
  startToCloseTimeout: '1m',
  heartbeatTimeout: '5s',
  scheduleToCloseTimeout: '1 day',
  retry: { ...retry, initialInterval: '2s', maximumInterval: '10m' },
} satisfies ActivityOptions;
