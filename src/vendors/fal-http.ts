/**
 * One HTTP exchange with fal (queue, Platform API or a file URL), classified for the pay-once rules. fal documents no
 * idempotency key, so a submission is `not-accepted` only where fal certainly queued nothing: no connection, or a 4xx
 * the gateway answers before queueing (auth, validation, rate limit). A timeout, a lost connection, a 5xx (the gateway
 * can fail after the request was queued) or an unreadable 2xx is `unknown`: settled by the listing, never by a resend.
 */
import { inspect } from 'node:util';
import type { z } from 'zod';
import { ErrorType, PipelineError } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import { exchange, ExchangeFailure, type ExchangeResponse } from '../vendor-api/http-exchange';
import { VendorError, type VendorOperation } from '../vendor-api/vendor-error';
import type { VendorLogger } from './port';
import { vendorMessageLine } from '../vendor-api/message';

/** Answered by fal's gateway before anything is queued (docs/vendors.md): the submission created nothing. */
const REFUSED_BEFORE_QUEUEING = new Set([400, 401, 403, 404, 405, 413, 415, 422, 429]);

export interface FalRequest {
  url: URL;
  method?: 'GET' | 'POST';
  body?: Buffer;
  headers?: Record<string, string>;
  /** False for public URLs (output files, the JWKS): the key goes only to fal's own API hosts. */
  auth?: boolean;
  maxResponseBytes: number;
}

export class FalHttp {
  readonly #apiKey: string;

  constructor(
    apiKey: string,
    private readonly timeoutMs: number,
    private readonly logger?: VendorLogger,
  ) {
    this.#apiKey = apiKey;
  }

  /** One request; a status outside 2xx throws a `VendorError` (classified for `op`). */
  async send(op: VendorOperation, r: FalRequest): Promise<ExchangeResponse> {
    const started = Date.now();
    const method = r.method ?? 'GET';
    const auth: Record<string, string> = r.auth === false ? {} : { authorization: `Key ${this.#apiKey}` };
    let res: ExchangeResponse;
    try {
      res = await exchange({
        url: r.url,
        method,
        headers: { accept: 'application/json', ...auth, ...r.headers },
        body: r.body,
        timeoutMs: this.timeoutMs,
        maxResponseBytes: r.maxResponseBytes,
      });
    } catch (e) {
      if (!(e instanceof ExchangeFailure)) throw e;
      const error = this.#transportError(op, e);
      this.logger?.warn(`fal ${method} ${r.url.pathname} failed: ${e.reason}`, {
        operation: op,
        outcome: error.outcome,
      });
      throw error;
    }
    const meta = { operation: op, status: res.status, duration_ms: Date.now() - started };
    this.logger?.debug(`fal ${method} ${r.url.pathname} → ${res.status}`, meta);
    if (res.status < 200 || res.status > 299) throw this.statusError(op, res.status, res.body);
    return res;
  }

  /** The body parsed with `schema`; a body we cannot read after a submission leaves its outcome unknown. */
  parse<S extends z.ZodType>(op: VendorOperation, res: ExchangeResponse, schema: S): z.output<S> {
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw malformed(op, 'response is not JSON');
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw malformed(op, `unexpected response at ${firstIssue(parsed.error).at}`);
    return parsed.data;
  }

  /** Last line of defence: whatever a call throws does not carry the key. */
  async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (!inspect(e, { depth: 8 }).includes(this.#apiKey)) throw e;
      if (!(e instanceof VendorError)) {
        throw new PipelineError(ErrorType.VendorUnavailable, 'fal call failed (details withheld: they held the key)');
      }
      throw new VendorError({
        type: e.type,
        message: `fal ${e.operation}: ${e.reason} (details withheld: they contained the API key)`,
        operation: e.operation,
        reason: e.reason,
        outcome: e.outcome,
        status: e.status,
      });
    }
  }

  statusError(op: VendorOperation, status: number, body: Buffer): VendorError {
    const detail = this.#detail(body);
    const message = `fal ${op}: HTTP ${status}${detail ? ` ${detail}` : ''}`;
    const later = status === 429 || status >= 500;
    const init = { message, operation: op, reason: 'http-status' as const, status };
    if (op !== 'submitJob') {
      return new VendorError({
        ...init,
        type: later ? ErrorType.VendorUnavailable : ErrorType.VendorRejected,
        outcome: null,
      });
    }
    if (REFUSED_BEFORE_QUEUEING.has(status)) {
      const type = later ? ErrorType.VendorUnavailable : ErrorType.VendorRejected;
      return new VendorError({ ...init, type, outcome: 'not-accepted' });
    }
    // A 5xx (or anything else) from the gateway may come after the request was queued: fal may run and bill it.
    return new VendorError({
      ...init,
      message: `${message}; fal may have queued it, outcome unknown`,
      type: ErrorType.SubmissionOutcomeUnknown,
      outcome: 'unknown',
    });
  }

  #transportError(op: VendorOperation, f: ExchangeFailure): VendorError {
    if (f.status !== null && (f.status < 200 || f.status > 299)) return this.statusError(op, f.status, Buffer.alloc(0));
    const init = { operation: op, reason: f.reason, status: f.status };
    if (op !== 'submitJob') {
      return new VendorError({
        ...init,
        type: ErrorType.VendorUnavailable,
        message: `fal ${op}: ${f.message}`,
        outcome: null,
      });
    }
    if (!f.mayHaveReachedVendor) {
      const message = `fal ${op}: ${f.message}; nothing reached fal`;
      return new VendorError({ ...init, type: ErrorType.VendorUnavailable, message, outcome: 'not-accepted' });
    }
    return new VendorError({
      ...init,
      type: ErrorType.SubmissionOutcomeUnknown,
      message: `fal ${op}: ${f.message} after the request was sent; outcome unknown, find it before any resubmission`,
      outcome: 'unknown',
    });
  }

  /** fal's `detail` (a text, or the validation list's first message), shortened, with the key cut out. */
  #detail(body: Buffer): string {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      return '';
    }
    const detail = (json as { detail?: unknown } | null)?.detail;
    const first: unknown = Array.isArray(detail) ? (detail[0] as { msg?: unknown } | undefined)?.msg : detail;
    if (typeof first !== 'string') return '';
    return vendorMessageLine(first, this.#apiKey);
  }
}

export function malformed(op: VendorOperation, what: string): VendorError {
  return op === 'submitJob'
    ? new VendorError({
        type: ErrorType.SubmissionOutcomeUnknown,
        message: `fal ${op}: ${what}; the request may have been queued, outcome unknown`,
        operation: op,
        reason: 'malformed-response',
        outcome: 'unknown',
      })
    : new VendorError({
        type: ErrorType.VendorUnavailable,
        message: `fal ${op}: ${what}`,
        operation: op,
        reason: 'malformed-response',
        outcome: null,
      });
}
