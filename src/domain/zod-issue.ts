/**
 * The one-line form of a zod failure that every error message of the pipeline uses: where (the first issue's path,
 * dotted) and what. Only the first issue: one line is what the CLI promises, and the first is enough to fix the input.
 */
import type { z } from 'zod';

export interface FirstIssue {
  /** Dotted path of the first issue, or `root` when it is at the top (or there is no issue). */
  at: string;
  message: string;
}

export function firstIssue(error: z.ZodError | undefined, root = '(root)', fallback = 'schema mismatch'): FirstIssue {
  const issue = error?.issues[0];
  const at = issue?.path.length ? issue.path.map(String).join('.') : root;
  return { at, message: issue?.message ?? fallback };
}

/** `unexpected content at <path>: <message>`, for files and rows that do not match their schema. */
export function unexpectedContent(error: z.ZodError | undefined, fallback = 'schema mismatch'): string {
  const { at, message } = firstIssue(error, '(root)', fallback);
  return `unexpected content at ${at}: ${message}`;
}
