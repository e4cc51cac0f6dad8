/**
 * What the desk shows, derived from the store alone (no Temporal query per page): the round that waits, since when,
 * what it cost, the rounds before it with their notes, and the quotes of the next paid steps when known.
 */
import type { EpisodeState, Money, PaidStep, StepRecord } from '../domain/episode-state';
import { stepKey } from '../domain/names';

/** An episode whose current round waits for approve / rework. */
export function isWaiting(state: EpisodeState): boolean {
  return state.status === 'awaiting_approval' && state.approval?.status === 'pending';
}

/** The round under review: the latest rework round, 0 before any rework. */
export function currentRound(state: EpisodeState): number {
  return Math.max(0, ...stepsOf(state, 'rework').map((s) => s.round));
}

/** When the current cut was delivered (its ledger entry): the moment the episode started to wait. */
export function waitingSince(state: EpisodeState): string | null {
  const times = state.ledger.map((l) => l.recorded_at).sort();
  return times.at(-1) ?? null;
}

export function costOf(state: EpisodeState): Money {
  return {
    amount_cents: state.ledger.reduce((sum, l) => sum + l.amount_cents, 0),
    currency: state.ledger[0]?.currency ?? 'USD',
  };
}

export interface RoundView {
  round: number;
  /** The media key of the round's cut (`video-r0`, `rework-r2`), or null while it is not delivered. */
  videoKey: string | null;
  /** The notes that asked for the next round (null for the round under review or the approved one). */
  reworkNotes: string | null;
}

export function roundsOf(state: EpisodeState): RoundView[] {
  const last = currentRound(state);
  const rounds: RoundView[] = [];
  for (let round = 0; round <= last; round++) {
    const key = round === 0 ? stepKey('video', 0) : stepKey('rework', round);
    const next = state.steps[stepKey('rework', round + 1)];
    const notes = next?.spec.notes;
    rounds.push({
      round,
      videoKey: state.media[key] ? key : null,
      reworkNotes: typeof notes === 'string' ? notes : null,
    });
  }
  return rounds;
}

/** The latest quote the vendor gave for each step kind in any stored episode: what the next such step will cost. */
export function knownQuotes(states: readonly EpisodeState[]): Partial<Record<PaidStep, Money>> {
  const latest: Partial<Record<PaidStep, { at: string; cost: Money }>> = {};
  for (const state of states) {
    for (const s of Object.values(state.steps)) {
      const seen = latest[s.step];
      if (s.quoted_cost && (!seen || seen.at < s.intent_at)) latest[s.step] = { at: s.intent_at, cost: s.quoted_cost };
    }
  }
  return Object.fromEntries(Object.entries(latest).map(([k, v]) => [k, v.cost]));
}

export interface RemoteJobView {
  key: string;
  status: StepRecord['status'];
  remoteJobId: string | null;
  quoted: Money | null;
}

export function remoteJobsOf(state: EpisodeState): RemoteJobView[] {
  return Object.entries(state.steps)
    .map(([key, s]) => ({ key, status: s.status, remoteJobId: s.remote_job_id, quoted: s.quoted_cost }))
    .sort((a, b) => (a.key < b.key ? -1 : 1));
}

function stepsOf(state: EpisodeState, step: PaidStep): StepRecord[] {
  return Object.values(state.steps).filter((s) => s.step === step);
}
