import {
  ApplicationFailure,
  condition,
  currentUpdateInfo,
  log,
  patched,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import { MAX_APPROVER, decisionChannel, decisionInputProblem, type DecisionKind } from '../domain/decision';
import type { ReviewNotice } from '../domain/review-notice';
import { DECISION_CHANNELS_PATCH } from '../domain/names';
import { ErrorType } from '../domain/errors';
import {
  approveSignal,
  approveUpdate,
  descriptions,
  MAX_DROPPED_KEPT,
  requestReworkSignal,
  requestReworkUpdate,
  type AcceptedDecision,
  type ApproveInput,
  type ProductionStatus,
  type ReworkInput,
} from './messages';
import { workflowNow } from './workflow-time';

export type Decision = { kind: 'approve'; input: ApproveInput } | { kind: 'rework'; input: ReworkInput };

/**
 * The operator's approval gate of one production: the `approve` / `requestRework` updates and signals, which round
 * is open, and the first decision taken in it. It writes decisions into the production's `status` (the query's).
 */
export interface ApprovalGate {
  /** Opens the next round: decisions count from here, before the store or the status query say so. */
  open(): void;
  /** Waits for the open round's decision (undefined after `timeout`), then closes the round. */
  await(timeout: string | undefined): Promise<Decision | undefined>;
}

/** Registers the decision handlers; call once, at the start of the workflow. */
export function installApprovalGate(status: ProductionStatus): ApprovalGate {
  let decision: Decision | undefined;
  let open = false;

  /** Why a decision cannot be taken now, or undefined when the current round waits for exactly this. */
  const closedReason = (round: number | undefined): string | undefined => {
    if (!open) return `${status.episodeId} is not waiting for a decision (phase ${status.phase})`;
    if (decision) return `round ${status.reworkRound} already has a decision: ${decision.kind} by ${decision.input.by}`;
    if (round !== undefined && round !== status.reworkRound) {
      return `round ${round} is not open; the current round is ${status.reworkRound}`;
    }
    return undefined;
  };
  const validate = (kind: DecisionKind, input: { by: unknown; notes?: unknown; round?: number }): void => {
    refuse(ErrorType.InvalidInput, decisionInputProblem(kind, input));
    refuse(ErrorType.InvalidState, closedReason(input.round));
  };
  /** `updateId` undefined: a signal. With the decision-channels patch the decision records its channel and time. */
  const accept = (d: Decision, updateId: string | undefined): AcceptedDecision => {
    const facts = { round: status.reworkRound, kind: d.kind, by: d.input.by };
    const accepted: AcceptedDecision = patched(DECISION_CHANNELS_PATCH)
      ? { ...facts, channel: decisionChannel({ ...facts, episodeId: status.episodeId }, updateId), at: workflowNow() }
      : facts;
    decision = d;
    status.decisions = [...(status.decisions ?? []), accepted];
    return accepted;
  };
  /**
   * A signal has no answer, so what an update's validator would refuse is dropped here (with the patch) and what no
   * open round reads is late: both logged with the sender and kept in the status query, neither changes anything.
   */
  const fromSignal = (d: Decision): void => {
    const { episodeId } = status;
    const invalid = patched(DECISION_CHANNELS_PATCH) ? decisionInputProblem(d.kind, d.input) : undefined;
    if (invalid !== undefined) {
      const by = typeof d.input.by === 'string' ? d.input.by.slice(0, MAX_APPROVER) : null;
      log.warn('decision signal refused: dropped', { episodeId, kind: d.kind, by, reason: invalid });
      const dropped = { kind: d.kind, by, at: workflowNow(), reason: invalid };
      status.droppedDecisions = [...(status.droppedDecisions ?? []), dropped].slice(-MAX_DROPPED_KEPT);
      return;
    }
    const reason = closedReason(d.input.round);
    if (reason === undefined) {
      accept(d, undefined);
      return;
    }
    log.warn('decision signal outside an open round: ignored', { episodeId, kind: d.kind, by: d.input.by, reason });
    const late = { kind: d.kind, by: d.input.by, at: workflowNow(), reason };
    status.lateDecisions = [...(status.lateDecisions ?? []), late];
  };

  setHandler(approveSignal, (a) => fromSignal({ kind: 'approve', input: a }), { description: descriptions.approve });
  setHandler(requestReworkSignal, (r) => fromSignal({ kind: 'rework', input: r }), {
    description: descriptions.requestRework,
  });
  setHandler(approveUpdate, (a) => accept({ kind: 'approve', input: a }, currentUpdateInfo()?.id), {
    validator: (a: ApproveInput) => validate('approve', a),
    description: descriptions.approve,
  });
  setHandler(requestReworkUpdate, (r) => accept({ kind: 'rework', input: r }, currentUpdateInfo()?.id), {
    validator: (r: ReworkInput) => validate('rework', r),
    description: descriptions.requestRework,
  });

  return {
    open() {
      decision = undefined;
      open = true;
    },
    async await(timeout) {
      if (timeout === undefined) await condition(() => decision !== undefined);
      else await condition(() => decision !== undefined, timeout as Duration);
      open = false;
      return decision;
    },
  };
}

function refuse(type: ErrorType, message: string | undefined): void {
  if (message !== undefined) throw ApplicationFailure.create({ type, message, nonRetryable: true });
}

/** The round a production waits in for a decision: since when, and until which timeout (if any). */
export interface WaitingRound {
  episodeId: string;
  round: number;
  since: string;
  timeout: string | undefined;
}

/**
 * What the UI shows while production waits: what for, since when, and how to answer; with the round's review notice
 * (runs with the review-notice patch, once it is prepared), also the cost so far and the review desk's link.
 */
export function showWaiting(waiting: WaitingRound, notice?: ReviewNotice): void {
  const { episodeId, round, since, timeout } = waiting;
  setCurrentDetails(
    [
      `Waiting for approval of round ${round} since ${since}${timeout ? ` (gives up after ${timeout})` : ''}.`,
      ...(notice ? noticeLines(notice) : []),
      `Approve: \`npx episodes approve ${episodeId} --by NAME\` (update or signal \`approve\`, {"by":"NAME","round":${round}}).`,
      `Rework: \`npx episodes rework ${episodeId} --notes "..." --by NAME\` (update or signal \`requestRework\`, {"notes":"...","by":"NAME","round":${round}}).`,
      // An ID of the UI's own: a retry under it gets the first answer back, and the decision is recorded as an update.
      `In the UI: Send an Update, Update ID e.g. \`ui-${episodeId}-r${round}-approve-NAME\` (the same ID again gets the first answer).`,
    ].join('\n'),
  );
}

/** Markdown: the cost against the budget, and the desk's episode page (parentheses and spaces escaped for the link). */
function noticeLines(notice: ReviewNotice): string[] {
  const cost = `Cost so far: **${notice.cost_so_far}** of a ${notice.budget} budget.`;
  if (notice.link === null) return [cost];
  const href = notice.link.replace(/[()\s]/g, (c) => encodeURIComponent(c));
  return [cost, `Review: [${notice.episode_id} on the review desk](${href})`];
}
