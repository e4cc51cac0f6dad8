import { ApplicationFailure } from '@temporalio/common';
import { PipelineError } from '../domain/errors';

/** Turns domain errors into Temporal failures with a stable `type`; anything else stays retryable as thrown. */
export function toApplicationFailure(e: unknown): unknown {
  if (e instanceof PipelineError) {
    return ApplicationFailure.create({
      type: e.type,
      message: e.message,
      nonRetryable: !e.retryable,
      details: [e.details],
    });
  }
  return e;
}

export async function withFailureMapping<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toApplicationFailure(e);
  }
}
