/**
 * What completion requires of an episode's money: every step with a vendor job settled and charged once, at its
 * quote, and every ledger line naming its step's job. A store that forgot a charge (a failover, a restore) is settled
 * from the vendor here, by idempotency key, before history is written, so history never keeps a wrong ledger.
 */
import type { EpisodeState, PaidStep } from '../domain/episode-state';
import { paidStepSchema } from '../domain/episode-state';
import { idempotencyKey, stepKey } from '../domain/names';
import type { VendorClient } from '../vendor-api/client';
import { vendorClient, type PaidStepDeps, type StepRef } from './paid-step-record';
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
 * Before completion: settles from the vendor every step whose charge the store does not show — those with a record
 * that is not settled, and the final media's and the first cut's steps when their record is gone. No vendor call (no
 * credentials read) when everything is already settled.
 */
export async function settleBeforeCompletion(
  deps: PaidStepDeps,
  state: EpisodeState,
  finalSteps: readonly string[],
): Promise<void> {
  const keys = new Set([...Object.keys(state.steps), ...finalSteps, stepKey('video', 0)]);
  const open = [...keys].filter((key) => !settledStep(state, key) && state.steps[key]?.status !== 'failed');
  if (open.length === 0) return;
  let client: VendorClient | undefined;
  for (const key of open) {
    client ??= await vendorClient(deps, state.episode_id);
    await settleStep(deps, client, stepRefOf(state, key), state.steps[key]);
  }
}

function stepRefOf(state: EpisodeState, key: string): StepRef {
  const match = /^(.+)-r(\d+)$/.exec(key);
  const step: PaidStep = paidStepSchema.parse(match?.[1]);
  const round = Number(match?.[2]);
  return { id: state.episode_id, step, round, key, ref: idempotencyKey(state.episode_id, step, round) };
}
