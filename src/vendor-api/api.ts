/**
 * The vendor HTTP API's wire contract (docs/vendor-api.md), shared by the simulator and the client so the two cannot
 * drift. Response schemas are `z.object` (unknown fields dropped): a vendor adding a field must not break us.
 */
import { z } from 'zod';
import { PAID_STEPS, paidStepSchema } from '../domain/paid-step';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
export const ARTIFACT_SHA256_HEADER = 'x-artifact-sha256';

/** Vendor job kinds are exactly the pipeline's paid steps. */
export const JOB_KINDS = PAID_STEPS;
export const jobKindSchema = paidStepSchema;
export type JobKind = z.infer<typeof jobKindSchema>;

/** Printable ASCII without quote or backslash, so the key travels as an RFC 8941 string without escapes. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21\x23-\x5b\x5d-\x7e]{1,255}$/;
/** Ids the vendor hands out are interpolated into URL paths later: nothing that could add a path segment. */
export const VENDOR_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
const vendorIdSchema = z.string().regex(VENDOR_ID_PATTERN);

export const wireMoneySchema = z.object({
  amount_cents: z.number().int().nonnegative(),
  currency: z.string().regex(/^[A-Z]{3}$/),
});

export const jobRequestSchema = z.strictObject({
  kind: jobKindSchema,
  episode_id: z.string().min(1).max(128),
  spec: z.record(z.string(), z.unknown()),
});
export type JobRequest = z.infer<typeof jobRequestSchema>;

export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export const jobStatusSchema = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof jobStatusSchema>;

export const jobAcceptedSchema = z.object({
  job_id: vendorIdSchema,
  status: jobStatusSchema,
  quoted_cost: wireMoneySchema,
  client_ref: z.string().nullable(),
});
export type JobAccepted = z.infer<typeof jobAcceptedSchema>;

export const vendorJobSchema = z.object({
  job_id: vendorIdSchema,
  kind: jobKindSchema,
  episode_id: z.string(),
  status: jobStatusSchema,
  quoted_cost: wireMoneySchema,
  artifact_id: vendorIdSchema.nullable(),
  client_ref: z.string().nullable(),
  accepted_at: z.iso.datetime({ offset: true }),
});
export type VendorJob = z.infer<typeof vendorJobSchema>;

export const jobListSchema = z.object({ jobs: z.array(vendorJobSchema) });

export const pricesSchema = z.object({
  prices: z.object({
    video: wireMoneySchema,
    cover: wireMoneySchema,
    rework: wireMoneySchema,
    assembly: wireMoneySchema,
  }),
});
export type Prices = z.infer<typeof pricesSchema>['prices'];

export const chargeSchema = z.object({
  charge_id: vendorIdSchema,
  job_id: vendorIdSchema,
  kind: jobKindSchema,
  episode_id: z.string(),
  client_ref: z.string().nullable(),
  amount_cents: z.number().int().nonnegative(),
  currency: z.string().regex(/^[A-Z]{3}$/),
  at: z.iso.datetime({ offset: true }),
});
export type Charge = z.infer<typeof chargeSchema>;

export const billingSchema = z.object({ charges: z.array(chargeSchema) });

/** Every non-2xx body. `code` is stable and machine-readable; `message` is for humans. */
export const errorBodySchema = z.object({
  error: z.object({ code: z.string().regex(/^[a-z_]{1,64}$/), message: z.string() }),
});
