import type { AllocationKey } from './allocation-key';
import { formatEpisodeId, MAX_SEQUENCE, type EpisodeId } from './episode-id';
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
 * - no match → max(sequence) + 1 over the week's episodes, 0 for a new week.
 */
export function decideAllocation(facts: AllocationFacts): AllocationDecision {
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
  const [match] = matches;
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

  const max = facts.weekEpisodes.reduce((m, e) => Math.max(m, e.sequence), -1);
  const sequence = max + 1;
  if (sequence > MAX_SEQUENCE) {
    throw new PipelineError(
      ErrorType.InvalidAllocationRequest,
      `week ${facts.weekId} is full (${MAX_SEQUENCE} episodes)`,
    );
  }
  return { kind: 'new', episodeId: formatEpisodeId(facts.weekId, sequence), weekId: facts.weekId, sequence };
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
