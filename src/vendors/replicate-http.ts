/**
 * One request to Replicate's API, classified for the money: every call is one `exchange` (fresh connection, deadline,
 * size cap), every body is parsed with zod, every failure is a `VendorError`. A create has no idempotency key, so a
 * failure after the request may have reached Replicate is `unknown` (settled by the listing, never by a resend); only
 * the answers the docs define as refusals are `not-accepted`. The token goes to the base URL's origin only.
 */
import type { z } from 'zod';
import { ErrorType } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import { exchange, ExchangeFailure, type ExchangeResponse } from '../vendor-api/http-exchange';
import { problemSchema } from '../vendor-api/replicate-api';
import { VendorError, type VendorOperation } from '../vendor-api/vendor-error';
import type { VendorLogger } from './port';
import { vendorMessageLine } from '../vendor-api/message';

const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/**
 * Statuses of a create that certainly created nothing (https://replicate.com/docs/reference/http): bad request,
 * unauthenticated, payment required, forbidden, model not found, too large, input validation (422), throttled (429).
 * Anything else after the request left (408, 409, 5xx, a 3xx we never follow, an unreadable 2xx): docs silent, unknown.
 */
const NOT_CREATED = new Set([400, 401, 402, 403, 404, 413, 422, 429]);

export interface ReplicateRequest {
  method?: 'GET' | 'POST';
  /** Relative to the base URL, or an absolute URL on its origin (the list's `next`). */
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export class ReplicateHttp {
  readonly #token: string;

  constructor(
    readonly baseUrl: URL,
    token: string,
    readonly timeoutMs: number,
    readonly logger?: VendorLogger,
  ) {
    this.#token = token;
  }

  async json<S extends z.ZodType>(op: VendorOperation, schema: S, r: ReplicateRequest): Promise<z.output<S>> {
    const res = await this.#send(op, r);
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw failure(op, 'malformed-response', 'the answer is not JSON', res.status);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw failure(op, 'malformed-response', `unexpected answer at ${firstIssue(parsed.error).at}`, res.status);
    }
    return parsed.data;
  }

  /** The URL a path names, refused when it leaves the base URL's origin (the token would go with it). */
  url(path: string): URL {
    const url = new URL(path, this.baseUrl);
    if (url.origin !== this.baseUrl.origin) {
      throw failure('findJobsByClientRef', 'malformed-response', 'a page link leads to another host', null);
    }
    return url;
  }

  async #send(op: VendorOperation, r: ReplicateRequest): Promise<ExchangeResponse> {
    const url = this.url(r.path);
    const method = r.method ?? 'GET';
    const started = Date.now();
    const body = r.body === undefined ? undefined : Buffer.from(JSON.stringify(r.body));
    let res: ExchangeResponse;
    try {
      res = await exchange({
        url,
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          accept: 'application/json',
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...r.headers,
        },
        body,
        timeoutMs: this.timeoutMs,
        maxResponseBytes: MAX_RESPONSE_BYTES,
      });
    } catch (e) {
      if (!(e instanceof ExchangeFailure)) throw e;
      const error = transportFailure(op, e);
      this.logger?.warn(`replicate ${method} ${url.pathname} failed: ${e.reason}`, { operation: op, ...facts(error) });
      throw error;
    }
    const meta = { operation: op, status: res.status, duration_ms: Date.now() - started };
    this.logger?.debug(`replicate ${method} ${url.pathname} → ${res.status}`, meta);
    if (res.status < 200 || res.status > 299) throw statusFailure(op, res.status, this.#detail(res.body));
    return res;
  }

  /** The problem body's detail, one short line, with the token cut out should Replicate ever echo it. */
  #detail(body: Buffer): string {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      return '';
    }
    const problem = problemSchema.safeParse(json);
    if (!problem.success) return '';
    const text = [problem.data.title, problem.data.detail].filter(Boolean).join(': ');
    return vendorMessageLine(text, this.#token);
  }
}

function facts(e: VendorError): Record<string, unknown> {
  return { reason: e.reason, outcome: e.outcome, status: e.status };
}

function transportFailure(op: VendorOperation, f: ExchangeFailure): VendorError {
  // The status line is Replicate's answer even when its body then failed to arrive.
  if (f.status !== null && (f.status < 200 || f.status > 299)) return statusFailure(op, f.status, '');
  if (op === 'submitJob' && !f.mayHaveReachedVendor) {
    return new VendorError({
      type: ErrorType.VendorUnavailable,
      message: `replicate ${op}: ${f.message}; nothing reached Replicate, nothing was created`,
      operation: op,
      reason: f.reason,
      outcome: 'not-accepted',
    });
  }
  return failure(op, f.reason, f.message, f.status);
}

function statusFailure(op: VendorOperation, status: number, detail: string): VendorError {
  const text = `HTTP ${status}${detail ? ` ${detail}` : ''}`;
  if (op === 'submitJob' && !NOT_CREATED.has(status)) return failure(op, 'http-status', text, status);
  const later = status === 429 || status >= 500 || status < 400;
  return new VendorError({
    type: later ? ErrorType.VendorUnavailable : ErrorType.VendorRejected,
    message: `replicate ${op}: ${text}`,
    operation: op,
    reason: 'http-status',
    outcome: op === 'submitJob' ? 'not-accepted' : null,
    status,
  });
}

/** A failure whose meaning for a create is "it may exist": unknown (reads: just unavailable, a read costs nothing). */
export function failure(
  op: VendorOperation,
  reason: VendorError['reason'],
  what: string,
  status: number | null,
): VendorError {
  const submission = op === 'submitJob';
  return new VendorError({
    type: submission ? ErrorType.SubmissionOutcomeUnknown : ErrorType.VendorUnavailable,
    message: `replicate ${op}: ${what}${submission ? '; the prediction may exist: outcome unknown, find it by listing' : ''}`,
    operation: op,
    reason,
    outcome: submission ? 'unknown' : null,
    status,
  });
}
