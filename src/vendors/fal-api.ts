/**
 * fal's wire formats as docs/vendors.md states them (queue API, Platform API, webhooks), parsed with zod, and where
 * our correlation value travels: the `episodes_ref` field of the request's input (fal's listing shows the input back)
 * and the `ref` query parameter of the webhook URL.
 */
import { z } from 'zod';
import { PAID_STEPS, type PaidStep } from '../domain/paid-step';
import { CALLBACK_REF_QUERY } from './port';

/** The input field carrying the step's correlation value (`<episode>:<step>:r<round>`); models ignore extra fields. */
export const FAL_REF_FIELD = 'episodes_ref';
/** The webhook URL's query parameter carrying the same value. */
export const FAL_REF_QUERY = CALLBACK_REF_QUERY;

/** fal request ids are UUIDs; nothing else is put into a URL path. */
export const FAL_REQUEST_ID_PATTERN = /^[0-9a-fA-F-]{8,64}$/;
/** `owner/name[/subpath…]`, as the queue URL takes it. */
export const FAL_MODEL_PATTERN = /^[A-Za-z0-9._-]{1,64}(\/[A-Za-z0-9._-]{1,64}){1,5}$/;

const requestId = z.string().regex(FAL_REQUEST_ID_PATTERN);

export const submitSchema = z.object({
  status: z.literal('IN_QUEUE'),
  request_id: requestId,
  gateway_request_id: z.string().optional(),
});

export const statusSchema = z.object({
  status: z.enum(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED']),
  request_id: requestId,
  error: z.string().nullish(),
  error_type: z.string().nullish(),
});
export type FalStatus = z.infer<typeof statusSchema>;

const listItemSchema = z.object({
  request_id: requestId,
  endpoint_id: z.string(),
  sent_at: z.string().nullish(),
  ended_at: z.string().nullish(),
  status_code: z.number().int().nullish(),
  json_input: z.unknown().optional(),
  json_output: z.unknown().optional(),
});
export type FalListItem = z.infer<typeof listItemSchema>;

const page = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), next_cursor: z.string().nullish(), has_more: z.boolean() });

export const listSchema = page(listItemSchema);

export const billingEventsSchema = page(
  z.object({
    request_id: requestId,
    endpoint_id: z.string(),
    timestamp: z.string(),
    unit_quantity: z.number().nonnegative(),
    unit_price: z.number().nonnegative(),
    cost_total: z.number().nonnegative(),
    currency: z.string().length(3).optional(),
  }),
);
export type FalBillingEvent = z.infer<typeof billingEventsSchema>['items'][number];

export const pricingSchema = z.object({
  prices: z.array(
    z.object({ endpoint_id: z.string(), unit_price: z.number().nonnegative(), unit: z.string(), currency: z.string() }),
  ),
});

export const webhookSchema = z.object({
  request_id: requestId,
  gateway_request_id: z.string().nullish(),
  status: z.enum(['OK', 'ERROR']),
  payload: z.unknown().optional(),
  payload_error: z.string().nullish(),
  error: z.string().nullish(),
});

export const jwksSchema = z.object({
  keys: z.array(z.object({ kty: z.string(), crv: z.string().optional(), x: z.string().optional() }).loose()).max(32),
});

/** The step a correlation value names (`<episode>:<step>:r<round>`, src/domain/names.ts), or null. */
export function parseRef(ref: unknown): { ref: string; episodeId: string; step: PaidStep } | null {
  if (typeof ref !== 'string') return null;
  const m = /^(\d{4}-W\d{2}-\d{1,6}):([a-z]+):r\d{1,4}$/.exec(ref);
  const step = PAID_STEPS.find((s) => s === m?.[2]);
  return m && step ? { ref, episodeId: m[1]!, step } : null;
}

/** The correlation value a listed request's input carries, or null (a request not sent by us). */
export function refOfInput(input: unknown): string | null {
  if (input === null || typeof input !== 'object') return null;
  const value = (input as Record<string, unknown>)[FAL_REF_FIELD];
  return parseRef(value)?.ref ?? null;
}

/** The first file URL in a model's output (`video.url`, `image.url`, `images[0].url`, …), breadth first. */
export function firstFileUrl(output: unknown): string | null {
  const queue: unknown[] = [output];
  for (let seen = 0; queue.length > 0 && seen < 1000; seen++) {
    const node = queue.shift();
    if (node === null || typeof node !== 'object') continue;
    const url = (node as { url?: unknown }).url;
    if (typeof url === 'string' && /^https?:\/\//.test(url)) return url;
    queue.push(...(Object.values(node) as unknown[]));
  }
  return null;
}

/** USD amounts as fal states them (`cost_total`), in whole cents. */
export function usdToCents(usd: number): number {
  return Math.round(usd * 100);
}
