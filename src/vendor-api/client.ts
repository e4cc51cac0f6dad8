/**
 * The vendor client: every call is one HTTP exchange with a deadline, every response is parsed with zod, and every
 * failure is a `VendorError` saying whether a submission may have been accepted. No retries here: retrying belongs to
 * the caller (a Temporal activity retry policy), which alone knows whether the outcome has been reconciled.
 */
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import type { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import {
  ARTIFACT_SHA256_HEADER,
  billingSchema,
  errorBodySchema,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  jobAcceptedSchema,
  jobListSchema,
  jobRequestSchema,
  pricesSchema,
  REPLAYED_HEADER,
  VENDOR_ID_PATTERN,
  vendorJobSchema,
  type Charge,
  type JobAccepted,
  type JobRequest,
  type Prices,
  type VendorJob,
} from './api';
import type { CredentialsLoader } from './credentials';
import { DEFAULT_VENDOR_TIMEOUT_MS, parseVendorBaseUrl } from './endpoint';
import { exchange, ExchangeFailure, type ExchangeResponse } from './http-exchange';
import { VendorError, type VendorOperation } from './vendor-error';
import { vendorMessageLine } from './message';

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
export const DEFAULT_MAX_ARTIFACT_BYTES = 256 * 1024 * 1024;

/** Compatible with Temporal's activity `log` and with `console`. Lines carry method, path, status: never the key. */
export interface VendorClientLogger {
  debug(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
}

export interface VendorClientOptions {
  /** https, or http to localhost only (see `parseVendorBaseUrl`). */
  baseUrl: string | URL;
  apiKey: string;
  /** Per request: connect, send and the complete response. Default 10 s. */
  timeoutMs?: number;
  maxResponseBytes?: number;
  maxArtifactBytes?: number;
  logger?: VendorClientLogger;
}

export interface RequestOptions {
  timeoutMs?: number;
  /** E.g. the activity's cancellation signal. Cancelling a submission mid-flight makes its outcome unknown. */
  signal?: AbortSignal;
}

export interface SubmittedJob extends JobAccepted {
  /** The vendor answered from its idempotency record: an earlier request with this key created the job. */
  replayed: boolean;
}

/** `supported: false` means the vendor cannot look jobs up by reference: reconciliation needs a human. */
export type ClientRefLookup = { supported: true; jobs: VendorJob[] } | { supported: false };

export interface Artifact {
  artifactId: string;
  bytes: Buffer;
  sha256: string;
  contentType: string;
}

interface VendorRequest {
  method?: 'GET' | 'POST';
  /** Relative to the base URL. */
  path: string;
  maxResponseBytes?: number;
  body?: Buffer;
  headers?: Record<string, string>;
  /** Non-2xx statuses the caller handles itself. */
  allowStatus?: number[];
}

export class VendorClient {
  readonly baseUrl: URL;
  // An ES private field: invisible to util.inspect, JSON.stringify and spreading, so the key cannot leak by logging.
  readonly #apiKey: string;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #maxArtifactBytes: number;
  readonly #logger: VendorClientLogger | undefined;

  constructor(options: VendorClientOptions) {
    this.baseUrl = parseVendorBaseUrl(String(options.baseUrl));
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_VENDOR_TIMEOUT_MS;
    this.#maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.#maxArtifactBytes = options.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
    this.#logger = options.logger;
  }

  /**
   * Creates a job, or returns the job an earlier request with the same key created. On failure `outcome` says
   * whether retrying with the same key is safe (`not-accepted`) or the caller must reconcile first (`unknown`).
   */
  submitJob(request: JobRequest, idempotencyKey: string, options: RequestOptions = {}): Promise<SubmittedJob> {
    return this.#guard(async () => {
      const op = 'submitJob';
      const parsed = jobRequestSchema.safeParse(request);
      if (!parsed.success) throw invalidInput(`invalid job request at ${firstIssue(parsed.error).at}`);
      requireIdempotencyKey(idempotencyKey);
      let body: Buffer;
      try {
        body = Buffer.from(JSON.stringify(parsed.data));
      } catch {
        throw invalidInput('job spec is not JSON-serializable');
      }
      const res = await this.#send(op, options, {
        method: 'POST',
        path: 'v1/jobs',
        body,
        // RFC 8941 string form, as in the IETF Idempotency-Key draft; the pattern rules out characters to escape.
        headers: { [IDEMPOTENCY_KEY_HEADER]: `"${idempotencyKey}"`, 'content-type': 'application/json' },
      });
      // A 2xx we cannot read may still be an accepted (charged) job: unknown, never success and never "retry".
      const accepted = this.#parse(op, res, jobAcceptedSchema);
      if (accepted.client_ref !== null && accepted.client_ref !== idempotencyKey) {
        throw this.#malformed(op, 'the job reference does not match the idempotency key sent');
      }
      return { ...accepted, replayed: res.headers[REPLAYED_HEADER] === 'true' };
    });
  }

  getJob(jobId: string, options: RequestOptions = {}): Promise<VendorJob> {
    return this.#guard(async () => {
      const op = 'getJob';
      requireVendorId(jobId, 'job id');
      const res = await this.#send(op, options, { path: `v1/jobs/${jobId}` });
      const job = this.#parse(op, res, vendorJobSchema);
      if (job.job_id !== jobId) throw this.#malformed(op, 'the vendor answered with another job');
      return job;
    });
  }

  /** The reconciliation lookup: which jobs (if any) an idempotency key created. */
  findJobsByClientRef(clientRef: string, options: RequestOptions = {}): Promise<ClientRefLookup> {
    return this.#guard(async () => {
      const op = 'findJobsByClientRef';
      requireIdempotencyKey(clientRef);
      const path = `v1/jobs?client_ref=${encodeURIComponent(clientRef)}`;
      const res = await this.#send(op, options, { path, allowStatus: [404, 501] });
      if (res.status === 404 || res.status === 501) return { supported: false };
      const { jobs } = this.#parse(op, res, jobListSchema);
      // A vendor that ignored the filter would make us adopt someone else's job; refuse rather than guess.
      if (jobs.some((j) => j.client_ref !== clientRef)) {
        throw this.#malformed(op, 'the lookup returned jobs of another reference');
      }
      return { supported: true, jobs };
    });
  }

  getPrices(options: RequestOptions = {}): Promise<Prices> {
    return this.#guard(async () => {
      const res = await this.#send('getPrices', options, { path: 'v1/prices' });
      return this.#parse('getPrices', res, pricesSchema).prices;
    });
  }

  /** The artifact's bytes, checked against the Content-Length and sha256 headers the vendor sends with them. */
  downloadArtifact(artifactId: string, options: RequestOptions = {}): Promise<Artifact> {
    return this.#guard(async () => {
      const op = 'downloadArtifact';
      requireVendorId(artifactId, 'artifact id');
      const res = await this.#send(op, options, {
        path: `v1/artifacts/${artifactId}`,
        maxResponseBytes: this.#maxArtifactBytes,
      });
      const declaredLength = res.headers['content-length'];
      const declaredSha = res.headers[ARTIFACT_SHA256_HEADER];
      if (res.status !== 200) throw this.#malformed(op, `unexpected status ${res.status}`);
      if (declaredLength === undefined || typeof declaredSha !== 'string' || !/^[0-9a-f]{64}$/.test(declaredSha)) {
        throw this.#malformed(op, `missing Content-Length or ${ARTIFACT_SHA256_HEADER} header`);
      }
      const sha256 = createHash('sha256').update(res.body).digest('hex');
      if (Number(declaredLength) !== res.body.length || sha256 !== declaredSha) {
        throw new VendorError({
          type: ErrorType.VendorUnavailable,
          message: `vendor ${op}: artifact bytes do not match the declared length or sha256`,
          operation: op,
          reason: 'integrity-mismatch',
          outcome: null,
          status: res.status,
        });
      }
      return {
        artifactId,
        bytes: res.body,
        sha256,
        contentType: res.headers['content-type'] ?? 'application/octet-stream',
      };
    });
  }

  /**
   * Every charge the vendor ever made to this account, or those of one idempotency key: the ground truth for "did we
   * pay twice?". Filtered here too, so a vendor that ignores `client_ref` answers the same.
   */
  getBilling(options: RequestOptions = {}, clientRef?: string): Promise<Charge[]> {
    return this.#guard(async () => {
      if (clientRef !== undefined) requireIdempotencyKey(clientRef);
      const path = clientRef === undefined ? 'v1/billing' : `v1/billing?client_ref=${encodeURIComponent(clientRef)}`;
      const res = await this.#send('getBilling', options, { path });
      const { charges } = this.#parse('getBilling', res, billingSchema);
      return clientRef === undefined ? charges : charges.filter((c) => c.client_ref === clientRef);
    });
  }

  /** One request (GET unless said, responses up to the client's limit unless said); a status outside 2xx throws. */
  async #send(op: VendorOperation, options: RequestOptions, request: VendorRequest): Promise<ExchangeResponse> {
    const { method = 'GET', path, maxResponseBytes = this.#maxResponseBytes, ...extra } = request;
    const started = Date.now();
    const logPath = `/${path}`;
    let res: ExchangeResponse;
    try {
      res = await exchange({
        url: new URL(path, this.baseUrl),
        method,
        headers: { authorization: `Bearer ${this.#apiKey}`, accept: 'application/json', ...extra.headers },
        body: extra.body,
        timeoutMs: options.timeoutMs ?? this.#timeoutMs,
        signal: options.signal,
        maxResponseBytes,
      });
    } catch (e) {
      if (!(e instanceof ExchangeFailure)) throw e;
      const error = this.#transportError(op, e);
      this.#logger?.warn(`vendor ${method} ${logPath} failed: ${e.reason}`, logMeta(op, error, started));
      throw error;
    }
    this.#logger?.debug(`vendor ${method} ${logPath} → ${res.status}`, {
      operation: op,
      status: res.status,
      duration_ms: Date.now() - started,
    });
    if ((res.status < 200 || res.status > 299) && !extra.allowStatus?.includes(res.status)) {
      throw this.#statusError(op, res.status, res.body);
    }
    return res;
  }

  #transportError(op: VendorOperation, f: ExchangeFailure): VendorError {
    const submission = op === 'submitJob';
    // The status line is the vendor's answer even if its body then failed to arrive.
    if (f.status !== null && (f.status < 200 || f.status > 299))
      return this.#statusError(op, f.status, Buffer.alloc(0));
    if (!submission) {
      return new VendorError({
        type: ErrorType.VendorUnavailable,
        message: `vendor ${op}: ${f.message}`,
        operation: op,
        reason: f.reason,
        outcome: null,
        status: f.status,
      });
    }
    if (!f.mayHaveReachedVendor) {
      return new VendorError({
        type: ErrorType.VendorUnavailable,
        message: `vendor ${op}: ${f.message}; not accepted, safe to retry with the same idempotency key`,
        operation: op,
        reason: f.reason,
        outcome: 'not-accepted',
      });
    }
    return new VendorError({
      type: ErrorType.SubmissionOutcomeUnknown,
      message: `vendor ${op}: ${f.message} after the request was sent; outcome unknown, reconcile before any resubmission`,
      operation: op,
      reason: f.reason,
      outcome: 'unknown',
      status: f.status,
    });
  }

  #statusError(op: VendorOperation, status: number, body: Buffer): VendorError {
    const submission = op === 'submitJob';
    const vendor = this.#vendorErrorText(body);
    const text = `vendor ${op}: HTTP ${status}${vendor ? ` ${vendor.code}: ${vendor.message}` : ''}`;
    const code = vendor?.code ?? null;
    // 409 (key in flight), 429 and 5xx: the vendor did nothing and says "later". Other 4xx: it refused the request.
    const later = status === 409 || status === 429 || (status >= 500 && status <= 599);
    if (later || (status >= 400 && status <= 499)) {
      return new VendorError({
        type: later ? ErrorType.VendorUnavailable : ErrorType.VendorRejected,
        message: text,
        operation: op,
        reason: 'http-status',
        outcome: submission ? 'not-accepted' : null,
        status,
        vendorCode: code,
      });
    }
    // 1xx/3xx (we never follow redirects: they would carry the key elsewhere): meaningless here.
    return submission
      ? new VendorError({
          type: ErrorType.SubmissionOutcomeUnknown,
          message: `${text}; outcome unknown`,
          operation: op,
          reason: 'http-status',
          outcome: 'unknown',
          status,
          vendorCode: code,
        })
      : new VendorError({
          type: ErrorType.VendorUnavailable,
          message: text,
          operation: op,
          reason: 'http-status',
          outcome: null,
          status,
          vendorCode: code,
        });
  }

  #parse<S extends z.ZodType>(op: VendorOperation, res: ExchangeResponse, schema: S): z.output<S> {
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      // The SyntaxError quotes the body, which a hostile endpoint could fill with anything: keep neither.
      throw this.#malformed(op, 'response is not JSON');
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw this.#malformed(op, `unexpected response at ${firstIssue(parsed.error).at}`);
    return parsed.data;
  }

  #malformed(op: VendorOperation, what: string): VendorError {
    return op === 'submitJob'
      ? new VendorError({
          type: ErrorType.SubmissionOutcomeUnknown,
          message: `vendor ${op}: ${what}; the job may have been accepted, outcome unknown`,
          operation: op,
          reason: 'malformed-response',
          outcome: 'unknown',
        })
      : new VendorError({
          type: ErrorType.VendorUnavailable,
          message: `vendor ${op}: ${what}`,
          operation: op,
          reason: 'malformed-response',
          outcome: null,
        });
  }

  /** The vendor's own error code and message, shortened and with the key cut out in case the vendor echoes it. */
  #vendorErrorText(body: Buffer): { code: string; message: string } | null {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      return null;
    }
    const parsed = errorBodySchema.safeParse(json);
    if (!parsed.success) return null;
    const message = vendorMessageLine(parsed.data.error.message, this.#apiKey);
    return { code: parsed.data.error.code, message };
  }

  /** Last line of defence: whatever a call throws, it does not carry the key, not even deep in a `cause`. */
  async #guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (!inspect(e, { depth: 8 }).includes(this.#apiKey)) throw e;
      if (e instanceof VendorError) {
        throw new VendorError({
          type: e.type,
          message: `vendor ${e.operation}: ${e.reason} (details withheld: they contained the API key)`,
          operation: e.operation,
          reason: e.reason,
          outcome: e.outcome,
          status: e.status,
        });
      }
      throw new PipelineError(
        ErrorType.VendorUnavailable,
        'vendor call failed (details withheld: they contained the API key)',
      );
    }
  }
}

/**
 * Loads the key only now: call this after the cheap guards (does the episode exist? is the step not already done?)
 * have passed, so a run that never pays never reads the secret.
 */
export async function createVendorClient(
  loader: CredentialsLoader,
  options: Omit<VendorClientOptions, 'apiKey'>,
): Promise<VendorClient> {
  return new VendorClient({ ...options, apiKey: await loader.load() });
}

function requireIdempotencyKey(key: string): void {
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw invalidInput('idempotency key must be 1-255 printable ASCII characters without quotes or backslashes');
  }
}

function requireVendorId(id: string, what: string): void {
  if (!VENDOR_ID_PATTERN.test(id)) throw invalidInput(`invalid vendor ${what}`);
}

function invalidInput(message: string): PipelineError {
  return new PipelineError(ErrorType.InvalidInput, message);
}

function logMeta(op: VendorOperation, e: VendorError, started: number): Record<string, unknown> {
  return { operation: op, reason: e.reason, outcome: e.outcome, status: e.status, duration_ms: Date.now() - started };
}
