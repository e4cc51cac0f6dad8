import { Context } from '@temporalio/activity';
import { parseAllocationKey } from '../domain/allocation-key';
import type { AllocatedBy } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { parseWeekId } from '../domain/week-id';
import { failpoint } from '../failpoints';
import type { EpisodeStore } from '../store/episode-store';
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

export function createAllocationActivities(deps: { store: EpisodeStore }) {
  return {
    async allocateEpisode(input: AllocateEpisodeInput): Promise<AllocateEpisodeOutput> {
      const { workflowExecution, namespace } = Context.current().info;
      return withHeartbeat(() =>
        withFailureMapping(async () => {
          let result;
          try {
            result = await allocateEpisodeOn(deps.store, input, {
              kind: 'workflow',
              workflow_id: workflowExecution?.workflowId ?? '(none)',
              run_id: workflowExecution?.runId ?? '(none)',
              namespace,
            });
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
