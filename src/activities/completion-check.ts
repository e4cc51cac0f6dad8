/**
 * What completion requires of an episode's money: every step with a vendor job settled and charged once, at its
 * quote, and every ledger line naming its step's job. A store that forgot a charge (a failover, a restore), or a whole
 * rework round, is settled from the vendor here, by idempotency key, before history is written, so history never keeps
 * a wrong ledger.
 */
import type { EpisodeState, PaidStep } from '../domain/episode-state';
import { paidStepSchema } from '../domain/episode-state';
import { idempotencyKey, stepKey } from '../domain/names';
import type { VendorClient } from '../vendor-api/client';
import { lookUpJob, vendorClient, type PaidStepDeps, type StepRef } from './paid-step-record';
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
  let client: VendorClient | undefined;
  const vendor = async () => (client ??= await vendorClient(deps, state.episode_id));
  const rounds = await forgottenRounds(state, finalSteps[0], vendor);
  const keys = new Set([...Object.keys(state.steps), ...finalSteps, stepKey('video', 0), ...rounds]);
  const open = [...keys].filter((key) => !settledStep(state, key) && state.steps[key]?.status !== 'failed');
  for (const key of open) await settleStep(deps, await vendor(), stepRefOf(state, key), state.steps[key]);
}

/**
 * Rework rounds the vendor did for this episode that the store has no record of. The approved cut's job is in the
 * final assembly's spec and each rework's spec names the cut it reworked, down to `video-r0`: when that chain is
 * whole in the store, no round is missing and the vendor is not asked. Otherwise the vendor is asked, by idempotency
 * key, for each round after the last one the store knows, until it has none. A vendor that cannot look jobs up by key
 * leaves only the rounds the store knows to check.
 */
async function forgottenRounds(
  state: EpisodeState,
  finalVideo: string | undefined,
  vendor: () => Promise<VendorClient>,
): Promise<string[]> {
  if (finalVideo === undefined || cutChainIsWhole(state, finalVideo)) return [];
  const known = Object.values(state.steps).filter((r) => r.step === 'rework');
  const last = Math.max(0, ...known.map((r) => r.round));
  const found: string[] = [];
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const key = stepKey('rework', round);
    if (state.steps[key]) continue;
    const answer = await lookUpJob(await vendor(), stepRefOf(state, key));
    if ('unknown' in answer) return found;
    if (answer.found) found.push(key);
    else if (round > last) return found;
  }
  return found;
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
  const round = Number(match?.[2]);
  return { id: state.episode_id, step, round, key, ref: idempotencyKey(state.episode_id, step, round) };
}
