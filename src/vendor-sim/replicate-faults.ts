/**
 * The faults of the Replicate simulator (src/vendor-sim/README.md), mapped from the native
 * simulator's (faults.ts): each names the failure a real Replicate account can show. Counts are consumed as they fire.
 */
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';

const count = z.strictObject({ count: z.number().int().min(0) });

export const replicateFaultsSchema = z.strictObject({
  /** Delay before each API request is worked on (a create is in flight meanwhile). */
  latencyMs: z.number().int().min(0).max(600_000).optional(),
  /**
   * The next `count` creates answer a gateway 5xx (problem body). `created: true`: after the prediction was created
   * (it runs and is billed; the client cannot know); false (default): before, nothing created.
   */
  fail5xx: z.strictObject({ count: z.number().int().min(0), created: z.boolean().optional() }).optional(),
  /** The next `count` creates answer 429 with the docs' throttle body: nothing created. */
  throttle: count.optional(),
  /** The next `count` creates are created (run, billed), then the connection is reset without an answer. */
  acceptThenDrop: count.optional(),
  /** The next `count` predictions end `failed` with a model error, after half their compute time (billed). */
  failPredictions: count.optional(),
  /**
   * The next `count` predictions are lost. `failed` (default; what Replicate shows for an interrupted run): they end
   * `failed` with "Prediction interrupted; please retry (code: PA)", billed for the time they ran. `vanished` (not
   * documented, the worst case): billed, then unknown to get (404) and to the list while the set keeps
   * `losePredictions` (count 0 included; a set without it finds them again, as the other simulators' lost jobs).
   */
  losePredictions: z
    .strictObject({ count: z.number().int().min(0), mode: z.enum(['failed', 'vanished']).optional() })
    .optional(),
  /** The output URLs of the next `count` predictions answer 404 before the retention time is up (while the set keeps it). */
  expireOutputs: count.optional(),
  /** The next `count` predictions run `factor` × the usual compute time: their cost differs from the estimate. */
  meteredDrift: z.strictObject({ count: z.number().int().min(0), factor: z.number().positive().max(100) }).optional(),
  /** The `completed` webhook of the next `count` predictions is delivered twice (same webhook-id). */
  webhookTwice: count.optional(),
  /** The `completed` webhook of the next `count` predictions leaves `ms` after the end. */
  webhookLate: z.strictObject({ count: z.number().int().min(0), ms: z.number().int().min(0).max(600_000) }).optional(),
  /** The `completed` webhook of the next `count` predictions is never sent. */
  webhookNever: count.optional(),
});
export type ReplicateFaults = z.infer<typeof replicateFaultsSchema>;

export function parseReplicateFaults(raw: unknown): ReplicateFaults {
  const parsed = replicateFaultsSchema.safeParse(raw);
  if (!parsed.success) throw new PipelineError(ErrorType.InvalidInput, 'invalid replicate simulator fault set');
  return structuredClone(parsed.data);
}
