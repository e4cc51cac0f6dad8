import { type ErrorType, NON_RETRYABLE_ERROR_TYPES } from '../shared';

/**
 * The one error class of the domain and the stores. It carries an `ErrorType` so that activities can turn it into
 * an `ApplicationFailure` and the CLI into an exit code, without either parsing messages.
 */
export class PipelineError extends Error {
  override readonly name = 'PipelineError';
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get retryable(): boolean {
    return !NON_RETRYABLE_ERROR_TYPES.includes(this.type);
  }
}

export function isPipelineError(e: unknown, type?: ErrorType): e is PipelineError {
  return e instanceof PipelineError && (type === undefined || e.type === type);
}
