/**
 * The faults of the fal simulator (src/vendor-sim/README.md), the native simulator's mapped to fal:
 * each names the next `count` requests it picks; counts are consumed as faults fire.
 */
import { z } from 'zod';
import { ErrorType, PipelineError } from '../domain/errors';

const count = z.number().int().min(0);

export const falFaultsSchema = z.strictObject({
  /** Answer 503 before queueing anything (the client cannot tell: a gateway 5xx may come after queueing). */
  fail5xx: z.strictObject({ count }).optional(),
  /** Queue the request (it runs and is billed), then destroy the connection without an answer. */
  acceptThenDrop: z.strictObject({ count }).optional(),
  /** Queue the request (it runs and is billed), then answer 504 `request_timeout` from the gateway. */
  gateway5xxAfterQueue: z.strictObject({ count }).optional(),
  /** Queue, run and bill the request, then forget it: status 404, not listed, while the set keeps `loseJobs`. */
  loseJobs: z.strictObject({ count }).optional(),
  /** The first `attempts` runner attempts fail with 503: fal retries (new gateway_request_id), bills the success once. */
  runnerRetries: z.strictObject({ count, attempts: z.number().int().min(1).max(20) }).optional(),
  /** The request ends in an error: 422 (billed one unit: GPU time spent) or 500 (never charged). */
  failJobs: z.strictObject({ count, status: z.union([z.literal(422), z.literal(500)]) }).optional(),
  /** The webhook is delivered twice (both signed, same request id). */
  webhookTwice: z.strictObject({ count }).optional(),
  /** The webhook is delivered `ms` after the end. */
  webhookLate: z.strictObject({ count, ms: z.number().int().min(0).max(600_000) }).optional(),
  /** No webhook is ever delivered. */
  webhookNever: z.strictObject({ count }).optional(),
  /** The output file is deleted at once (before anyone fetches it): 404 while the set keeps `expireFiles`. */
  expireFiles: z.strictObject({ count }).optional(),
  /** Billed `units` output units instead of the usual amount: the metered cost differs from the estimate. */
  meteredUnits: z.strictObject({ count, units: z.number().int().min(0).max(100_000) }).optional(),
});
export type FalFaults = z.infer<typeof falFaultsSchema>;

export function parseFalFaults(raw: unknown): FalFaults {
  const parsed = falFaultsSchema.safeParse(raw);
  if (!parsed.success) throw new PipelineError(ErrorType.InvalidInput, 'invalid fal simulator fault set');
  return structuredClone(parsed.data);
}
