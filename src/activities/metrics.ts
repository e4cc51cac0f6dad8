/**
 * Business metrics, through the SDK's metric meter of the running activity: they reach the worker's Prometheus
 * endpoint (EPISODES_METRICS_ADDRESS) labelled namespace, task_queue, activity_type (see `snakeCaseMetricTags`), with
 * `_total` appended by the exporter (src/process/telemetry.ts), and are a no-op when the worker exports no metrics.
 * Every name, label and meaning is listed in docs/operations.md.
 */
import type { MetricTags } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { PaidStep } from '../domain/paid-step';
import { activityContext } from './activity-context';

export const MetricName = {
  allocations: 'episodes_allocations',
  vendorSubmissions: 'episodes_vendor_submissions',
  charges: 'episodes_charges',
  chargedCents: 'episodes_charged_cents',
  budgetRefusals: 'episodes_budget_refusals',
  reviewNotices: 'episodes_review_notices',
} as const;

export type AllocationOutcome = 'created' | 'existing' | 'refused' | 'failed';
/** accepted: the vendor took this attempt's submission; found: an earlier attempt's job, found by idempotency key. */
/** sent: the webhook answered 2xx; failed: no answer or 5xx/408/429 (retried); refused: any other status (not retried). */
export type ReviewNoticeOutcome = 'sent' | 'failed' | 'refused';
export type SubmissionOutcome = 'accepted' | 'found_by_idempotency_key' | 'unknown';

function count(name: string, description: string, value: number, tags: MetricTags): void {
  activityContext()?.metricMeter.createCounter(name, undefined, description).add(value, tags);
}

export function countAllocation(outcome: AllocationOutcome, errorType = 'none'): void {
  count(MetricName.allocations, 'episode allocations by outcome', 1, { outcome, error_type: errorType });
}

export function countSubmission(outcome: SubmissionOutcome, step: PaidStep): void {
  count(MetricName.vendorSubmissions, 'vendor submissions by outcome', 1, { outcome, step });
}

/** Called once per ledger entry actually written: a retried charge of the same remote job counts nothing. */
export function countCharge(step: PaidStep, cents: number, jobStatus: 'succeeded' | 'failed'): void {
  count(MetricName.charges, 'vendor charges written to the ledger', 1, { step, job_status: jobStatus });
  count(MetricName.chargedCents, 'cents charged, as written to the ledger', cents, { step, job_status: jobStatus });
}

export function countBudgetRefusal(step: PaidStep): void {
  count(MetricName.budgetRefusals, 'submissions refused because the quote exceeds the budget', 1, { step });
}

/** One per POST of a review notice (every attempt), so a webhook that keeps failing shows as a rising `failed`. */
export function countReviewNotice(outcome: ReviewNoticeOutcome): void {
  count(MetricName.reviewNotices, 'review notice webhook attempts by outcome', 1, { outcome });
}

/**
 * The SDK tags an activity's meter `taskQueue` and `activityType`; Prometheus label names are snake_case (promtool
 * rejects camelCase). Renamed here; the camelCase keys are set undefined because the SDK drops undefined tags when it
 * resolves them, which also removes the worker-level `taskQueue` that precedes this in the chain.
 */
export const snakeCaseMetricTags: ActivityInterceptorsFactory = () => ({
  outbound: { getMetricTags: (input, next) => snakeCaseTags(next(input)) },
});

export function snakeCaseTags(tags: MetricTags): MetricTags {
  const edited: Record<string, MetricTags[string] | undefined> = {};
  for (const [key, value] of Object.entries(tags)) {
    const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    edited[snake] = value;
    if (snake !== key) edited[key] = undefined;
  }
  return edited as MetricTags;
}
