/**
 * Operator decisions on a cut (approve, rework): the bounds of what an operator may send. Pure, so the workflow's
 * update validator and the CLI apply the very same rule.
 */
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
