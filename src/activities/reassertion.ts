/**
 * The store heals after a restore: an activity of an episode the store no longer knows (`EpisodeNotFound`) re-asserts
 * the episode's allocation from what Temporal recorded (allocation-records.ts), then runs once more. The write is the
 * store's `reassertAllocation`: under the pipeline lock, with the allocation's rules, so an id another run took
 * meanwhile stops this run with `AllocationConflict` and overwrites nothing. Ids of the same week below it that the
 * store forgot too are re-asserted first, from their own records, so the week stays dense.
 *
 * Only an activity of the episode's own workflows (the production, its steps, a reassembly) heals it: a paid command
 * or any other caller still fails with `EpisodeNotFound` before anything else happens. Such an activity also checks
 * that the stored episode is its run's (one cached lookup per episode and worker), so a run whose id was given to
 * another run meanwhile stops instead of writing into the other run's episode.
 */
import { Context } from '@temporalio/activity';
import { formatEpisodeId, parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { idTakenMeanwhile } from '../domain/allocation';
import { isPipelineError } from '../domain/errors';
import { episodeIdOfWorkflowId } from '../domain/names';
import type { WeekId } from '../domain/week-id';
import { ErrorType } from '../domain/errors';
import type { AllocationResult, EpisodeStore } from '../store/episode-store';
import type { AllocationRecords } from './allocation-records';

export interface ReassertionDeps {
  store: EpisodeStore;
  /** Temporal's records of allocations; without them (tests, a store used alone) nothing is re-asserted. */
  allocationRecords?: AllocationRecords;
}

/**
 * Runs `op` of episode `rawId` for one of the episode's own workflows. First, the stored episode must belong to the
 * run Temporal recorded as given it: after a restore another run may have been given the same id, and this one must
 * then stop (`AllocationConflict`) before it writes into that episode. If the store forgot the episode, it is
 * re-asserted (see the header) and `op` runs again.
 */
export async function withReassertion<T>(deps: ReassertionDeps, rawId: string, op: () => Promise<T>): Promise<T> {
  const { episodeId } = parseEpisodeId(rawId);
  const own = Context.current().info.workflowExecution;
  const records = deps.allocationRecords;
  if (!own || episodeIdOfWorkflowId(own.workflowId) !== episodeId || !records) return op();
  const stored = await deps.store.getEpisode(episodeId);
  if (stored) {
    const production = await records.productionRunOf(episodeId, own);
    const recorded = production === undefined ? undefined : await records.allocationOf(episodeId, production);
    if (recorded && stored.allocation_key !== recorded.allocationKey) {
      throw idTakenMeanwhile(recorded.allocationKey, episodeId, stored.allocation_key);
    }
  }
  try {
    return await op();
  } catch (e) {
    if (!isPipelineError(e, ErrorType.EpisodeNotFound)) throw e;
    const result = await reassertForgotten(deps, episodeId);
    if (!result) throw e;
    Context.current().log.warn('re-asserted an allocation the store had forgotten', { ...result });
    return op();
  }
}

/**
 * Writes back episode `id` (and any forgotten id below it in its week) as Temporal recorded it. Undefined when Temporal
 * has no record of it; `AllocationConflict` when its id or its key was given out again meanwhile.
 */
export async function reassertForgotten(
  deps: ReassertionDeps,
  id: EpisodeId,
): Promise<(AllocationResult & { alsoReasserted: string[] }) | undefined> {
  const records = deps.allocationRecords;
  const claim = await records?.allocationOf(id);
  if (!records || !claim) return undefined;
  const { weekId, sequence } = parseEpisodeId(id);
  const alsoReasserted = await reassertBelow(deps.store, records, weekId, sequence);
  return { ...(await deps.store.reassertAllocation(claim)), alsoReasserted };
}

/** The week's ids below `sequence` that the store lacks and Temporal has a record of, re-asserted in order. */
async function reassertBelow(
  store: EpisodeStore,
  records: AllocationRecords,
  weekId: WeekId,
  sequence: number,
): Promise<string[]> {
  const known = new Set((await store.listEpisodes({ weekId })).map((e) => e.sequence));
  const done: string[] = [];
  for (let s = 0; s < sequence; s++) {
    if (known.has(s)) continue;
    const claim = await records.allocationOf(formatEpisodeId(weekId, s));
    if (!claim) continue;
    try {
      if ((await store.reassertAllocation(claim)).created) done.push(claim.episodeId);
    } catch (e) {
      // Taken meanwhile: that id's own run stops with the conflict when it next runs; this one goes on.
      if (!isPipelineError(e, ErrorType.AllocationConflict)) throw e;
    }
  }
  return done;
}
