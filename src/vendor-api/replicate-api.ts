/**
 * Replicate's predictions API as its docs describe it (docs/vendors.md, "replicate"), shared by the adapter
 * (src/vendors/replicate.ts) and the simulator (src/vendor-sim/replicate.ts) so the two cannot drift. Response schemas
 * are `z.object` (unknown fields dropped): Replicate adding a field must not break us.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';

export const PREDICTION_STATUSES = ['starting', 'processing', 'succeeded', 'failed', 'canceled', 'aborted'] as const;
export type PredictionStatus = (typeof PREDICTION_STATUSES)[number];
export const TERMINAL_STATUSES: readonly PredictionStatus[] = ['succeeded', 'failed', 'canceled', 'aborted'];

/** Prediction ids are interpolated into URL paths: nothing that could add a segment. */
export const PREDICTION_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Where the adapter puts a step's correlation value: the webhook URL's query parameter the callback receiver reads
 * (`CALLBACK_REF_QUERY`, vendors/port.ts; the docs suggest the query for "an internal ID") and a field of the input (shown by the list and get for an hour, then `data_removed`).
 */
export const CORRELATION_INPUT = 'episodes_ref';

const isoDate = z.iso.datetime({ offset: true });

export const predictionSchema = z.object({
  id: z.string().regex(PREDICTION_ID_PATTERN),
  model: z.string().optional(),
  version: z.string().optional(),
  input: z.record(z.string(), z.unknown()).nullish(),
  output: z.unknown().optional(),
  logs: z.string().nullish(),
  error: z.unknown().optional(),
  data_removed: z.boolean().optional(),
  source: z.string().optional(),
  status: z.enum(PREDICTION_STATUSES),
  created_at: isoDate,
  started_at: isoDate.nullish(),
  completed_at: isoDate.nullish(),
  deadline: isoDate.nullish(),
  metrics: z.object({ predict_time: z.number().nonnegative().optional() }).nullish(),
  /** Not in the docs' samples; the official JS client's type has it. Read when present. */
  webhook: z.string().nullish(),
  urls: z.record(z.string(), z.string()).optional(),
});
export type Prediction = z.infer<typeof predictionSchema>;

export const predictionListSchema = z.object({
  previous: z.string().nullish(),
  next: z.string().nullish(),
  results: z.array(predictionSchema),
});

/** Problem bodies (`{title, detail, status}`) and the 429 body (`{detail}`). */
export const problemSchema = z.object({
  title: z.string().optional(),
  detail: z.string().optional(),
  status: z.number().optional(),
});

export const webhookSecretSchema = z.object({ key: z.string().regex(/^whsec_[A-Za-z0-9+/=]{8,512}$/) });

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

/**
 * `base64(HMAC-SHA256(key, "<id>.<timestamp>.<body>"))`, the key being the base64 after `whsec_`
 * (https://replicate.com/docs/topics/webhooks/verify-webhook).
 */
export function webhookSignature(secret: string, id: string, timestamp: string, body: Buffer): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

/** The prediction's one output file: a URL, or the first URL of a list (image models answer a list). */
export function outputUrl(output: unknown): string | null {
  if (typeof output === 'string') return output;
  if (Array.isArray(output) && typeof output[0] === 'string') return output[0];
  return null;
}
