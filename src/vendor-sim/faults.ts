/** The faults the vendor simulator can inject (docs/vendor-api.md), and the seeded generator behind the random ones. */
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { JOB_KINDS } from '../vendor-api/api';

export const vendorFaultsSchema = z.strictObject({
  /** Delay before the vendor works on a valid request (new submissions are "in flight" meanwhile). */
  latencyMs: z.number().int().min(0).max(600_000).optional(),
  /** Answer 503 before doing anything: the next `count` requests, then each with `probability`. */
  fail5xx: z
    .strictObject({
      count: z.number().int().min(0).optional(),
      probability: z.number().min(0).max(1).optional(),
      /** `submit`: only POST /v1/jobs fails, reads keep working. */
      scope: z.enum(['all', 'submit']).optional(),
    })
    .optional(),
  /** Accept and charge the next `count` new jobs, then destroy the connection without answering. */
  acceptThenDrop: z.strictObject({ count: z.number().int().min(0) }).optional(),
  /** The vendor ignores Idempotency-Key (every POST charges again) and cannot look jobs up by reference. */
  noIdempotency: z.boolean().optional(),
  /** The next `count` new jobs end `failed` instead of `succeeded` (still charged: the vendor did the work). */
  failJobs: z.strictObject({ count: z.number().int().min(0) }).optional(),
  /** Jobs of these kinds stay `running` while the set names them (a paid step held mid-job); then they finish. */
  holdKinds: z.array(z.enum(JOB_KINDS)).max(JOB_KINDS.length).optional(),
  /**
   * The next `count` new jobs are lost after acceptance: charged, then unknown to reads (404, not found by key) for as
   * long as the fault set keeps `loseJobs` (count 0 included); a set without it finds them again.
   */
  loseJobs: z.strictObject({ count: z.number().int().min(0) }).optional(),
  /** The next `count` new jobs take `ms` longer to complete. */
  slowJobs: z.strictObject({ count: z.number().int().min(0), ms: z.number().int().min(0).max(600_000) }).optional(),
  /**
   * The next `count` jobs whose artifact is downloaded (of `jobs` only, when given) report their completion twice:
   * after that first download, `running` again for one job duration, then `succeeded` again (same artifact,
   * downloadable throughout).
   */
  repeatCompletion: z
    .strictObject({ count: z.number().int().min(0), jobs: z.array(z.string()).max(1_000).optional() })
    .optional(),
});
export type VendorFaults = z.infer<typeof vendorFaultsSchema>;

export function parseFaults(raw: unknown): VendorFaults {
  const parsed = vendorFaultsSchema.safeParse(raw);
  if (!parsed.success) throw new PipelineError(ErrorType.InvalidInput, 'invalid simulator fault set');
  // A copy: counts are decremented in place as faults fire, never in the caller's object.
  return structuredClone(parsed.data);
}

export function consume(fault: { count: number } | undefined): boolean {
  if (!fault || fault.count <= 0) return false;
  fault.count -= 1;
  return true;
}

/** mulberry32: a tiny seedable PRNG (not for anything secret): makes "fails 30% of the time" reproducible; the bench seeds with it too. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
