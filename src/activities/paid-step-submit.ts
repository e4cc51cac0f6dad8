/**
 * Submission: intent (idempotency key) saved → submit → reference + quote saved. An intent without a reference is
 * looked up at the vendor before anything is sent again; an outcome nobody can tell parks the step for an operator.
 */
import type { EpisodeState, StepRecord } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { failpoint } from '../failpoints';
import type { VendorJob } from '../vendor-api/api';
import type { VendorClient } from '../vendor-api/client';
import { isVendorError } from '../vendor-api/vendor-error';
import { activityContext } from './activity-context';
import { countBudgetRefusal, countSubmission } from './metrics';
import {
  lookUpJob,
  needsReconciliation,
  requireStep,
  saveStep,
  vendorClient,
  type PaidStepInput,
  type SubmittedStep,
  type PaidStepDeps,
  type StepRef,
} from './paid-step-record';

export async function submitPaidStep(deps: PaidStepDeps, input: PaidStepInput): Promise<SubmittedStep> {
  const { at, state } = await requireStep(deps.store, input);
  let record = state.steps[at.key];
  if (record?.remote_job_id) return { remoteJobId: record.remote_job_id };
  if (record?.status === 'needs_reconciliation') {
    throw new PipelineError(
      ErrorType.SubmissionOutcomeUnknown,
      `${at.id} ${at.key} is waiting for \`episodes reconcile\``,
    );
  }

  const client = await vendorClient(deps, at.id);
  // An earlier attempt saved the intent and may have sent it. So may any earlier attempt of a retry: a restore can
  // take the record back to before that attempt's intent (none at all, or an older attempt's `not_submitted`) and
  // forget everything after it. Find out before sending anything.
  const mayHaveSent = record?.status === 'intent' || isRetry();
  if (record?.status !== 'intent') {
    await checkBudget(deps, client, at, state);
    const intent = newIntent(input, at.ref, record);
    await saveStep(deps.store, at, () => intent);
    record = intent;
    await failpoint('submission.intent-saved');
  }
  if (mayHaveSent) {
    const job = await earlierJob(deps, client, at);
    if (job) return found(deps, at, job);
  }
  return send(deps, client, at, record.spec);
}

/** Temporal ran this activity before (attempt > 1); outside an activity (a CLI) there is no earlier attempt. */
function isRetry(): boolean {
  return (activityContext()?.info.attempt ?? 1) > 1;
}

/** Sends the saved spec once; an answer that leaves the outcome unknown is settled by a lookup, never a resend. */
async function send(
  deps: PaidStepDeps,
  client: VendorClient,
  at: StepRef,
  spec: Record<string, unknown>,
): Promise<SubmittedStep> {
  let accepted;
  try {
    accepted = await client.submitJob({ kind: at.step, episode_id: at.id, spec }, at.ref);
  } catch (e) {
    if (!isVendorError(e) || e.outcome === null) throw e;
    if (e.outcome === 'not-accepted') {
      // Certainly not accepted: the next attempt may send again (same key, same body).
      await saveStep(deps.store, at, (r) => ({ ...r!, status: 'not_submitted', error: e.message }));
      throw e;
    }
    const job = await earlierJob(deps, client, at);
    if (job) return found(deps, at, job);
    await saveStep(deps.store, at, (r) => ({ ...r!, status: 'not_submitted', error: e.message }));
    throw new PipelineError(ErrorType.VendorUnavailable, `${e.message}; the vendor confirms it has no such job`);
  }
  countSubmission('accepted', at.step);
  await failpoint('submission.accepted');
  return saveReference(deps, at, accepted);
}

/** The job an earlier attempt created, null when the vendor certainly has none; parks the step when it cannot say. */
async function earlierJob(deps: PaidStepDeps, client: VendorClient, at: StepRef): Promise<VendorJob | null> {
  const answer = await lookUpJob(client, at);
  if ('unknown' in answer) return needsReconciliation(deps.store, at, answer.unknown);
  return answer.found;
}

async function checkBudget(deps: PaidStepDeps, client: VendorClient, at: StepRef, state: EpisodeState) {
  const quote = (await client.getPrices())[at.step];
  const committed = committedCents(state);
  if (committed + quote.amount_cents > deps.budgetCents) {
    countBudgetRefusal(at.step);
    throw new PipelineError(
      ErrorType.BudgetExceeded,
      `${at.id} ${at.key}: quote ${quote.amount_cents} + committed ${committed} exceeds the budget of ${deps.budgetCents} cents`,
      { episodeId: at.id, quote: quote.amount_cents, committed, budget: deps.budgetCents },
    );
  }
}

async function saveReference(
  deps: PaidStepDeps,
  at: StepRef,
  job: Pick<VendorJob, 'job_id' | 'quoted_cost'>,
): Promise<SubmittedStep> {
  await saveStep(deps.store, at, (r) => ({
    ...r!,
    status: 'submitted',
    remote_job_id: job.job_id,
    submitted_at: new Date().toISOString(),
    quoted_cost: job.quoted_cost,
    error: null,
  }));
  await failpoint('submission.reference-saved');
  return { remoteJobId: job.job_id };
}

/** An earlier attempt's job, found at the vendor by its idempotency key: adopted, never sent again. */
function found(deps: PaidStepDeps, at: StepRef, job: VendorJob): Promise<SubmittedStep> {
  countSubmission('found_by_idempotency_key', at.step);
  return saveReference(deps, at, job);
}

/** Money already spent or promised: ledger entries plus accepted jobs not charged yet. */
export function committedCents(state: EpisodeState): number {
  const charged = state.ledger.reduce((sum, l) => sum + l.amount_cents, 0);
  const pending = Object.values(state.steps)
    .filter((s) => s.remote_job_id !== null && !s.charged)
    .reduce((sum, s) => sum + (s.quoted_cost?.amount_cents ?? 0), 0);
  return charged + pending;
}

function newIntent(input: PaidStepInput, ref: string, previous: StepRecord | undefined): StepRecord {
  return {
    step: input.step,
    round: input.round,
    idempotency_key: ref,
    status: 'intent',
    intent_at: new Date().toISOString(),
    // A resend after "certainly not accepted" must carry the same body, or the vendor answers 422.
    spec: previous?.spec ?? input.spec,
    remote_job_id: null,
    submitted_at: null,
    quoted_cost: null,
    artifact: null,
    charged: false,
    reconciliation: previous?.reconciliation ?? null,
    error: null,
  };
}
