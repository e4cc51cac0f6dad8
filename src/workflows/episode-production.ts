import {
  ApplicationFailure,
  ParentClosePolicy,
  condition,
  executeChild,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../activities';
import type { CompletedStep } from '../activities/paid-steps';
import type { PaidStep } from '../domain/episode-state';
import { lifecycleActivityOptions } from './activity-options';
import {
  approveSignal,
  approveUpdate,
  descriptions,
  requestReworkSignal,
  requestReworkUpdate,
  statusQuery,
  type AcceptedDecision,
  type ApproveInput,
  type ProductionStatus,
  type ReworkInput,
} from './messages';
import { episodeRunTags } from './episode-tags';
import { paidStepWorkflow } from './paid-step';
import { approverProblem, notesProblem, type DecisionKind } from '../domain/decision';
import { EPISODE_RUNS_TAGGED_PATCH, paidStepWorkflowId, stepKey } from '../domain/names';
import { ErrorType } from '../shared';

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
  // Runs recorded before the patch start their children untagged; every new run tags them (docs/architecture.md).
  const tagged = patched(EPISODE_RUNS_TAGGED_PATCH);
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
  let decision: Decision | undefined;
  setHandler(statusQuery, () => status, { description: descriptions.status });
  // Decisions count from the moment a cut is ready, before the store and the status query say so: an operator who
  // reacts to either must never be ignored. Only the first decision of a round counts.
  let approvalOpen = false;

  /** Why a decision cannot be taken now, or undefined when the current round waits for exactly this. */
  const closedReason = (round: number | undefined): string | undefined => {
    if (!approvalOpen) return `${episodeId} is not waiting for a decision (phase ${status.phase})`;
    if (decision) return `round ${status.reworkRound} already has a decision: ${decision.kind} by ${decision.input.by}`;
    if (round !== undefined && round !== status.reworkRound) {
      return `round ${round} is not open; the current round is ${status.reworkRound}`;
    }
    return undefined;
  };
  const refuse = (type: ErrorType, message: string | undefined): void => {
    if (message !== undefined) throw ApplicationFailure.create({ type, message, nonRetryable: true });
  };
  const validate = (kind: DecisionKind, input: { by: unknown; notes?: unknown; round?: number }): void => {
    refuse(ErrorType.InvalidInput, approverProblem(input.by));
    if (kind === 'rework') refuse(ErrorType.InvalidInput, notesProblem(input.notes));
    refuse(ErrorType.InvalidState, closedReason(input.round));
  };
  const accept = (d: Decision): AcceptedDecision => {
    decision = d;
    const accepted = { round: status.reworkRound, kind: d.kind, by: d.input.by };
    status.decisions = [...(status.decisions ?? []), accepted];
    return accepted;
  };
  /** A signal nobody reads is no longer lost silently: logged with its sender, kept in the status query. */
  const fromSignal = (d: Decision): void => {
    const reason = closedReason(d.input.round);
    if (reason === undefined) {
      accept(d);
      return;
    }
    log.warn('decision signal outside an open round: ignored', { episodeId, kind: d.kind, by: d.input.by, reason });
    status.lateDecisions = [...(status.lateDecisions ?? []), { kind: d.kind, by: d.input.by, at: now(), reason }];
  };

  setHandler(approveSignal, (a) => fromSignal({ kind: 'approve', input: a }), { description: descriptions.approve });
  setHandler(requestReworkSignal, (r) => fromSignal({ kind: 'rework', input: r }), {
    description: descriptions.requestRework,
  });
  setHandler(approveUpdate, (a) => accept({ kind: 'approve', input: a }), {
    validator: (a: ApproveInput) => validate('approve', a),
    description: descriptions.approve,
  });
  setHandler(requestReworkUpdate, (r) => accept({ kind: 'rework', input: r }), {
    validator: (r: ReworkInput) => validate('rework', r),
    description: descriptions.requestRework,
  });

  const step = async (kind: PaidStep, round: number, spec: Record<string, unknown>): Promise<CompletedStep> => {
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
    status.awaitingSince = now();
    setCurrentDetails(waitingDetails(episodeId, status.reworkRound, status.awaitingSince, input.approvalTimeout));
    const made = await awaitDecision(() => decision, input.approvalTimeout);
    approvalOpen = false;
    status.awaitingSince = null;
    setCurrentDetails('');
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

/** What the UI shows while production waits: what for, since when, and how to answer. */
function waitingDetails(episodeId: string, round: number, since: string, timeout: string | undefined): string {
  return [
    `Waiting for approval of round ${round} since ${since}${timeout ? ` (gives up after ${timeout})` : ''}.`,
    `Approve: \`npx episodes approve ${episodeId} --by NAME\` (update or signal \`approve\`, {"by":"NAME","round":${round}}).`,
    `Rework: \`npx episodes rework ${episodeId} --notes "..." --by NAME\` (update or signal \`requestRework\`, {"notes":"...","by":"NAME","round":${round}}).`,
  ].join('\n');
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
