/**
 * Submission: intent saved → submit → reference (and quote) saved. An intent without a reference is looked up at the
 * vendor before anything is sent again; an outcome nobody can tell parks the step for an operator. What "looked up"
 * and "certainly not sent" mean for a vendor comes from its profile (domain/pay-once.ts).
 */
import type { EpisodeState, StepRecord } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { committedCents, mayHaveSent, reserveCents } from '../domain/pay-once';
import { failpoint } from '../failpoints';
import { isVendorError } from '../vendor-api/vendor-error';
import type { VendorJob } from '../vendors/port';
import { activityContext } from './activity-context';
import { countBudgetRefusal, countSubmission } from './metrics';
import { PaidStepCall, type PaidStepDeps, type PaidStepInput, type SubmittedStep } from './paid-step-call';

export async function submitPaidStep(deps: PaidStepDeps, input: PaidStepInput): Promise<SubmittedStep> {
  const { call, state } = await PaidStepCall.begin(deps, input);
  const { at } = call;
  let record = call.record;
  if (record?.remote_job_id) return { remoteJobId: record.remote_job_id };
  if (record?.status === 'needs_reconciliation') {
    throw new PipelineError(
      ErrorType.SubmissionOutcomeUnknown,
      `${at.id} ${at.key} is waiting for \`episodes reconcile\``,
    );
  }
  // An earlier attempt saved the intent and may have sent it. So may any earlier attempt of a retry: a restore can
  // take the record back to before that attempt's intent and forget everything after it. So may an earlier submission
  // of the step's workflow (another run of it, or one this run parked), whose record the store forgot. Find out first.
  const maySent = mayHaveSent(record, activityContext()?.info.attempt ?? 1) || (await sentEarlier(call));
  if (record?.status !== 'intent') {
    const reserved = await checkBudget(call, state);
    const intent = newIntent(call, input, reserved);
    await call.save(() => intent);
    record = intent;
    await failpoint('submission.intent-saved');
  }
  if (maySent) {
    const job = await earlierJob(call);
    if (job) return found(call, job);
  }
  return send(call, record.spec);
}

/** Sends the saved spec once; an answer that leaves the outcome unknown is settled by a lookup, never a resend. */
async function send(call: PaidStepCall, spec: Record<string, unknown>): Promise<SubmittedStep> {
  const { at } = call;
  const vendor = await call.vendor();
  let accepted;
  try {
    const callbackUrl = vendor.profile.completion === 'webhook' ? callbackFor(call.deps, vendor.name) : null;
    accepted = await vendor.submit({ step: at.step, episodeId: at.id, spec, ref: at.ref, callbackUrl });
  } catch (e) {
    if (!isVendorError(e) || e.outcome === null) throw e;
    if (e.outcome === 'not-accepted') {
      // Certainly not accepted: the next attempt may send again (same key, same body).
      await call.save((r) => ({ ...r!, status: 'not_submitted', error: e.message }));
      throw e;
    }
    const job = await earlierJob(call);
    if (job) return found(call, job);
    await call.save((r) => ({ ...r!, status: 'not_submitted', error: e.message }));
    throw new PipelineError(ErrorType.VendorUnavailable, `${e.message}; the vendor confirms it has no such job`);
  }
  countSubmission('accepted', at.step);
  await failpoint('submission.accepted');
  return saveReference(call, accepted);
}

/** The receiver's address for this adapter (`…/callbacks/fal`); the adapter adds the step's ref. */
function callbackFor(deps: PaidStepDeps, adapter: string): URL | null {
  if (!deps.callbackUrl) return null;
  const base = deps.callbackUrl.href.endsWith('/') ? deps.callbackUrl : new URL(`${deps.callbackUrl.href}/`);
  return new URL(`callbacks/${adapter}`, base);
}

/** The job an earlier attempt created, null when the vendor certainly has none; parks the step when it cannot say. */
async function earlierJob(call: PaidStepCall): Promise<VendorJob | null> {
  const answer = await call.lookUp();
  if ('unknown' in answer) return call.needsReconciliation(answer.unknown);
  return answer.found;
}

/**
 * Whether Temporal records an earlier submission of this step (another run of its workflow, or an earlier
 * `submitPaidStep` of this run), which may have sent what the store forgot; not after an operator's
 * `episodes reconcile --not-submitted` (the vendor was asked, and has no such job).
 */
async function sentEarlier(call: PaidStepCall): Promise<boolean> {
  const info = activityContext()?.info;
  const records = call.deps.allocationRecords;
  const runId = info?.workflowExecution?.runId;
  if (!info || runId === undefined || !records) return false;
  if (call.record?.reconciliation?.resolution === 'not-submitted') return false;
  return records.earlierSubmission(call.at.id, call.at.step, call.at.round, { runId, activityId: info.activityId });
}

/** Refuses a step whose quote (or metered maximum) could exceed what is left; returns what the step holds. */
async function checkBudget(call: PaidStepCall, state: EpisodeState): Promise<number> {
  const { at, deps } = call;
  const vendor = await call.vendor();
  const price = (await vendor.prices())[at.step];
  const reserve = reserveCents(vendor.profile, at.step, { amount_cents: price.max_cents, currency: price.currency });
  const committed = committedCents(state);
  if (committed + reserve > deps.budgetCents) {
    countBudgetRefusal(at.step);
    throw new PipelineError(
      ErrorType.BudgetExceeded,
      `${at.id} ${at.key}: quote ${reserve} + committed ${committed} exceeds the budget of ${deps.budgetCents} cents`,
      { episodeId: at.id, quote: reserve, committed, budget: deps.budgetCents },
    );
  }
  return reserve;
}

async function saveReference(call: PaidStepCall, job: VendorJob): Promise<SubmittedStep> {
  await call.save((r) => ({
    ...r!,
    status: 'submitted',
    remote_job_id: job.job_id,
    submitted_at: new Date().toISOString(),
    quoted_cost: job.cost,
    error: null,
  }));
  await failpoint('submission.reference-saved');
  return { remoteJobId: job.job_id };
}

/** An earlier attempt's job, found at the vendor by the step's key or correlation: adopted, never sent again. */
function found(call: PaidStepCall, job: VendorJob): Promise<SubmittedStep> {
  countSubmission('found_by_idempotency_key', call.at.step);
  return saveReference(call, job);
}

function newIntent(call: PaidStepCall, input: PaidStepInput, reservedCents: number): StepRecord {
  const previous = call.record;
  return {
    ...call.bareRecord({}),
    // A resend after "certainly not accepted" must carry the same body, or the vendor answers 422.
    spec: previous?.spec ?? input.spec,
    reconciliation: previous?.reconciliation ?? null,
    reserved_cents: reservedCents,
  };
}
