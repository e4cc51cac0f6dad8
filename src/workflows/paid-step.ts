import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  proxyActivities,
  setHandler,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CompletedStep, PaidStepInput } from '../activities/paid-steps';
import { ErrorType, NON_RETRYABLE_ERROR_TYPES } from '../shared';
import { reconciledSignal, stepStatusQuery, type StepStatus } from './messages';

/**
 * Submission is a few short HTTP calls plus state writes; it retries on vendor outages (5xx, 409, refused
 * connections), never on a business refusal or an unknown outcome, which go to an operator instead. It heartbeats
 * every second, so a worker that dies mid-submission is replaced within 10 s.
 */
const submitActivityOptions = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '10s',
  retry: {
    initialInterval: '2s',
    backoffCoefficient: 2,
    maximumInterval: '1m',
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
} satisfies ActivityOptions;

/** Vendor jobs may run for hours; the poller heartbeats, so a dead worker is replaced within 30 s. */
const awaitActivityOptions = {
  startToCloseTimeout: '6h',
  heartbeatTimeout: '30s',
  retry: {
    initialInterval: '2s',
    backoffCoefficient: 2,
    maximumInterval: '1m',
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
} satisfies ActivityOptions;

const { submitPaidStep } = proxyActivities<Activities>(submitActivityOptions);
const { awaitPaidStep } = proxyActivities<Activities>(awaitActivityOptions);

export function paidStepWorkflowId(episodeId: string, step: string, round: number): string {
  return `episode-${episodeId}-${step}-r${round}`;
}

/**
 * One paid step of one episode (`episode-<id>-<step>-r<round>`): Temporal refuses a second running copy, and the
 * submission protocol in the store refuses to pay twice across copies and retries. An unknown submission outcome
 * parks the step until `episodes reconcile` settles it and signals `reconciled`.
 */
export async function paidStepWorkflow(input: PaidStepInput): Promise<CompletedStep> {
  const status: StepStatus = { episodeId: input.episodeId, step: input.step, round: input.round, phase: 'submitting' };
  let reconciled = false;
  setHandler(stepStatusQuery, () => status);
  setHandler(reconciledSignal, () => {
    reconciled = true;
  });

  for (;;) {
    try {
      await submitPaidStep(input);
      break;
    } catch (e) {
      if (failureType(e) !== ErrorType.SubmissionOutcomeUnknown) throw e;
      status.phase = 'needs_reconciliation';
      reconciled = false;
      await condition(() => reconciled);
      status.phase = 'submitting';
    }
  }
  status.phase = 'waiting_for_vendor';
  const result = await awaitPaidStep({ episodeId: input.episodeId, step: input.step, round: input.round });
  status.phase = 'done';
  return result;
}

export function failureType(e: unknown): string | undefined {
  const cause = e instanceof ActivityFailure ? e.cause : e;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}
