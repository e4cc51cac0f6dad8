/**
 * Paid steps parked in Temporal: a running step workflow (`episode-<id>-<step>-r<round>`) whose last activity is a
 * submission refused with `SubmissionOutcomeUnknown`, and no `reconciled` signal since. It waits for `episodes
 * reconcile`, which needs the store's `needs_reconciliation` record; a restore may have forgotten that record, and
 * `episodes repair` writes it back from here (with the reason Temporal recorded), so that `episodes status` shows it.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { PaidStep } from '../domain/episode-state';
import { ErrorType } from '../domain/errors';
import { paidStepWorkflowId, stepKey } from '../domain/names';
import { paidStepSchema } from '../domain/paid-step';
import { queueQuery } from './completion-records';

export interface ParkedStep {
  episodeId: string;
  step: PaidStep;
  round: number;
  /** The refusal's message, as Temporal recorded it. */
  why: string;
}

/** Every step workflow of the task queue that waits for `reconciled` now. */
export async function parkedSteps(client: Client, taskQueue: string): Promise<ParkedStep[]> {
  const query = `${queueQuery('paidStepWorkflow', taskQueue)} AND ExecutionStatus = "Running"`;
  const out: ParkedStep[] = [];
  for await (const run of client.workflow.list({ query })) {
    const parked = await parkedIn(client, run.workflowId, run.runId);
    if (parked) out.push(parked);
  }
  return out;
}

async function parkedIn(client: Client, workflowId: string, runId: string): Promise<ParkedStep | undefined> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  let input: { episodeId?: unknown; step?: unknown; round?: unknown } | undefined;
  let why: string | undefined;
  for (const event of history.events ?? []) {
    const started = event.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (started) input = defaultPayloadConverter.fromPayload<typeof input>(started);
    const failure = event.activityTaskFailedEventAttributes?.failure;
    if (failure?.applicationFailureInfo?.type === ErrorType.SubmissionOutcomeUnknown) why = failure.message ?? '';
    else if (event.activityTaskScheduledEventAttributes || event.workflowExecutionSignaledEventAttributes) {
      why = undefined;
    }
  }
  if (why === undefined || !input) return undefined;
  const step = paidStepSchema.parse(input.step);
  const round = Number(input.round);
  const episodeId = String(input.episodeId);
  // Only a step workflow under its own id (another workflow's input is not taken at its word).
  if (paidStepWorkflowId(episodeId, step, round) !== workflowId) return undefined;
  // The refusal's own words, without its id prefix and its command (`episodes status` adds both).
  const reason = why.replace(`${episodeId} ${stepKey(step, round)}: `, '').replace(/; settle it with [\s\S]*$/, '');
  return { episodeId, step, round, why: reason.slice(0, 500) };
}
