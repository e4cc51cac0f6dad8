/** Signals, updates and queries, defined once; workflows, the CLI and tests import them from here. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DecisionChannel, DecisionKind } from '../domain/decision';
import type { PaidStep } from '../domain/paid-step';

export interface ApproveInput {
  by: string;
  /** The approval round the operator looked at; a decision for another round is refused. Absent: the current one. */
  round?: number;
}
export interface ReworkInput {
  notes: string;
  by: string;
  round?: number;
}

/** What an accepted `approve` / `requestRework` update returns. */
export interface AcceptedDecision {
  round: number;
  kind: DecisionKind;
  by: string;
  /** Through which door it came, and when (workflow time): runs with the decision-channels patch. */
  channel?: DecisionChannel;
  at?: string;
}

/** A decision signal that failed the updates' checks (empty name, bad notes): logged and kept here, it changes nothing. */
export interface DroppedDecision {
  kind: DecisionKind;
  /** The name as sent when it is a string (cut to MAX_APPROVER characters), else null. */
  by: string | null;
  at: string;
  reason: string;
}

/** A decision signal that no open round read: logged and kept here, it changes nothing. */
export interface LateDecision {
  kind: DecisionKind;
  by: string;
  /** Workflow time when it arrived. */
  at: string;
  reason: string;
}

export type ProductionPhase =
  'producing' | 'awaiting_approval' | 'reworking' | 'assembling' | 'completing' | 'completed' | 'approval_expired';

export interface ProductionStatus {
  episodeId: string;
  phase: ProductionPhase;
  reworkRound: number;
  approvedBy: string | null;
  /** Step workflows started so far, with their latest known state. */
  steps: { workflowId: string; step: PaidStep; round: number; state: StepPhase }[];
  /** Since when the current round waits for a decision (workflow time); null when none is awaited. */
  awaitingSince?: string | null;
  /** Every decision taken, oldest first (by update or signal). */
  decisions?: AcceptedDecision[];
  lateDecisions?: LateDecision[];
  /** The latest invalid decision signals (at most MAX_DROPPED_KEPT; the log has every one). */
  droppedDecisions?: DroppedDecision[];
}

export const MAX_DROPPED_KEPT = 20;

export type StepPhase = 'running' | 'needs_reconciliation' | 'done';

export interface StepStatus {
  episodeId: string;
  step: PaidStep;
  round: number;
  phase: 'submitting' | 'needs_reconciliation' | 'waiting_for_vendor' | 'done';
}

export const approveSignal = defineSignal<[ApproveInput]>('approve');
export const requestReworkSignal = defineSignal<[ReworkInput]>('requestRework');
/** Request/response versions of the two decisions: the caller learns at once whether its decision was taken. */
export const approveUpdate = defineUpdate<AcceptedDecision, [ApproveInput]>('approve');
export const requestReworkUpdate = defineUpdate<AcceptedDecision, [ReworkInput]>('requestRework');
/** Sent by `episodes reconcile` after it settled a step's unknown submission outcome in the store. */
export const reconciledSignal = defineSignal<[]>('reconciled');
export const statusQuery = defineQuery<ProductionStatus>('status');
export const stepStatusQuery = defineQuery<StepStatus>('stepStatus');

/** Shown by the Temporal UI beside each handler. */
export const descriptions = {
  approve:
    'Approve the cut of the current round: {"by":"NAME","round":N}. As an update it answers with the accepted ' +
    'decision or the reason it was refused; a signal is checked the same way, and one that fails the checks or ' +
    'arrives outside an open round is only logged and listed in the status query.',
  requestRework: 'Ask for one paid rework round: {"notes":"...","by":"NAME","round":N}. Same rules as approve.',
  reconciled: 'Sent by `episodes reconcile` once the unknown outcome of this step is settled in the store.',
  status: 'Production phase, approval round, steps, decisions (with channel), and decision signals late or dropped.',
  stepStatus: 'Phase of this paid step: submitting, needs_reconciliation, waiting_for_vendor or done.',
} as const;
