/**
 * Every deterministic name of the pipeline in one place: task queue, schedule, workflow IDs, step keys and vendor
 * idempotency keys. Pure and importable from workflow code; workflows, activities, the CLI and tests all use it, so a
 * name is never spelled twice. Changing any of these changes what a running production looks up: treat as a format.
 */
import { defineSearchAttributeKey } from '@temporalio/common';
import type { PaidStep } from './paid-step';

export const TASK_QUEUE = 'weekly-media';
export const SCHEDULE_ID = 'weekly-media';
/** Base of scheduled workflow IDs: a schedule names each run `<base>-<nominal time>`. */
export const SCHEDULED_WORKFLOW_ID_BASE = 'weekly-media';

/** Search attributes the workflows set (a namespace must define them: temporal-namespace.ts). */
export const EpisodeIdSearchAttribute = defineSearchAttributeKey('EpisodeId', 'KEYWORD');
export const WeekIdSearchAttribute = defineSearchAttributeKey('WeekId', 'KEYWORD');
/** Built-in attribute a schedule sets on every run it starts (the nominal, not the actual, start time). */
export const ScheduledStartTimeSearchAttribute = defineSearchAttributeKey('TemporalScheduledStartTime', 'DATETIME');

/** `episode-<id>`: the production workflow of one episode. */
export function productionWorkflowId(episodeId: string): string {
  return `episode-${episodeId}`;
}

/** `<step>-r<round>` (`video-r0`, `rework-r2`): the key of one paid step in an episode's state and ledger. */
export function stepKey(step: PaidStep, round: number): string {
  return `${step}-r${round}`;
}

/** `episode-<id>-<step>-r<round>`: the child workflow of one paid step. */
export function paidStepWorkflowId(episodeId: string, step: PaidStep, round: number): string {
  return `${productionWorkflowId(episodeId)}-${stepKey(step, round)}`;
}

/** `episode-<id>-reassembly-r<round>`: a reassembly of a completed episode. */
export function reassemblyWorkflowId(episodeId: string, round: number): string {
  return `${productionWorkflowId(episodeId)}-reassembly-r${round}`;
}

/** `<episode_id>:<step>:r<round>`: the vendor idempotency key (and client_ref) of one paid step. */
export function idempotencyKey(episodeId: string, step: PaidStep, round: number): string {
  return `${episodeId}:${step}:r${round}`;
}

/**
 * Patch of the production, paid-step, reassembly and weekly workflows: children start with `EpisodeId`/`WeekId` and a
 * static summary. Runs recorded before it (test/histories/) replay without it. See docs/architecture.md.
 */
export const EPISODE_RUNS_TAGGED_PATCH = 'episode-runs-tagged';

/**
 * `decision-<episode_id>-r<round>-<kind>-<approver>`: the update ID of one operator decision sent by the CLI. A retried
 * call sends the same ID and gets the first answer back; a different approver of the same round is a different update.
 */
export function decisionUpdateId(episodeId: string, round: number, kind: 'approve' | 'rework', by: string): string {
  return `decision-${episodeId}-r${round}-${kind}-${by}`;
}

/** `desk-decision-…`: the same for a decision made on the review desk; the workflow tells the two apart by it. */
export function deskDecisionUpdateId(episodeId: string, round: number, kind: 'approve' | 'rework', by: string): string {
  return `desk-${decisionUpdateId(episodeId, round, kind, by)}`;
}

/** The episode a workflow ID belongs to (`episode-<id>` and its children), or undefined: log correlation only. */
export function episodeIdOfWorkflowId(workflowId: string): string | undefined {
  return /^episode-(\d{4}-W\d{2}-\d+)(?:-|$)/.exec(workflowId)?.[1];
}

/**
 * `<episode_id>:review:r<round>`: the dedupe key (`Idempotency-Key` header) of the review notice of one round. Every
 * resend of that round's notice carries it; the next round has its own.
 */
export function reviewNoticeKey(episodeId: string, round: number): string {
  return `${episodeId}:review:r${round}`;
}

/**
 * Patch of the production workflow: each round of the approval wait reads its cost so far and review link into the
 * current details and tells the review webhook (without waiting for it). Runs recorded before it replay without it.
 */
export const REVIEW_NOTICE_PATCH = 'review-notice';

/**
 * Patch of the production workflow: decision signals pass the updates' checks (an invalid one is dropped, logged and
 * listed in `status`), and every decision records its channel and time, in `status` and in the store's approval.
 * Asked when a decision arrives, so a production parked before the deploy gets it for its next decision.
 */
export const DECISION_CHANNELS_PATCH = 'decision-channels';

/**
 * Patch of the paid step: a `reconciled` signal that reached the step before the refusal it answers (the operator
 * settled the record while the refusal was on its way) still wakes it. Asked when a submission is refused, so a step
 * parked before the deploy waits as it did.
 */
export const RECONCILED_KEPT_PATCH = 'reconciled-kept';
