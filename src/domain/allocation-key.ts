import { PipelineError, ErrorType } from './errors';

/** A stable name for one logical scheduled run: the Temporal workflow ID of that run. */
export type AllocationKey = string & { readonly __brand: 'AllocationKey' };

export const MAX_ALLOCATION_KEY_LENGTH = 256;

// Control characters, line/paragraph separators and lone surrogates make keys that print or log ambiguously.
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

export function parseAllocationKey(raw: unknown): AllocationKey {
  if (typeof raw !== 'string') {
    throw new PipelineError(ErrorType.InvalidAllocationRequest, `allocation key must be a string, got ${typeof raw}`);
  }
  if (raw.length === 0 || raw.trim().length === 0) {
    throw new PipelineError(ErrorType.InvalidAllocationRequest, 'allocation key must not be empty');
  }
  if (raw.length > MAX_ALLOCATION_KEY_LENGTH) {
    throw new PipelineError(
      ErrorType.InvalidAllocationRequest,
      `allocation key is ${raw.length} characters; at most ${MAX_ALLOCATION_KEY_LENGTH} are allowed`,
    );
  }
  if (FORBIDDEN.test(raw) || !raw.isWellFormed()) {
    throw new PipelineError(
      ErrorType.InvalidAllocationRequest,
      'allocation key contains control characters or invalid Unicode',
    );
  }
  return raw as AllocationKey;
}
