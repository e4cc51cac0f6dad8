/**
 * Operator decisions on a cut (approve, rework): the bounds of what an operator may send, and which door a decision
 * came through. Pure, so the workflow (update validators and signal handlers alike), the CLI and the desk apply the
 * very same rule.
 */
import { decisionUpdateId, deskDecisionUpdateId } from './names';

export const MAX_NOTES = 4000;
export const MAX_APPROVER = 200;

export type DecisionKind = 'approve' | 'rework';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/** Why an approver name is refused, or undefined when it is fine. */
export function approverProblem(by: unknown): string | undefined {
  if (typeof by !== 'string' || by.trim().length === 0) return 'the approver name must not be empty';
  if (by.length > MAX_APPROVER || CONTROL.test(by))
    return `the approver name must be 1-${MAX_APPROVER} printable characters`;
  return undefined;
}

/** Why rework notes are refused, or undefined when they are fine. */
export function notesProblem(notes: unknown): string | undefined {
  if (typeof notes !== 'string' || notes.trim().length === 0) return 'rework notes must not be empty';
  if (notes.length > MAX_NOTES || CONTROL.test(notes))
    return `rework notes must be 1-${MAX_NOTES} printable characters`;
  return undefined;
}

/** The checks of a decision's input, whatever it came through: the approver, and for a rework its notes. */
export function decisionInputProblem(kind: DecisionKind, input: { by: unknown; notes?: unknown }): string | undefined {
  return approverProblem(input.by) ?? (kind === 'rework' ? notesProblem(input.notes) : undefined);
}

/**
 * How a decision reached the workflow: the review desk and the `episodes` CLI send updates under their own
 * deterministic IDs; any other update ID (the Temporal UI's, `temporal workflow update`, an SDK) is `update`; a signal
 * is `signal`. Like the approver's name, this is what the sender claims: anyone with write access to the namespace
 * can send any ID (docs/review-desk.md, "The desk as the only door").
 */
export const DECISION_CHANNELS = ['desk', 'cli', 'update', 'signal'] as const;
export type DecisionChannel = (typeof DECISION_CHANNELS)[number];

export interface DecisionFacts {
  episodeId: string;
  round: number;
  kind: DecisionKind;
  by: string;
}

/** The channel of an accepted decision, from the facts the workflow sees: signal or update, and the update's ID. */
export function decisionChannel(d: DecisionFacts, updateId: string | undefined): DecisionChannel {
  if (updateId === undefined) return 'signal';
  if (updateId === deskDecisionUpdateId(d.episodeId, d.round, d.kind, d.by)) return 'desk';
  if (updateId === decisionUpdateId(d.episodeId, d.round, d.kind, d.by)) return 'cli';
  return 'update';
}

/** How people read a channel. */
export const CHANNEL_LABELS: Record<DecisionChannel, string> = {
  desk: 'the review desk',
  cli: 'the episodes CLI',
  update: 'a Temporal update (UI, temporal CLI or SDK)',
  signal: 'a Temporal signal',
};
