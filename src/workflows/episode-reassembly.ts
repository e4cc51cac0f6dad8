import { ParentClosePolicy, executeChild, patched, proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CompletedStep } from '../activities/paid-steps';
import { lifecycleActivityOptions } from './activity-options';
import { paidStepWorkflow } from './paid-step';
import { EPISODE_RUNS_TAGGED_PATCH, paidStepWorkflowId, stepKey } from '../domain/names';
import { episodeRunTags } from './episode-tags';

const { recordReassembly } = proxyActivities<Activities>(lifecycleActivityOptions);

export interface EpisodeReassemblyInput {
  episodeId: string;
  /** The new assembly round (1, 2, ...): part of the workflow ID, so one request cannot run twice. */
  round: number;
  /** Vendor jobs to assemble (the approved cut and the cover). */
  videoJob: string;
  coverJob: string;
}

/** A new final assembly of a completed episode: one more paid assembly round, then the final video is replaced. */
export async function episodeReassemblyWorkflow(input: EpisodeReassemblyInput): Promise<CompletedStep> {
  const { episodeId, round } = input;
  const tagged = patched(EPISODE_RUNS_TAGGED_PATCH);
  const result = await executeChild(paidStepWorkflow, {
    ...(tagged ? episodeRunTags(episodeId, `paid step ${stepKey('assembly', round)} (reassembly)`) : {}),
    workflowId: paidStepWorkflowId(episodeId, 'assembly', round),
    args: [{ episodeId, step: 'assembly', round, spec: { video_job: input.videoJob, cover_job: input.coverJob } }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
  await recordReassembly({ episodeId, assemblyStep: stepKey('assembly', round) });
  return result;
}

// One paid assembly and its record: as short as the paid step it waits for, so it finishes beside it (docs/deploy.md).
setWorkflowOptions({ versioningBehavior: 'PINNED' }, episodeReassemblyWorkflow);
