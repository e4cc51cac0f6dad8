/** Signals and queries, defined once; workflows, the CLI and tests import them from here. */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { PaidStep } from '../domain/episode-state';

export interface ApproveInput {
  by: string;
}
export interface ReworkInput {
  notes: string;
  by: string;
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
}

export type StepPhase = 'running' | 'needs_reconciliation' | 'done';

export interface StepStatus {
  episodeId: string;
  step: PaidStep;
  round: number;
  phase: 'submitting' | 'needs_reconciliation' | 'waiting_for_vendor' | 'done';
}

export const approveSignal = defineSignal<[ApproveInput]>('approve');
export const requestReworkSignal = defineSignal<[ReworkInput]>('requestRework');
/** Sent by `episodes reconcile` after it settled a step's unknown submission outcome in the store. */
export const reconciledSignal = defineSignal<[]>('reconciled');
export const statusQuery = defineQuery<ProductionStatus>('status');
export const stepStatusQuery = defineQuery<StepStatus>('stepStatus');
