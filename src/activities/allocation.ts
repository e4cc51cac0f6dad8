import { Context } from '@temporalio/activity';
import { parseAllocationKey } from '../domain/allocation-key';
import type { AllocatedBy } from '../domain/episode-state';
import { PipelineError, ErrorType, isPipelineError } from '../domain/errors';
import { parseEpisodeId } from '../domain/episode-id';
import { parseWeekId } from '../domain/week-id';
import { failpoint } from '../failpoints';
import type { EpisodeStore } from '../store/episode-store';
import type { AllocationRecords } from './allocation-records';
import { withFailureMapping } from './failures';
import { withHeartbeat } from './heartbeat';
import { countAllocation } from './metrics';

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
): Promise<AllocateEpisodeOutput> {
  let request;
  try {
    request = { allocationKey: parseAllocationKey(input.allocationKey), weekId: parseWeekId(input.weekId) };
  } catch (e) {
    if (e instanceof PipelineError) throw new PipelineError(ErrorType.InvalidAllocationRequest, e.message);
    throw e;
  }
  const result = await store.allocate({ ...request, allocatedBy });
  return { episodeId: result.episodeId, weekId: result.weekId, sequence: result.sequence, created: result.created };
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
              (await reassertEarlier(deps, input, by.run_id)) ?? (await allocateEpisodeOn(deps.store, input, by));
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
