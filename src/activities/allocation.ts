import { Context } from '@temporalio/activity';
import { parseAllocationKey, type AllocationKey } from '../domain/allocation-key';
import type { AllocatedBy } from '../domain/episode-state';
import { PipelineError, ErrorType, isPipelineError } from '../domain/errors';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { parseWeekId, type WeekId } from '../domain/week-id';
import { failpoint } from '../failpoints';
import type { EpisodeStore } from '../store/episode-store';
import type { AllocationRecords } from './allocation-records';
import { withFailureMapping } from './failures';
import { withHeartbeat } from './heartbeat';
import { countAllocation } from './metrics';
import { reassertForgotten } from './reassertion';

export interface AllocateEpisodeInput {
  allocationKey: string;
  weekId: string;
}

export interface AllocateEpisodeOutput {
  episodeId: string;
  weekId: string;
  sequence: number;
  created: boolean;
}

/**
 * The one allocation entry point, shared by the activity and `episodes plan`: parse untrusted input, then let the
 * store apply the allocation rule inside the pipeline lock.
 */
export async function allocateEpisodeOn(
  store: EpisodeStore,
  input: AllocateEpisodeInput,
  allocatedBy: AllocatedBy,
  records?: AllocationRecords,
): Promise<AllocateEpisodeOutput> {
  const request = parseRequest(input);
  const recorded = records ? await recordedInWeek(store, records, request.weekId) : [];
  const result = await store.allocate({ ...request, allocatedBy, recorded });
  return { episodeId: result.episodeId, weekId: result.weekId, sequence: result.sequence, created: result.created };
}

function parseRequest(input: AllocateEpisodeInput): { allocationKey: AllocationKey; weekId: WeekId } {
  try {
    return { allocationKey: parseAllocationKey(input.allocationKey), weekId: parseWeekId(input.weekId) };
  } catch (e) {
    if (e instanceof PipelineError) throw new PipelineError(ErrorType.InvalidAllocationRequest, e.message);
    throw e;
  }
}

/**
 * The ids of the week that Temporal records as handed out, read before the allocation: a store restored from a backup
 * forgot those given out after it, and a new run must not be given one again (the store's rule goes above them). Each
 * one the store lacks is re-asserted first under the key Temporal recorded (reassertion.ts), so the forgotten run's
 * episode comes back as its own; one that cannot be (taken meanwhile, or started by hand) is still never handed out.
 */
async function recordedInWeek(store: EpisodeStore, records: AllocationRecords, weekId: WeekId): Promise<EpisodeId[]> {
  const known = new Set((await store.listEpisodes({ weekId })).map((e) => e.sequence));
  const storeMax = [...known].reduce((m, s) => Math.max(m, s), -1);
  const recorded = [
    ...new Set([...(await records.handedOutIn(weekId, storeMax)), ...(await records.answeredUnrecorded(weekId))]),
  ];
  const forgotten = recorded.map((id) => parseEpisodeId(id)).filter((id) => !known.has(id.sequence));
  for (const { episodeId } of forgotten.sort((a, b) => a.sequence - b.sequence)) {
    try {
      await reassertForgotten({ store, allocationRecords: records }, episodeId);
    } catch (e) {
      if (!isPipelineError(e, ErrorType.AllocationConflict)) throw e;
    }
  }
  return recorded;
}

export function createAllocationActivities(deps: { store: EpisodeStore; allocationRecords?: AllocationRecords }) {
  return {
    async allocateEpisode(input: AllocateEpisodeInput): Promise<AllocateEpisodeOutput> {
      const { workflowExecution, namespace } = Context.current().info;
      return withHeartbeat(() =>
        withFailureMapping(async () => {
          let result;
          try {
            const by: AllocatedBy = {
              kind: 'workflow',
              workflow_id: workflowExecution?.workflowId ?? '(none)',
              run_id: workflowExecution?.runId ?? '(none)',
              namespace,
            };
            result =
              (await reassertEarlier(deps, input, by.run_id)) ??
              (await allocateEpisodeOn(deps.store, input, by, deps.allocationRecords));
          } catch (e) {
            // refused: a business rule said no (for good); failed: a retryable store error (lock timeout, I/O).
            if (e instanceof PipelineError) countAllocation(e.retryable ? 'failed' : 'refused', e.type);
            throw e;
          }
          countAllocation(result.created ? 'created' : 'existing');
          await failpoint('allocation.before-return');
          return result;
        }),
      );
    },
  };
}

/**
 * A reset or re-run of a weekly run whose allocation the store forgot (a restore): Temporal's record of what an
 * earlier run of the key was given is re-asserted (reassertion.ts), so the run keeps its episode and its production.
 * If its id was given to another key meanwhile, the run gets a new episode by the allocation rule instead; the old
 * production stops with `AllocationConflict` when it next runs. Undefined: nothing recorded, allocate as usual.
 */
async function reassertEarlier(
  deps: { store: EpisodeStore; allocationRecords?: AllocationRecords },
  input: AllocateEpisodeInput,
  ownRunId: string,
): Promise<AllocateEpisodeOutput | undefined> {
  if (!deps.allocationRecords) return undefined;
  const key = parseAllocationKey(input.allocationKey);
  const claim = await deps.allocationRecords.earlierAllocationOf(key, ownRunId);
  if (!claim || parseEpisodeId(claim.episodeId).weekId !== input.weekId) return undefined;
  try {
    const r = await deps.store.reassertAllocation(claim);
    return { episodeId: r.episodeId, weekId: r.weekId, sequence: r.sequence, created: r.created };
  } catch (e) {
    if (isPipelineError(e, ErrorType.AllocationConflict)) return undefined;
    throw e;
  }
}
