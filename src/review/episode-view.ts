/**
 * What the desk shows, derived from the store alone (no Temporal query per page): the round that waits, since when,
 * what it cost, the rounds before it with their notes and decisions, and (with the vendor's prices) what each choice
 * will cost.
 */
import { committedCents } from '../domain/pay-once';
import type { DecisionRecord, EpisodeState, Money, PaidStep, StepRecord } from '../domain/episode-state';
import { stepKey } from '../domain/names';
import type { PublishedPrices } from '../store/published-prices';

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

/** What one choice on the form starts: the paid steps it sends next, their price, and the budget left after them. */
/** A price before the click: one amount, or for a metered step its estimate up to its declared maximum. */
export type PriceRange = Money & { max_cents?: number };

export interface ChoiceCost {
  steps: { step: PaidStep; round: number; price: PriceRange }[];
  total: PriceRange;
  /** The budget left once these are paid; null when the prices are in another currency than the ledger. */
  leftAfterCents: number | null;
}

export interface DecisionCosts {
  /** Budget minus what is spent or promised (ledger and accepted jobs not charged yet). */
  leftCents: number;
  currency: string;
  approve: ChoiceCost;
  rework: ChoiceCost;
}

/**
 * The cost of each choice in the round under review, from the vendor's prices: approve pays the final assembly,
 * rework pays one rework job (and then waits for a new decision).
 */
export function decisionCosts(
  state: EpisodeState,
  prices: PublishedPrices['prices'],
  budgetCents: number,
): DecisionCosts {
  const leftCents = budgetCents - committedCents(state);
  const { currency } = costOf(state);
  const choice = (steps: ChoiceCost['steps']): ChoiceCost => {
    const sum = (f: (p: PriceRange) => number) => steps.reduce((total, s) => total + f(s.price), 0);
    const amount = sum((p) => p.amount_cents);
    const max = sum((p) => p.max_cents ?? p.amount_cents);
    const total: PriceRange = { amount_cents: amount, currency, ...(max > amount ? { max_cents: max } : {}) };
    const same = steps.every((s) => s.price.currency === currency);
    // The budget check holds a metered step's maximum: the worst case is what is left after.
    return { steps, total: same ? total : steps[0]!.price, leftAfterCents: same ? leftCents - max : null };
  };
  const round = currentRound(state);
  return {
    leftCents,
    currency,
    approve: choice([{ step: 'assembly', round: 0, price: prices.assembly }]),
    rework: choice([{ step: 'rework', round: round + 1, price: prices.rework }]),
  };
}

/** The round whose cut the final video assembles (the assembly's `video_job`), or null when it cannot be told. */
export function finalVideoRound(state: EpisodeState): number | null {
  const video = state.media.video;
  const assembly = Object.values(state.steps).find(
    (s) => s.step === 'assembly' && s.artifact !== null && s.artifact.sha256 === video?.sha256,
  );
  const cut = Object.values(state.steps).find(
    (s) => s.remote_job_id !== null && s.remote_job_id === assembly?.spec.video_job,
  );
  return cut ? cut.round : null;
}

/** Every decision with who took it and through which channel (runs before the decision-channels patch: none). */
export function decisionsOf(state: EpisodeState): DecisionRecord[] {
  return state.approval?.decisions ?? [];
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
