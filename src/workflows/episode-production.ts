import { ParentClosePolicy, executeChild, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../activities';
import type { CompletedStep } from '../activities/paid-steps';
import type { PaidStep } from '../domain/episode-state';
import { lifecycleActivityOptions } from './activity-options';
import {
  approveSignal,
  requestReworkSignal,
  statusQuery,
  type ApproveInput,
  type ProductionStatus,
  type ReworkInput,
} from './messages';
import { paidStepWorkflow } from './paid-step';
import { paidStepWorkflowId, stepKey } from '../domain/names';

const { recordProgress, completeEpisode } = proxyActivities<Activities>(lifecycleActivityOptions);

export interface EpisodeProductionInput {
  episodeId: string;
  /** Give up waiting for approval after this long (ms-style duration, e.g. '7 days'); no deadline if absent. */
  approvalTimeout?: string;
}

export type EpisodeProductionResult =
  | {
      outcome: 'completed';
      episodeId: string;
      approvedBy: string;
      reworkRounds: number;
      remoteJobs: string[];
      totalCostCents: number;
      video: { sha256: string; bytes: number };
      cover: { sha256: string; bytes: number };
    }
  | { outcome: 'approval_expired'; episodeId: string };

type Decision = { kind: 'approve'; input: ApproveInput } | { kind: 'rework'; input: ReworkInput };

/**
 * Production of one existing episode (`episode-<id>`): video and cover, operator approval (with rework rounds),
 * final assembly, completion and history. Every paid step is its own child workflow with a deterministic ID.
 */
export async function episodeProductionWorkflow(input: EpisodeProductionInput): Promise<EpisodeProductionResult> {
  const { episodeId } = input;
  const status: ProductionStatus = { episodeId, phase: 'producing', reworkRound: 0, approvedBy: null, steps: [] };
  let decision: Decision | undefined;
  setHandler(statusQuery, () => status);
  // Only the first decision per approval round counts; later signals wait for the next round.
  // Decisions count from the moment a cut is ready, before the store and the status query say so: an operator who
  // reacts to either must never be ignored. Only the first decision of a round counts.
  let approvalOpen = false;
  setHandler(approveSignal, (a) => {
    if (approvalOpen) decision ??= { kind: 'approve', input: a };
  });
  setHandler(requestReworkSignal, (r) => {
    if (approvalOpen) decision ??= { kind: 'rework', input: r };
  });

  const step = async (kind: PaidStep, round: number, spec: Record<string, unknown>): Promise<CompletedStep> => {
    const workflowId = paidStepWorkflowId(episodeId, kind, round);
    const entry = { workflowId, step: kind, round, state: 'running' as const };
    status.steps.push(entry);
    const result = await executeChild(paidStepWorkflow, {
      workflowId,
      args: [{ episodeId, step: kind, round, spec }],
      // A reset or restart of this workflow must not kill a step that may be mid-submission.
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
    status.steps = status.steps.map((s) => (s.workflowId === workflowId ? { ...s, state: 'done' } : s));
    return result;
  };

  await recordProgress({ episodeId, status: 'in_production' });
  const [video, cover] = await Promise.all([
    step('video', 0, { title: `Episode ${episodeId}`, format: 'mp4' }),
    step('cover', 0, { title: `Episode ${episodeId}`, format: 'png' }),
  ]);
  let cut = video;
  const jobs = [video.remoteJobId, cover.remoteJobId];

  for (;;) {
    decision = undefined;
    approvalOpen = true;
    await recordProgress({
      episodeId,
      status: 'awaiting_approval',
      approval: { status: 'pending', by: null, at: null, notes: null },
    });
    status.phase = 'awaiting_approval';
    const made = await awaitDecision(() => decision, input.approvalTimeout);
    approvalOpen = false;
    if (!made) {
      status.phase = 'approval_expired';
      await recordProgress({
        episodeId,
        status: 'failed',
        approval: {
          status: 'expired',
          by: null,
          at: now(),
          notes: `no decision within ${String(input.approvalTimeout)}`,
        },
      });
      return { outcome: 'approval_expired', episodeId };
    }
    if (made.kind === 'approve') {
      status.approvedBy = made.input.by;
      await recordProgress({
        episodeId,
        status: 'awaiting_approval',
        approval: { status: 'approved', by: made.input.by, at: now(), notes: null },
      });
      break;
    }
    status.phase = 'reworking';
    status.reworkRound += 1;
    await recordProgress({
      episodeId,
      status: 'in_production',
      approval: { status: 'rework_requested', by: made.input.by, at: now(), notes: made.input.notes },
    });
    cut = await step('rework', status.reworkRound, { notes: made.input.notes, base_job: cut.remoteJobId });
    jobs.push(cut.remoteJobId);
  }

  status.phase = 'assembling';
  const assembly = await step('assembly', 0, { video_job: cut.remoteJobId, cover_job: cover.remoteJobId });
  jobs.push(assembly.remoteJobId);
  status.phase = 'completing';
  const entry = await completeEpisode({
    episodeId,
    completedAt: now(),
    finalVideo: stepKey('assembly', 0),
    finalCover: 'cover-r0',
  });
  status.phase = 'completed';
  return {
    outcome: 'completed',
    episodeId,
    approvedBy: status.approvedBy ?? '',
    reworkRounds: status.reworkRound,
    remoteJobs: jobs,
    totalCostCents: entry.total_cost_cents,
    video: { sha256: entry.media.video!.sha256, bytes: entry.media.video!.bytes },
    cover: { sha256: entry.media.cover!.sha256, bytes: entry.media.cover!.bytes },
  };
}

/** Workflow time: deterministic on replay. */
function now(): string {
  return new Date().toISOString();
}

async function awaitDecision(
  get: () => Decision | undefined,
  timeout: string | undefined,
): Promise<Decision | undefined> {
  if (timeout === undefined) await condition(() => get() !== undefined);
  else await condition(() => get() !== undefined, timeout as Duration);
  return get();
}
