import {
  ParentClosePolicy,
  executeChild,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CompletedStep } from '../activities/paid-steps';
import type { DecisionRecord } from '../domain/episode-state';
import type { PaidStep } from '../domain/paid-step';
import { lifecycleActivityOptions } from './activity-options';
import { descriptions, statusQuery, type ProductionStatus } from './messages';
import { installApprovalGate, showWaiting, type ApprovalGate } from './approval-gate';
import { episodeRunTags } from './episode-tags';
import { paidStepWorkflow } from './paid-step';
import { workflowNow as now } from './workflow-time';
import { EPISODE_RUNS_TAGGED_PATCH, REVIEW_NOTICE_PATCH, paidStepWorkflowId, stepKey } from '../domain/names';
import { NO_ROUND_NOTICE, announceRound } from './review-notice';

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

/** Runs one paid step as its own child workflow and keeps the status query's step list current. */
type StepRunner = (kind: PaidStep, round: number, spec: Record<string, unknown>) => Promise<CompletedStep>;

/**
 * Production of one existing episode (`episode-<id>`): video and cover, operator approval (with rework rounds),
 * final assembly, completion and history. Every paid step is its own child workflow with a deterministic ID.
 */
export async function episodeProductionWorkflow(input: EpisodeProductionInput): Promise<EpisodeProductionResult> {
  const { episodeId } = input;
  // Runs recorded before the patch start their children untagged; every new run tags them (docs/architecture.md).
  const tagged = patched(EPISODE_RUNS_TAGGED_PATCH);
  // Runs recorded before this patch wait without a review notice; new ones announce every round (docs/review-desk.md).
  const notices = patched(REVIEW_NOTICE_PATCH);
  const status: ProductionStatus = {
    episodeId,
    phase: 'producing',
    reworkRound: 0,
    approvedBy: null,
    steps: [],
    awaitingSince: null,
    decisions: [],
    lateDecisions: [],
  };
  setHandler(statusQuery, () => status, { description: descriptions.status });
  const gate = installApprovalGate(status);
  const step = stepRunner(status, tagged);

  await recordProgress({ episodeId, status: 'in_production' });
  const [video, cover] = await Promise.all([
    step('video', 0, { title: `Episode ${episodeId}`, format: 'mp4' }),
    step('cover', 0, { title: `Episode ${episodeId}`, format: 'png' }),
  ]);
  const jobs = [video.remoteJobId, cover.remoteJobId];
  const cut = await approveOrRework({ input, status, step, gate, notices }, video, jobs);
  if (cut === undefined) return { outcome: 'approval_expired', episodeId };
  return assembleAndComplete(status, step, { cut, cover }, jobs);
}

function stepRunner(status: ProductionStatus, tagged: boolean): StepRunner {
  const { episodeId } = status;
  return async (kind, round, spec) => {
    const workflowId = paidStepWorkflowId(episodeId, kind, round);
    const entry = { workflowId, step: kind, round, state: 'running' as const };
    status.steps.push(entry);
    const result = await executeChild(paidStepWorkflow, {
      workflowId,
      args: [{ episodeId, step: kind, round, spec }],
      ...(tagged ? episodeRunTags(episodeId, `paid step ${stepKey(kind, round)}`) : {}),
      // A reset or restart of this workflow must not kill a step that may be mid-submission.
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
    status.steps = status.steps.map((s) => (s.workflowId === workflowId ? { ...s, state: 'done' } : s));
    return result;
  };
}

/** What the approval rounds of one production share. */
interface Production {
  input: EpisodeProductionInput;
  status: ProductionStatus;
  step: StepRunner;
  gate: ApprovalGate;
  /** Whether this run sends review notices (the review-notice patch). */
  notices: boolean;
}

/**
 * Approval rounds until the operator approves a cut (returned) or the approval timeout passes (undefined, recorded
 * as failed). Each rework decision pays for one rework step on the latest cut and opens the next round.
 */
async function approveOrRework(
  { input, status, step, gate, notices }: Production,
  firstCut: CompletedStep,
  jobs: string[],
): Promise<CompletedStep | undefined> {
  const { episodeId } = input;
  let cut = firstCut;
  for (;;) {
    gate.open();
    await recordProgress({
      episodeId,
      status: 'awaiting_approval',
      approval: { status: 'pending', by: null, at: null, notes: null, ...trail(status) },
    });
    status.phase = 'awaiting_approval';
    status.awaitingSince = now();
    const { reworkRound: round, awaitingSince: since } = status;
    const waiting = { episodeId, round, since, timeout: input.approvalTimeout };
    showWaiting(waiting);
    const notice = notices ? announceRound(episodeId, round, since, (n) => showWaiting(waiting, n)) : NO_ROUND_NOTICE;
    const made = await gate.await(input.approvalTimeout);
    notice.close();
    status.awaitingSince = null;
    setCurrentDetails('');
    if (!made) {
      status.phase = 'approval_expired';
      const notes = `no decision within ${String(input.approvalTimeout)}`;
      await recordProgress({
        episodeId,
        status: 'failed',
        approval: { status: 'expired', by: null, at: now(), notes, ...trail(status) },
      });
      return undefined;
    }
    if (made.kind === 'approve') {
      status.approvedBy = made.input.by;
      await recordProgress({
        episodeId,
        status: 'awaiting_approval',
        approval: { status: 'approved', by: made.input.by, at: now(), notes: null, ...trail(status) },
      });
      return cut;
    }
    status.phase = 'reworking';
    status.reworkRound += 1;
    await recordProgress({
      episodeId,
      status: 'in_production',
      approval: {
        status: 'rework_requested',
        by: made.input.by,
        at: now(),
        notes: made.input.notes,
        ...trail(status),
      },
    });
    cut = await step('rework', status.reworkRound, { notes: made.input.notes, base_job: cut.remoteJobId });
    jobs.push(cut.remoteJobId);
  }
}

/** The decisions with a channel (decision-channels patch), for the store's approval record: none, no field. */
function trail(status: ProductionStatus): { decisions?: DecisionRecord[] } {
  const decisions = (status.decisions ?? []).flatMap(({ round, kind, by, channel, at }) =>
    channel && at ? [{ round, kind, by, channel, at }] : [],
  );
  return decisions.length > 0 ? { decisions } : {};
}

/** Final assembly of the approved cut with the cover, then completion into the store and history. */
async function assembleAndComplete(
  status: ProductionStatus,
  step: StepRunner,
  media: { cut: CompletedStep; cover: CompletedStep },
  jobs: string[],
): Promise<EpisodeProductionResult> {
  const { episodeId } = status;
  status.phase = 'assembling';
  const assembly = await step('assembly', 0, { video_job: media.cut.remoteJobId, cover_job: media.cover.remoteJobId });
  jobs.push(assembly.remoteJobId);
  status.phase = 'completing';
  const entry = await completeEpisode({
    episodeId,
    completedAt: now(),
    finalVideo: stepKey('assembly', 0),
    finalCover: stepKey('cover', 0),
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

// Parks for days across deploys: moves to the current build at its next task, kept safe by patched() and the replay
// of test/histories/ (docs/deploy.md).
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, episodeProductionWorkflow);
