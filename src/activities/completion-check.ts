/**
 * What completion requires of an episode's money: every step with a vendor job settled and charged once, at its
 * quote, and every ledger line naming its step's job. A store that forgot a charge (a failover, a restore), or a whole
 * rework round, is settled from the vendor here, by idempotency key, before history is written, so history never keeps
 * a wrong ledger; a forgotten round the vendor cannot tell parks the completion for an operator instead.
 */
import type { EpisodeState, PaidStep, StepRecord } from '../domain/episode-state';
import { paidStepSchema } from '../domain/episode-state';
import { ErrorType, PipelineError } from '../domain/errors';
import { idempotencyKey, stepKey } from '../domain/names';
import { isUnknownJob } from '../vendor-api/vendor-error';
import type { VendorAdapter, VendorJob } from '../vendors/port';
import { PaidStepCall, stepRef, type PaidStepDeps, type StepRef } from './paid-step-call';
import { settledStep, settleStep } from './paid-step-settle';

/** Why the episode's ledger and steps disagree (empty when they agree); `required` are the final media's steps. */
export function ledgerProblems(s: EpisodeState, required: readonly string[]): string[] {
  const problems: string[] = [];
  for (const key of required) {
    if (!settledStep(s, key) || !s.media[key]) problems.push(`${key} has no saved artifact with its charge`);
  }
  for (const [key, r] of Object.entries(s.steps)) {
    const terminal = r.status === 'succeeded' || r.status === 'failed';
    if (!terminal || !r.charged) problems.push(`${key} is ${r.status}${r.charged ? '' : ', not charged'}`);
    else if (!s.ledger.some((l) => l.remote_job_id === r.remote_job_id)) problems.push(`${key} has no ledger line`);
  }
  for (const l of s.ledger) {
    const r = s.steps[stepKey(l.step, l.round)];
    if (r?.remote_job_id !== l.remote_job_id)
      problems.push(`ledger line for job ${l.remote_job_id} names no step's job`);
    else if (r.quoted_cost?.amount_cents !== l.amount_cents)
      problems.push(`ledger line for ${l.remote_job_id} != quote`);
  }
  return problems;
}

/**
 * Before completion: settles from the vendor every step whose charge the store does not show: those with a record
 * that is not settled, the final media's and the first cut's steps when their record is gone, and every rework round
 * the store forgot (`forgottenRounds`). No vendor call (no credentials read) when everything is already settled.
 */
export async function settleBeforeCompletion(
  deps: PaidStepDeps,
  state: EpisodeState,
  finalSteps: readonly string[],
): Promise<void> {
  const rounds = await forgottenRounds(deps, state, finalSteps[0]);
  const keys = new Set([...Object.keys(state.steps), ...finalSteps, stepKey('video', 0), ...rounds.keys()]);
  const open = [...keys].filter((key) => !settledStep(state, key) && state.steps[key]?.status !== 'failed');
  for (const key of open) {
    await settleStep(new PaidStepCall(deps, stepRefOf(state, key), state.steps[key] ?? rounds.get(key)));
  }
}

/**
 * Rework rounds the vendor did for this episode that the store has no record of, each with the vendor's job. The
 * approved cut's job is in the final assembly's spec and each rework's spec names the cut it reworked, down to
 * `video-r0`: when that chain is whole in the store, no round is missing and the vendor is not asked. Otherwise the
 * approved cut, if forgotten, is found by its job id (`forgottenCut`; the assembly's spec as Temporal recorded it when
 * the store forgot that too), which tells the last round; then the vendor is
 * asked, by idempotency key, for each round the store does not know, until it has none after the last. A round up to
 * the last that the vendor cannot look up was done and maybe billed: the completion parks for an operator.
 */
async function forgottenRounds(
  deps: PaidStepDeps,
  state: EpisodeState,
  finalVideo: string | undefined,
): Promise<Map<string, StepRecord>> {
  const found = new Map<string, StepRecord>();
  if (finalVideo === undefined || cutChainIsWhole(state, finalVideo)) return found;
  const cut = await forgottenCut(deps, state, finalVideo);
  if (cut) found.set(cut.at.key, cut.record);
  const known = Object.values(state.steps).filter((r) => r.step === 'rework');
  const last = Math.max(0, cut?.at.round ?? 0, ...known.map((r) => r.round));
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const call = new PaidStepCall(deps, stepRefOf(state, stepKey('rework', round)), undefined);
    if (state.steps[call.at.key] || found.has(call.at.key)) continue;
    const answer = await call.lookUp();
    if ('unknown' in answer) {
      if (round > last) return found;
      const why = `the store forgot this round, done before the approved cut, and ${answer.unknown}`;
      await call.markNeedsReconciliation(why);
      return call.park(why);
    }
    if (answer.found) found.set(call.at.key, submittedRecord(call, answer.found));
    else if (round > last) return found;
  }
  return found;
}

/**
 * The approved cut when the store forgot its rework round: the final assembly's spec names its job, and the job,
 * fetched by id (which every vendor offers), names its round by its idempotency key. Undefined when the store knows
 * the job, or the vendor does not know it as a rework of this episode.
 */
async function forgottenCut(
  deps: PaidStepDeps,
  state: EpisodeState,
  finalVideo: string,
): Promise<{ at: StepRef; record: StepRecord } | undefined> {
  const jobId = (await finalSpec(deps, state, finalVideo))?.video_job;
  if (typeof jobId !== 'string' || Object.values(state.steps).some((r) => r.remote_job_id === jobId)) return undefined;
  // A forgotten rework's cut lives at the adapter assigned to reworks. The approved cut may also be video-r0, made at
  // the video adapter (settled by key anyway): an id the rework adapter refuses as none of its own is not a rework.
  const vendor: VendorAdapter = await deps.vendors.open(deps.vendors.assigned('rework'));
  const job = await vendor.get(jobId).catch((e: unknown) => {
    if (isUnknownJob(e) || isForeignJobId(e)) return undefined;
    throw e;
  });
  const round = Number(/:rework:r(\d+)$/.exec(job?.client_ref ?? '')?.[1]);
  if (!job || job.kind !== 'rework' || job.client_ref !== idempotencyKey(state.episode_id, 'rework', round)) {
    return undefined;
  }
  const call = new PaidStepCall(deps, stepRefOf(state, stepKey('rework', round)), undefined);
  return { at: call.at, record: submittedRecord(call, job) };
}

/**
 * The final assembly's spec: its record's, else (the store forgot the record, or wrote it back bare, spec and all)
 * the one Temporal recorded for its submission. Without it the approved cut, and so the last round, is unknown.
 */
async function finalSpec(
  deps: PaidStepDeps,
  state: EpisodeState,
  finalVideo: string,
): Promise<Record<string, unknown> | undefined> {
  const spec = state.steps[finalVideo]?.spec;
  if (typeof spec?.video_job === 'string') return spec;
  const at = stepRefOf(state, finalVideo);
  return deps.allocationRecords?.stepSpecOf(at.id, at.step, at.round);
}

/** An adapter's refusal of a job id before any request: not an id it hands out (another vendor's job, e.g. fal's). */
function isForeignJobId(e: unknown): boolean {
  return e instanceof PipelineError && e.type === ErrorType.InvalidInput;
}

/** The record of a step the store forgot, as the vendor's job shows it: submitted, with its job and quote. */
function submittedRecord(call: PaidStepCall, job: VendorJob): StepRecord {
  return call.bareRecord({
    status: 'submitted',
    intent_at: job.accepted_at,
    remote_job_id: job.job_id,
    submitted_at: job.accepted_at,
    quoted_cost: job.cost,
  });
}

/** Far more rounds than any approval sees: a bound on the vendor lookups, not a business rule. */
const MAX_ROUNDS = 100;

/** Whether the store holds every cut from the approved one (the assembly's `video_job`) back to `video-r0`. */
function cutChainIsWhole(state: EpisodeState, finalVideo: string): boolean {
  const keyOfJob = new Map(Object.entries(state.steps).map(([key, r]) => [r.remote_job_id, key]));
  let job = state.steps[finalVideo]?.spec.video_job;
  for (let hops = 0; hops <= MAX_ROUNDS && typeof job === 'string'; hops++) {
    const key = keyOfJob.get(job);
    if (key === stepKey('video', 0)) return true;
    if (key === undefined || state.steps[key]?.step !== 'rework') return false;
    job = state.steps[key].spec.base_job;
  }
  return false;
}

function stepRefOf(state: EpisodeState, key: string): StepRef {
  const match = /^(.+)-r(\d+)$/.exec(key);
  const step: PaidStep = paidStepSchema.parse(match?.[1]);
  return stepRef(state.episode_id, step, Number(match?.[2]));
}
