/**
 * The campaign's invariants, as pure functions of what the checker read. Each returns its violations (empty: holds),
 * one line each, so that the report says exactly what broke.
 */
import type { Charge, LedgerLine, ListedEpisode, VisibleRun } from './reads';

export interface PlannedRun {
  key: string;
  /** ISO week of the slot's nominal time (triggers: undefined, the week they ran in). */
  week?: string;
  /** Rework rounds the reviewer asked for. */
  reworks: number;
}

/**
 * Each allocation key owns exactly one episode; ids are unique; every week's sequences are 0..n-1, but for the ids
 * `accounted` explains (`forgottenBeforeRecorded`): those gaps are returned apart, not as violations.
 */
export function duplicateEpisodes(
  episodes: readonly ListedEpisode[],
  accounted: (episodeId: string) => string | undefined = () => undefined,
): { violations: string[]; gaps: string[] } {
  const out: string[] = [];
  const gaps: string[] = [];
  for (const [key, group] of groupBy(episodes, (e) => e.allocation_key ?? '(no key)')) {
    if (group.length > 1)
      out.push(`key ${key} owns ${group.length} episodes: ${group.map((e) => e.episode_id).join(', ')}`);
  }
  for (const [id, group] of groupBy(episodes, (e) => e.episode_id)) {
    if (group.length > 1) out.push(`episode id ${id} is listed ${group.length} times`);
  }
  for (const [week, group] of groupBy(episodes, (e) => e.week_id)) {
    const seqs = group.map((e) => e.sequence).sort((a, b) => a - b);
    const missing = Array.from({ length: (seqs.at(-1) ?? -1) + 1 }, (_, s) => s).filter((s) => !seqs.includes(s));
    const why = missing.map((s) => accounted(`${week}-${s}`));
    const repeated = seqs.some((s, i) => s === seqs[i - 1]);
    if (repeated || why.some((w) => w === undefined))
      out.push(`week ${week}: sequences ${seqs.join(',')} are not 0..${seqs.length - 1}`);
    else gaps.push(...missing.map((s, i) => `${week}-${s}: ${why[i]!}`));
  }
  return { violations: out, gaps };
}

/** What the checker knows of an id the store no longer has: Temporal's runs, the vendor's billing, the fault lines. */
export interface GapEvidence {
  runs: readonly VisibleRun[];
  billing: readonly Charge[];
  /** history.jsonl's fault lines, in their order. */
  faults: readonly { id: string; kind: string; step: string; inFlight?: string[] }[];
}

const FORGETTING_KINDS = new Set(['store-restore', 'pg-failover']);

/**
 * Why a week may lack `episodeId` (decision 0015): the store handed it out, then forgot it (a restore or a failover)
 * before its answer reached Temporal (the allocating worker died first), so no record could bring it back and the
 * product never hands it out again. Accounted only when the campaign saw the id in the store, a store-forgetting fault
 * hit after that, and nothing ever used it: no workflow of Temporal names it (no weekly run's `EpisodeId`, no
 * production or step), no charge. Undefined otherwise: the gap stays a violation.
 */
export function forgottenBeforeRecorded(episodeId: string, evidence: GapEvidence): string | undefined {
  const production = `episode-${episodeId}`;
  const named = evidence.runs.some(
    (r) => r.episodeId === episodeId || r.workflowId === production || r.workflowId.startsWith(`${production}-`),
  );
  if (named || evidence.billing.some((c) => c.episode_id === episodeId)) return undefined;
  const seen = evidence.faults.findIndex((f) => f.inFlight?.includes(episodeId));
  const forgot = evidence.faults.find((f, i) => i > seen && f.step === 'hit' && FORGETTING_KINDS.has(f.kind));
  if (seen < 0 || !forgot) return undefined;
  return `seen in the store, forgotten by ${forgot.id}, never recorded by Temporal nor charged`;
}

/**
 * One key per episode id in Temporal's own records: the weekly runs of two keys whose `EpisodeId` is the same id were
 * both handed it (a store that forgot gave it out again), whatever the store shows now.
 */
export function idsOwnedTwice(runs: readonly VisibleRun[]): string[] {
  const weekly = runs.filter((r) => r.type === 'weeklyEpisodeWorkflow' && r.episodeId !== undefined);
  const out: string[] = [];
  for (const [id, group] of groupBy(weekly, (r) => r.episodeId!)) {
    const keys = [...new Set(group.map((r) => r.workflowId))].sort();
    if (keys.length > 1) out.push(`episode id ${id} was handed to ${keys.length} keys: ${keys.join(', ')}`);
  }
  return out;
}

/** At most one charge per (episode, step, round): the vendor's idempotency key names it. */
export function doubleCharges(billing: readonly Charge[]): string[] {
  const out: string[] = [];
  for (const [ref, group] of groupBy(billing, (c) => c.client_ref ?? `(no key) ${c.job_id}`)) {
    if (group.length > 1) out.push(`${ref} charged ${group.length} times: ${group.map((c) => c.job_id).join(', ')}`);
  }
  return out;
}

/** Every planned run ends with its episode completed, in the week it was planned for. */
export function lostRuns(
  planned: readonly PlannedRun[],
  episodes: readonly ListedEpisode[],
  parked: Map<string, string[]>,
) {
  const out: string[] = [];
  for (const run of planned) {
    const owned = episodes.filter((e) => e.allocation_key === run.key);
    if (owned.length === 0) out.push(`${run.key}: no episode`);
    for (const e of owned) {
      if (run.week && e.week_id !== run.week)
        out.push(`${run.key}: episode ${e.episode_id} is not in week ${run.week}`);
      if (e.status !== 'completed') {
        const why = parked.get(e.episode_id)?.join(' | ') ?? 'no parked reason';
        out.push(`${run.key}: episode ${e.episode_id} is ${e.status} (${why})`);
      }
    }
  }
  return out;
}

/** Ledger − billing = 0, entry for entry: the same jobs, each for the same cents, in the same episode. */
export function ledgerBilling(
  ledger: readonly LedgerLine[],
  billing: readonly Charge[],
): { lines: string[]; cents: number } {
  const billed = new Map(billing.map((c) => [c.job_id, c]));
  const recorded = new Map(ledger.map((l) => [l.remote_job_id, l]));
  const lines: string[] = [];
  let cents = 0;
  for (const c of billing) {
    const l = recorded.get(c.job_id);
    if (!l) {
      lines.push(`billed, not in the ledger: ${c.job_id} (${c.client_ref}, ${c.amount_cents} cents)`);
      cents -= c.amount_cents;
    } else if (l.amount_cents !== c.amount_cents || l.episode_id !== c.episode_id) {
      lines.push(`${c.job_id}: ledger ${l.episode_id} ${l.amount_cents}, billed ${c.episode_id} ${c.amount_cents}`);
      cents += l.amount_cents - c.amount_cents;
    }
  }
  for (const l of ledger) {
    if (!billed.has(l.remote_job_id)) {
      lines.push(`in the ledger, never billed: ${l.remote_job_id} (${l.episode_id} ${l.step})`);
      cents += l.amount_cents;
    }
  }
  if (new Set(ledger.map((l) => l.remote_job_id)).size !== ledger.length) lines.push('a job is in the ledger twice');
  return { lines, cents };
}

/** Each decision was taken once: an episode paid for exactly the reworks its reviewer asked for. */
export function decisionsApplied(
  planned: readonly PlannedRun[],
  episodes: readonly ListedEpisode[],
  billing: readonly Charge[],
) {
  const out: string[] = [];
  for (const run of planned) {
    const e = episodes.find((x) => x.allocation_key === run.key);
    if (!e || e.status !== 'completed') continue;
    const reworks = billing.filter((c) => c.episode_id === e.episode_id && c.kind === 'rework').length;
    if (reworks !== run.reworks) out.push(`${e.episode_id}: ${reworks} rework charges, ${run.reworks} asked for`);
  }
  return out;
}

/** Every weekly run, production and paid step the server knows of has a completed run and none still running. */
export function unfinishedWorkflows(runs: readonly VisibleRun[]): string[] {
  const ours = runs.filter((r) =>
    ['weeklyEpisodeWorkflow', 'episodeProductionWorkflow', 'paidStepWorkflow'].includes(r.type),
  );
  const out: string[] = [];
  for (const [id, group] of groupBy(ours, (r) => r.workflowId)) {
    const statuses = group.map((r) => r.status);
    if (!statuses.includes('COMPLETED') || statuses.includes('RUNNING')) out.push(`${id}: runs ${statuses.join(', ')}`);
  }
  return out;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
