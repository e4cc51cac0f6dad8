/**
 * Sending an operator's decision (`approve` / `requestRework` updates) with its deterministic update ID: the one code
 * path of the CLI and the review desk, so both get the same answers (a retry gets the first answer back; a refusal
 * carries the workflow validator's reason).
 */
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { DecisionKind } from '../domain/decision';
import type { EpisodeId } from '../domain/episode-id';
import { PipelineError, ErrorType } from '../domain/errors';
import { decisionUpdateId, deskDecisionUpdateId, productionWorkflowId } from '../domain/names';
import {
  approveUpdate,
  requestReworkUpdate,
  statusQuery,
  type AcceptedDecision,
  type ProductionStatus,
} from '../workflows/messages';

export type Decision = { kind: 'approve'; by: string } | { kind: 'rework'; by: string; notes: string };

/** Who sends it: the round the operator pinned (if any) and which front door sends it. */
export interface DecisionDoor {
  pinned: number | undefined;
  door: 'cli' | 'desk';
}

/**
 * One decision as an update with an ID derived from episode, round, kind, approver and door: a retried call gets the
 * first answer back, a refused one exits with the workflow's reason, and the workflow records the door as the
 * decision's channel. The round is `pinned` when the operator named it (the workflow refuses a decision for any other
 * round); otherwise the one the production waits in, or, if it has already moved on after this approver's own
 * decision (a retry), that decision's round. Only the pinned form is safe for a rework retried after its new round
 * has opened: unpinned, that retry is a decision for the new round.
 */
export async function sendDecision(
  client: Client,
  id: EpisodeId,
  decision: Decision,
  { pinned, door }: DecisionDoor,
): Promise<AcceptedDecision> {
  const { kind, by } = decision;
  const handle = client.workflow.getHandle(productionWorkflowId(id));
  try {
    const round = pinned ?? decisionRound(await handle.query(statusQuery), kind, by);
    const updateId = (door === 'desk' ? deskDecisionUpdateId : decisionUpdateId)(id, round, kind, by);
    return await (decision.kind === 'approve'
      ? handle.executeUpdate(approveUpdate, { args: [{ by, round }], updateId })
      : handle.executeUpdate(requestReworkUpdate, { args: [{ notes: decision.notes, by, round }], updateId }));
  } catch (e) {
    const { WorkflowNotFoundError, WorkflowUpdateFailedError } = await import('@temporalio/client');
    if (e instanceof WorkflowNotFoundError) {
      throw new PipelineError(ErrorType.InvalidState, `no running production for ${id} (${productionWorkflowId(id)})`);
    }
    if (e instanceof WorkflowUpdateFailedError && e.cause instanceof ApplicationFailure) {
      const type = e.cause.type === ErrorType.InvalidInput ? ErrorType.InvalidInput : ErrorType.InvalidState;
      throw new PipelineError(type, `refused by ${productionWorkflowId(id)}: ${e.cause.message}`);
    }
    throw e;
  }
}

function decisionRound(status: ProductionStatus, kind: DecisionKind, by: string): number {
  const last = status.decisions?.at(-1);
  const waiting = status.phase === 'awaiting_approval' && last?.round !== status.reworkRound;
  return !waiting && last?.kind === kind && last.by === by ? last.round : status.reworkRound;
}
