import type { AllocationKey } from './allocation-key';
import { formatEpisodeId, MAX_SEQUENCE, parseEpisodeId, type EpisodeId } from './episode-id';
import { PipelineError, ErrorType } from './errors';
import type { WeekId } from './week-id';

/** What the allocation rule needs to know about one stored episode (live state or completed history). */
export interface StoredEpisodeRef {
  episodeId: EpisodeId;
  weekId: WeekId;
  sequence: number;
  allocationKey: string | null;
}

export interface AllocationFacts {
  key: AllocationKey;
  weekId: WeekId;
  /** Every stored episode, in any week, that carries `key`. */
  keyMatches: readonly StoredEpisodeRef[];
  /** Every stored episode of `weekId`, live or completed. */
  weekEpisodes: readonly StoredEpisodeRef[];
  /**
   * Ids of `weekId` that Temporal records as handed out (a run's `EpisodeId`, an existing production), which a store
   * restored from a backup may have forgotten: never given to a new run. Empty where nothing is consulted.
   */
  recorded?: readonly EpisodeId[];
}

export type AllocationDecision =
  | { kind: 'existing'; episode: StoredEpisodeRef }
  | { kind: 'new'; episodeId: EpisodeId; weekId: WeekId; sequence: number };

const describe = (refs: readonly StoredEpisodeRef[]): string =>
  refs
    .map((r) => r.episodeId)
    .sort()
    .join(', ');

/**
 * The allocation rule, as a pure function. The caller must hold the pipeline lock from reading the facts until the
 * decision is persisted: a key without the lock races, a lock without the key hands retries new numbers.
 *
 * - exactly one match for the key, in the target week → that episode;
 * - a match in another week, or several matches → refuse (no guessing, nothing written);
 * - no match → max(sequence) + 1 over the week's episodes and the ids Temporal records as handed out, 0 for a new
 *   week: a restored store forgets what it gave out after its backup, Temporal does not.
 */
export function decideAllocation(facts: AllocationFacts): AllocationDecision {
  checkWeek(facts);
  const match = keyMatch(facts);
  if (match) {
    if (match.weekId !== facts.weekId) {
      throw new PipelineError(
        ErrorType.AllocationKeyCrossesWeek,
        `allocation key ${JSON.stringify(facts.key)} already owns ${match.episodeId} in week ${match.weekId}, ` +
          `not in the requested week ${facts.weekId}`,
        { episodes: [match.episodeId] },
      );
    }
    return { kind: 'existing', episode: match };
  }

  const taken = [...facts.weekEpisodes.map((e) => e.sequence), ...recordedSequences(facts)];
  const sequence = taken.reduce((m, s) => Math.max(m, s), -1) + 1;
  if (sequence > MAX_SEQUENCE) {
    throw new PipelineError(
      ErrorType.InvalidAllocationRequest,
      `week ${facts.weekId} is full (${MAX_SEQUENCE} episodes)`,
    );
  }
  return { kind: 'new', episodeId: formatEpisodeId(facts.weekId, sequence), weekId: facts.weekId, sequence };
}

/**
 * Re-asserting an allocation the store forgot (a restore, a failover to a replica behind), with the allocation's rules:
 * Temporal recorded that the run `facts.key` was given `claim`, and the caller holds the pipeline lock.
 *
 * - the key owns exactly `claim` → that episode (nothing to do);
 * - the key owns another episode, or the id is another key's → refuse (`AllocationConflict`, nothing written): the
 *   store gave the id or the key out again after it forgot; never two episodes under one id, nor two for one key;
 * - neither → `claim` is written back at its own sequence (`new`), even above the week's next one: the ids between
 *   were handed out too, and are left free for their own runs to re-assert, never given to a new run.
 */
export function decideReassertion(
  facts: AllocationFacts,
  claim: { episodeId: EpisodeId; sequence: number },
): AllocationDecision {
  checkWeek(facts);
  const match = keyMatch(facts);
  if (match?.episodeId === claim.episodeId) return { kind: 'existing', episode: match };
  const forgot = `the store forgot that run ${JSON.stringify(facts.key)} was given ${claim.episodeId}`;
  if (match) {
    throw new PipelineError(
      ErrorType.AllocationConflict,
      `${forgot}, and has since given it ${match.episodeId}, its episode now; nothing was written and this run of ` +
        `${claim.episodeId} stops. Charges under ${claim.episodeId}:* keys are in no ledger: compare ` +
        "`episodes ledger` with the vendor's billing",
      { episodes: [claim.episodeId, match.episodeId], allocationKey: facts.key },
    );
  }
  const holder = facts.weekEpisodes.find((e) => e.episodeId === claim.episodeId);
  if (holder) throw idTakenMeanwhile(facts.key, claim.episodeId, holder.allocationKey);
  return { kind: 'new', episodeId: claim.episodeId, weekId: facts.weekId, sequence: claim.sequence };
}

/**
 * The run `key` was given `id`, the store forgot it and has since given the id to `holder`: the run must stop before it
 * writes anything into the other run's episode. Names the commands that settle it.
 */
export function idTakenMeanwhile(key: AllocationKey, id: EpisodeId, holder: string | null): PipelineError {
  return new PipelineError(
    ErrorType.AllocationConflict,
    `the store forgot that run ${JSON.stringify(key)} was given ${id}, and has since given that id to ` +
      `${JSON.stringify(holder)}; nothing was written and this run stops. Settle it: ` +
      `\`temporal workflow reset --workflow-id ${key} --type FirstWorkflowTask\` gives the run a new episode, and ` +
      `\`episodes generate ${id}\` produces the other run's`,
    { episodes: [id], allocationKey: key, heldBy: holder },
  );
}

/** A week's stored episodes must name themselves and hold each sequence once, or the store is corrupt. */
function checkWeek(facts: AllocationFacts): void {
  const seen = new Map<number, EpisodeId>();
  for (const e of facts.weekEpisodes) {
    const other = seen.get(e.sequence);
    if (other !== undefined) {
      throw new PipelineError(
        ErrorType.StoreCorrupt,
        `store is corrupt: ${other} and ${e.episodeId} (listed again) both claim week ${facts.weekId} sequence ${e.sequence}`,
        { episodes: [other, e.episodeId] },
      );
    }
    if (e.weekId !== facts.weekId || !namesItself(e)) {
      throw new PipelineError(
        ErrorType.StoreCorrupt,
        `store is corrupt: episode ${e.episodeId} is filed under week ${facts.weekId} with sequence ${e.sequence}`,
        { episodes: [e.episodeId] },
      );
    }
    seen.set(e.sequence, e.episodeId);
  }
}

/** The sequences of the recorded ids; one of another week is the caller's mistake, refused before anything is written. */
function recordedSequences(facts: AllocationFacts): number[] {
  return (facts.recorded ?? []).map((id) => {
    const { weekId, sequence } = parseEpisodeId(id);
    if (weekId !== facts.weekId) {
      throw new PipelineError(
        ErrorType.InvalidAllocationRequest,
        `recorded id ${id} is not of the requested week ${facts.weekId}`,
      );
    }
    return sequence;
  });
}

/** The one stored episode of the key, if any; several is ambiguous (refused, no guessing). */
function keyMatch(facts: AllocationFacts): StoredEpisodeRef | undefined {
  const matches = dedupe([
    ...facts.keyMatches.filter((e) => e.allocationKey === facts.key),
    ...facts.weekEpisodes.filter((e) => e.allocationKey === facts.key),
  ]);
  if (matches.length > 1) {
    throw new PipelineError(
      ErrorType.AmbiguousAllocationKey,
      `allocation key ${JSON.stringify(facts.key)} matches several episodes: ${describe(matches)}; refusing to guess`,
      { episodes: matches.map((m) => m.episodeId) },
    );
  }
  return matches[0];
}

/** The stored id is what its stored week and sequence format to (a hand-edited index may say otherwise). */
function namesItself(e: StoredEpisodeRef): boolean {
  try {
    return formatEpisodeId(e.weekId, e.sequence) === e.episodeId;
  } catch {
    return false; // a sequence no episode can have: corrupt, not the caller's bad input
  }
}

function dedupe(refs: StoredEpisodeRef[]): StoredEpisodeRef[] {
  const byId = new Map<string, StoredEpisodeRef>();
  for (const r of refs) byId.set(r.episodeId, r);
  return [...byId.values()];
}
