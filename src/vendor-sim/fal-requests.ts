/**
 * The fal simulator's requests: what a submission queued, how it runs (the platform's own retries included), what it
 * returns, and the billing journal (per output unit × unit price, once per request however many attempts it took).
 */
import { randomUUID } from 'node:crypto';
import type { JobKind } from '../vendor-api/api';
import { consume } from './faults';
import type { FalFaults } from './fal-faults';
import { roundOfClientRef } from './media-render';

/** fal retries a request at most this many attempts (docs/vendors.md, "Platform retries"). */
export const FAL_MAX_ATTEMPTS = 10;

export interface FalRequest {
  request_id: string;
  /** One per attempt: a platform retry gets a new one; the last is the answer's. */
  gateway_request_ids: string[];
  endpoint_id: string;
  input: Record<string, unknown>;
  webhook: string | null;
  submitted_at: number;
  /** When the last attempt ends. */
  ends_at: number;
  ttl_ms: number;
  /** null: succeeds; else the HTTP status it ends with. */
  error_status: 422 | 500 | 503 | null;
  units: number;
  lost: boolean;
  expire_early: boolean;
  webhook_fault: { kind: 'twice' } | { kind: 'late'; ms: number } | { kind: 'never' } | null;
  /** Set once it ended (and was billed, if billable). */
  ended: boolean;
  output: Record<string, unknown> | null;
}

/** One billed request, the simulator's ground truth. `ref`: our correlation value as the input carried it. */
export interface FalCharge {
  request_id: string;
  endpoint_id: string;
  ref: string | null;
  unit: string;
  unit_quantity: number;
  unit_price_cents: number;
  amount_cents: number;
  currency: string;
  at: string;
}

export interface NewRequest {
  endpointId: string;
  input: Record<string, unknown>;
  webhook: string | null;
  noRetry: boolean;
  ttlMs: number;
  durationMs: number;
  unitsPerRequest: number;
}

/** A request as a submission queues it, with the faults of the current set that pick it. */
export function queuedRequest(n: NewRequest, faults: FalFaults, now: number): FalRequest {
  const failing = faults.runnerRetries && consume(faults.runnerRetries) ? faults.runnerRetries.attempts : 0;
  // Without retries the first failed attempt ends the request; after FAL_MAX_ATTEMPTS failures fal gives up.
  const gaveUp = failing > 0 && (n.noRetry || failing >= FAL_MAX_ATTEMPTS);
  const attempts = gaveUp ? (n.noRetry ? 1 : FAL_MAX_ATTEMPTS) : failing + 1;
  const failed = faults.failJobs && consume(faults.failJobs) ? faults.failJobs.status : null;
  const metered = faults.meteredUnits && consume(faults.meteredUnits) ? faults.meteredUnits.units : null;
  return {
    request_id: randomUUID(),
    gateway_request_ids: Array.from({ length: attempts }, () => randomUUID()),
    endpoint_id: n.endpointId,
    input: n.input,
    webhook: n.webhook,
    submitted_at: now,
    ends_at: now + n.durationMs + (attempts - 1) * Math.ceil(n.durationMs / 2),
    ttl_ms: n.ttlMs,
    error_status: gaveUp ? 503 : failed,
    units: metered ?? n.unitsPerRequest,
    lost: consume(faults.loseJobs),
    expire_early: consume(faults.expireFiles),
    webhook_fault: webhookFault(faults),
    ended: false,
    output: null,
  };
}

function webhookFault(faults: FalFaults): FalRequest['webhook_fault'] {
  if (consume(faults.webhookNever)) return { kind: 'never' };
  if (faults.webhookLate && consume(faults.webhookLate)) return { kind: 'late', ms: faults.webhookLate.ms };
  if (consume(faults.webhookTwice)) return { kind: 'twice' };
  return null;
}

export type FalQueueStatus = 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED';

export function statusOf(r: FalRequest, now: number): FalQueueStatus {
  if (r.ended) return 'COMPLETED';
  return now - r.submitted_at < (r.ends_at - r.submitted_at) / 2 ? 'IN_QUEUE' : 'IN_PROGRESS';
}

/** The charge a request that just ended incurs: its units on success, one unit for a 422 (GPU time), none for 5xx. */
export function chargeOf(
  r: FalRequest,
  price: { unitPriceCents: number; unit: string; currency: string },
  ref: string | null,
): FalCharge | null {
  const units = r.error_status === null ? r.units : r.error_status === 422 ? 1 : 0;
  if (units === 0) return null;
  return {
    request_id: r.request_id,
    endpoint_id: r.endpoint_id,
    ref,
    unit: price.unit,
    unit_quantity: units,
    unit_price_cents: price.unitPriceCents,
    amount_cents: units * price.unitPriceCents,
    currency: price.currency,
    at: new Date(r.ends_at).toISOString(),
  };
}

/** What the model was asked for, as the simulator renders it: the step our correlation value in the input names. */
export function renderTarget(input: Record<string, unknown>): {
  kind: JobKind;
  episodeId: string;
  round: number | null;
} {
  const ref = typeof input.episodes_ref === 'string' ? input.episodes_ref : '';
  const m = /^(.+):(video|cover|rework|assembly):r\d+$/.exec(ref);
  return m
    ? { kind: m[2] as JobKind, episodeId: m[1]!, round: roundOfClientRef(ref) }
    : { kind: 'video', episodeId: 'fal', round: null };
}

/** The error body a failed request's result answers with (docs/vendors.md, "Errors"). */
export function errorBodyOf(status: 422 | 500 | 503): { body: unknown; type: string | null; message: string } {
  if (status === 422) {
    const body = { detail: [{ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' }] };
    return { body, type: null, message: 'Invalid status code: 422' };
  }
  if (status === 503) {
    const body = { detail: 'Runner disconnected during processing', error_type: 'runner_disconnected' };
    return { body, type: 'runner_disconnected', message: 'Runner disconnected during processing' };
  }
  return { body: { detail: 'Internal Server Error' }, type: null, message: 'Invalid status code: 500' };
}
