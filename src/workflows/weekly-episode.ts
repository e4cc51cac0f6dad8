import {
  ApplicationFailure,
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  patched,
  proxyActivities,
  setCurrentDetails,
  setWorkflowOptions,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Activities } from '../activities';
import type { AllocateEpisodeOutput } from '../activities/allocation';
import { PipelineError, ErrorType } from '../domain/errors';
import { isoWeekOfInstant } from '../domain/week-id';
import { allocationActivityOptions } from './activity-options';
import { episodeProductionWorkflow } from './episode-production';
import {
  EPISODE_RUNS_TAGGED_PATCH,
  productionWorkflowId,
  EpisodeIdSearchAttribute,
  ScheduledStartTimeSearchAttribute,
  WeekIdSearchAttribute,
} from '../domain/names';
import { episodeRunTags } from './episode-tags';

const { allocateEpisode } = proxyActivities<Activities>(allocationActivityOptions);

export interface WeeklyEpisodeInput {
  /** Passed to the episode's production (see EpisodeProductionInput). */
  approvalTimeout?: string;
  /** Target week when not started by a schedule (manual runs); ignored when a nominal scheduled time exists. */
  week?: string;
  /** IANA timezone whose calendar decides the ISO week of an instant. */
  timezone?: string;
}

export type WeeklyEpisodeResult = AllocateEpisodeOutput & {
  allocationKey: string;
  /** The episode's production workflow, and whether this run started it or found it already there. */
  production: { workflowId: string; startedByThisRun: boolean };
};

/**
 * One logical weekly run. Its workflow ID is the allocation key, so every retry, reset or re-run of this ID gets the
 * same episode back, while a new schedule slot (a new ID) gets the next sequence of its week.
 */
export async function weeklyEpisodeWorkflow(input: WeeklyEpisodeInput = {}): Promise<WeeklyEpisodeResult> {
  const info = workflowInfo();
  const tagged = patched(EPISODE_RUNS_TAGGED_PATCH);
  const allocationKey = info.workflowId;
  const weekId = targetWeek(input);
  const episode = await allocateEpisode({ allocationKey, weekId });
  upsertSearchAttributes([
    { key: EpisodeIdSearchAttribute, value: episode.episodeId },
    { key: WeekIdSearchAttribute, value: episode.weekId },
  ]);
  const production = await startProduction(episode.episodeId, input, tagged);
  if (tagged)
    setCurrentDetails(`Episode ${episode.episodeId} (week ${episode.weekId}); production ${production.workflowId}`);
  return { ...episode, allocationKey, production };
}

/**
 * Starts `episode-<id>` once. A retry, reset or re-run of this weekly run finds it running or finished and reports
 * it instead: Temporal refuses the duplicate ID, and a completed production is never started again. Only a failed
 * or terminated production may be started anew (its paid steps resume from the store, never pay twice).
 */
async function startProduction(
  episodeId: string,
  input: WeeklyEpisodeInput,
  tagged: boolean,
): Promise<WeeklyEpisodeResult['production']> {
  const workflowId = productionWorkflowId(episodeId);
  try {
    await startChild(episodeProductionWorkflow, {
      workflowId,
      args: [{ episodeId, approvalTimeout: input.approvalTimeout }],
      ...(tagged ? episodeRunTags(episodeId, 'production') : {}),
      // Production outlives this short run, and must survive its reset.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    });
    return { workflowId, startedByThisRun: true };
  } catch (e) {
    if (e instanceof WorkflowExecutionAlreadyStartedError) return { workflowId, startedByThisRun: false };
    throw e;
  }
}

/** The schedule's nominal time, else an explicit week, else the start of the run chain: never a retry's clock. */
function targetWeek(input: WeeklyEpisodeInput): string {
  const info = workflowInfo();
  const timezone = input.timezone ?? 'UTC';
  try {
    const nominal = info.typedSearchAttributes.get(ScheduledStartTimeSearchAttribute);
    if (nominal) return isoWeekOfInstant(nominal, timezone);
    if (input.week !== undefined) return input.week;
    return isoWeekOfInstant(info.startTime, timezone);
  } catch (e) {
    if (e instanceof PipelineError) {
      throw ApplicationFailure.create({
        type: ErrorType.InvalidAllocationRequest,
        message: e.message,
        nonRetryable: true,
      });
    }
    throw e;
  }
}

// Moves to the current build at its next task (the patch rule and the recorded histories keep that safe): docs/deploy.md.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, weeklyEpisodeWorkflow);
