import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  patched,
  proxyActivities,
  setHandler,
  setWorkflowOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CompletedStep, PaidStepInput } from '../activities/paid-steps';
import { ErrorType } from '../domain/errors';
import { RECONCILED_KEPT_PATCH } from '../domain/names';
import { awaitActivityOptions, submitActivityOptions } from './activity-options';
import { descriptions, reconciledSignal, stepStatusQuery, type StepStatus } from './messages';

const { submitPaidStep } = proxyActivities<Activities>(submitActivityOptions);
const { awaitPaidStep } = proxyActivities<Activities>(awaitActivityOptions);

/**
 * One paid step of one episode (`episode-<id>-<step>-r<round>`): Temporal refuses a second running copy, and the
 * submission protocol in the store refuses to pay twice across copies and retries. An unknown submission outcome
 * parks the step until `episodes reconcile` settles it and signals `reconciled`.
 */
export async function paidStepWorkflow(input: PaidStepInput): Promise<CompletedStep> {
  const status: StepStatus = { episodeId: input.episodeId, step: input.step, round: input.round, phase: 'submitting' };
  let reconciliations = 0;
  setHandler(stepStatusQuery, () => status, { description: descriptions.stepStatus });
  setHandler(
    reconciledSignal,
    () => {
      reconciliations++;
    },
    { description: descriptions.reconciled },
  );

  for (;;) {
    // A signal sent after this attempt began answers its refusal, even one processed before the refusal arrives.
    const before = reconciliations;
    try {
      await submitPaidStep(input);
      break;
    } catch (e) {
      if (failureType(e) !== ErrorType.SubmissionOutcomeUnknown) throw e;
      status.phase = 'needs_reconciliation';
      // Runs recorded before the patch count only the signals after the refusal.
      const since = patched(RECONCILED_KEPT_PATCH) ? before : reconciliations;
      await condition(() => reconciliations > since);
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

// A vendor step finishes on the code that submitted it; its build drains once its steps are done (docs/deploy.md).
setWorkflowOptions({ versioningBehavior: 'PINNED' }, paidStepWorkflow);
