/**
 * A local stand-in for the paid vendor (docs/vendor-api.md): real HTTP on 127.0.0.1, a billing record of every
 * charge, IETF-draft Idempotency-Key semantics, and injectable faults, so tests can prove "never pays twice" against
 * the same failure modes a real vendor has. Deterministic where it matters: job progress is a function of time since
 * acceptance, artifact bytes a function of the job, and probabilistic faults come from a seeded generator.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import * as path from 'node:path';
import { PipelineError, ErrorType } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import { ensureDirDurable } from '../files/durable-fs';
import {
  ARTIFACT_SHA256_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  JOB_KINDS,
  jobRequestSchema,
  REPLAYED_HEADER,
  type Charge,
  type JobAccepted,
  type JobKind,
  type JobRequest,
  type JobStatus,
  type VendorJob,
} from '../vendor-api/api';
import { listenLocal } from './listen';
import { consume, parseFaults, seededRandom, type VendorFaults } from './faults';
import { JobFaults } from './job-faults';
import { createMediaRenderer, roundOfClientRef, type MediaRenderer } from './media-render';
import {
  readSimulatorState,
  SIMULATOR_STATE_SCHEMA,
  writeSimulatorState,
  type IdempotencyRecord,
  type JobRecord,
  type SimulatorState,
} from './state';

export type { VendorFaults } from './faults';

export const DEFAULT_PRICES_CENTS: Readonly<Record<JobKind, number>> = {
  video: 4200,
  cover: 300,
  rework: 1500,
  assembly: 800,
};
export const DEFAULT_ARTIFACT_BYTES: Readonly<Record<JobKind, number>> = {
  video: 8192,
  cover: 2048,
  rework: 8192,
  assembly: 16384,
};
const CONTENT_TYPES: Readonly<Record<JobKind, string>> = {
  video: 'video/mp4',
  cover: 'image/png',
  rework: 'video/mp4',
  assembly: 'video/mp4',
};
export const DEFAULT_JOB_DURATION_MS = 50;
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
/** The request log (`requests()`, for tests and the CLI) keeps the newest this many, each path cut to this length. */
const MAX_LOGGED_REQUESTS = 10_000;
const MAX_LOGGED_PATH = 512;

export interface VendorSimulatorOptions {
  apiKey: string;
  /** 0 (default) picks a free port. The host is always 127.0.0.1. */
  port?: number;
  /** Time from acceptance to `succeeded` (`running` from half of it). */
  jobDurationMs?: number;
  pricesCents?: Partial<Record<JobKind, number>>;
  currency?: string;
  /** Synthetic artifact sizes; a kind given here always gets synthetic bytes of that size, never a render. */
  artifactBytes?: Partial<Record<JobKind, number>>;
  /** `render` (default): playable media where ffmpeg is available (media-render.ts); `synthetic`: random bytes. */
  media?: 'render' | 'synthetic';
  /** The ffmpeg binary (default: `ffmpeg` on PATH). */
  ffmpeg?: string;
  maxBodyBytes?: number;
  faults?: VendorFaults;
  /** Jobs, charges and idempotency records survive restarts in this JSON file. */
  stateFile?: string;
  /** Seed of the generator behind `fail5xx.probability`. */
  seed?: number;
  /** One line per request: method, path, status. Never a header value. */
  log?: (line: string) => void;
  /** Called with each request's log entry once it is answered or dropped (a test's observer of the vendor). */
  onRequest?: (entry: RequestLog) => void;
}

export interface RequestLog {
  method: string;
  path: string;
  authorized: boolean;
  /** null while in flight, and for connections dropped without an answer. */
  status: number | null;
  dropped: boolean;
  idempotencyKey: string | null;
  at: string;
  /** The job a submission created, or the one a read or an artifact download asked for; null otherwise. */
  jobId: string | null;
  /** The per-job fault a read showed: `lost` (404 for a lost job), `repeat-completion` (the second `succeeded`). */
  note: 'lost' | 'repeat-completion' | null;
  /** The status a read of one job showed (null for any other request). */
  jobStatus?: JobStatus | null;
}

export interface VendorSimulator {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  /** Replaces the whole fault set (`{}` clears it). Counts are consumed as faults fire. */
  setFaults(faults: VendorFaults): void;
  faults(): VendorFaults;
  billing(): Charge[];
  requests(): RequestLog[];
}

class SimulatorClosed extends Error {}

export async function startVendorSimulator(options: VendorSimulatorOptions): Promise<VendorSimulator> {
  const sim = new Simulator(options);
  await sim.load();
  await sim.listen(options.port ?? 0);
  return sim.handle();
}

class Simulator {
  private readonly expectedKeyDigest: Buffer;
  private readonly jobDurationMs: number;
  private readonly prices: Record<JobKind, number>;
  private readonly currency: string;
  private readonly artifactBytes: Record<JobKind, number>;
  private readonly maxBodyBytes: number;
  private currentFaults: VendorFaults;
  private random: () => number;
  private readonly renderer: MediaRenderer | null;
  private readonly renderStarted = new Set<string>();
  private readonly renderSettled = new Set<string>();
  private readonly jobFaults = new JobFaults();

  private readonly jobs = new Map<string, JobRecord>();
  private readonly artifacts = new Map<string, string>();
  private readonly charges: Charge[] = [];
  /** `response: null` marks a key whose first request is still in flight. */
  private readonly idempotency = new Map<string, IdempotencyRecord>();
  private readonly log: RequestLog[] = [];

  private readonly server = http.createServer((req, res) => this.serve(req, res));
  private readonly closing = new AbortController();
  private persistChain: Promise<void> = Promise.resolve();
  private port = 0;

  constructor(private readonly options: VendorSimulatorOptions) {
    if (options.apiKey.length === 0)
      throw new PipelineError(ErrorType.CredentialsMissing, 'simulator needs an API key');
    this.expectedKeyDigest = digest(options.apiKey);
    this.jobDurationMs = options.jobDurationMs ?? DEFAULT_JOB_DURATION_MS;
    this.prices = { ...DEFAULT_PRICES_CENTS, ...options.pricesCents };
    this.currency = options.currency ?? 'USD';
    this.artifactBytes = { ...DEFAULT_ARTIFACT_BYTES, ...options.artifactBytes };
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.currentFaults = parseFaults(options.faults ?? {});
    this.random = seededRandom(options.seed ?? 1);
    this.renderer = options.media === 'synthetic' ? null : createMediaRenderer({ ffmpeg: options.ffmpeg });
  }

  async load(): Promise<void> {
    const file = this.options.stateFile;
    if (file === undefined) return;
    await ensureDirDurable(path.dirname(path.resolve(file)));
    const state = readSimulatorState(file);
    if (!state) return;
    for (const job of state.jobs) this.addJob(job);
    this.charges.push(...state.charges);
    for (const record of state.idempotency) this.idempotency.set(record.key, record);
  }

  async listen(port: number): Promise<void> {
    this.port = await listenLocal(this.server, port);
  }

  handle(): VendorSimulator {
    return {
      url: `http://127.0.0.1:${this.port}`,
      port: this.port,
      close: () => this.close(),
      setFaults: (faults) => this.replaceFaults(parseFaults(faults)),
      faults: () => structuredClone(this.currentFaults),
      billing: () => structuredClone(this.charges),
      requests: () => structuredClone(this.log),
    };
  }

  private replaceFaults(faults: VendorFaults): void {
    this.currentFaults = faults;
    this.jobFaults.refresh(faults);
  }

  private async close(): Promise<void> {
    this.closing.abort();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    await this.persistChain;
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const entry: RequestLog = {
      method: (req.method ?? '').slice(0, 16),
      path: (url.pathname + url.search).slice(0, MAX_LOGGED_PATH),
      authorized: false,
      status: null,
      dropped: false,
      idempotencyKey: null,
      at: new Date().toISOString(),
      jobId: null,
      note: null,
    };
    this.log.push(entry);
    if (this.log.length > MAX_LOGGED_REQUESTS) this.log.splice(0, this.log.length - MAX_LOGGED_REQUESTS);
    const exchange: Exchange = {
      req,
      res,
      url,
      entry,
      respond: (status, body, headers = {}) => {
        entry.status = status;
        this.options.log?.(`${entry.method} ${entry.path} ${status}${entry.authorized ? '' : ' (unauthorized)'}`);
        this.options.onRequest?.(structuredClone(entry));
        const payload = Buffer.from(JSON.stringify(body));
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': payload.length, ...headers });
        res.end(payload);
      },
      respondBytes: (bytes, headers) => {
        entry.status = 200;
        this.options.log?.(`${entry.method} ${entry.path} 200`);
        this.options.onRequest?.(structuredClone(entry));
        res.writeHead(200, { 'content-length': bytes.length, ...headers });
        res.end(bytes);
      },
      drop: () => {
        entry.dropped = true;
        this.options.log?.(`${entry.method} ${entry.path} accepted, connection dropped (fault)`);
        this.options.onRequest?.(structuredClone(entry));
        req.socket.destroy();
      },
    };
    this.route(exchange).catch((e: unknown) => {
      if (e instanceof SimulatorClosed) return void req.socket.destroy();
      this.options.log?.(`${entry.method} ${entry.path} internal error: ${(e as Error).message}`);
      if (res.headersSent) return void req.socket.destroy();
      exchange.respond(500, errorBody('internal', 'simulator error'));
    });
  }

  private async route(x: Exchange): Promise<void> {
    const { req, url } = x;
    // 401 first on every path, before a byte of the body is read: an unauthenticated caller learns nothing, not even
    // which routes exist, and costs no memory; its connection is closed with the answer.
    if (!this.authorized(req.headers.authorization)) {
      x.res.once('finish', () => req.socket.destroy());
      return x.respond(401, errorBody('unauthorized', 'missing or invalid API key'), {
        'www-authenticate': 'Bearer',
        connection: 'close',
      });
    }
    x.entry.authorized = true;
    const body = await readBody(req, this.maxBodyBytes);
    if (body === null) {
      return x.respond(413, errorBody('payload_too_large', `body over ${this.maxBodyBytes} bytes`), {
        connection: 'close',
      });
    }
    if (url.pathname === '/_sim/faults') return this.routeFaults(x, body);
    if (!url.pathname.startsWith('/v1/')) return x.respond(404, errorBody('not_found', 'no such route'));

    const submit = req.method === 'POST' && url.pathname === '/v1/jobs';
    if (this.shouldFail5xx(submit)) {
      return x.respond(503, errorBody('unavailable', 'try again later (injected)'), { 'retry-after': '1' });
    }
    if (submit) return this.submit(x, body);
    if (req.method !== 'GET') return x.respond(405, errorBody('method_not_allowed', 'use GET'), { allow: 'GET' });

    await this.sleep(this.currentFaults.latencyMs ?? 0);
    const segments = url.pathname.split('/').slice(2);
    const [collection, id, ...rest] = segments;
    if (rest.length > 0) return x.respond(404, errorBody('not_found', 'no such route'));
    if (collection === 'jobs' && id === undefined) return this.findByClientRef(x);
    if (collection === 'jobs' && id !== undefined) {
      const job = this.jobs.get(id);
      x.entry.jobId = job?.job_id ?? null;
      if (job && this.jobFaults.isLost(job.job_id)) x.entry.note = 'lost';
      return job && !this.jobFaults.isLost(job.job_id)
        ? x.respond(200, this.view(job, x.entry))
        : x.respond(404, errorBody('not_found', 'no such job'));
    }
    if (collection === 'prices' && id === undefined) return x.respond(200, { prices: this.priceList() });
    if (collection === 'billing' && id === undefined) {
      const ref = x.url.searchParams.get('client_ref');
      return x.respond(200, {
        charges: ref === null ? this.charges : this.charges.filter((c) => c.client_ref === ref),
      });
    }
    if (collection === 'artifacts' && id !== undefined) return await this.artifact(x, id);
    return x.respond(404, errorBody('not_found', 'no such route'));
  }

  private async submit(x: Exchange, body: Buffer): Promise<void> {
    const noIdempotency = this.currentFaults.noIdempotency === true;
    const key = parseIdempotencyKeyHeader(x.req.headers[IDEMPOTENCY_KEY_HEADER]);
    const clientRef = typeof key === 'object' ? key.key : null;
    x.entry.idempotencyKey = clientRef;
    if (!noIdempotency && key === 'invalid') {
      return x.respond(400, errorBody('invalid_idempotency_key', 'Idempotency-Key must be 1-255 printable chars'));
    }
    if (!noIdempotency && key === 'absent') {
      return x.respond(400, errorBody('idempotency_key_missing', 'Idempotency-Key header is required'));
    }
    const request = parseJobRequest(body);
    if (typeof request === 'string') return x.respond(400, errorBody('invalid_request', request));

    if (noIdempotency || clientRef === null) {
      await this.sleep(this.currentFaults.latencyMs ?? 0);
      return this.accept(x, request, clientRef, null);
    }
    const fingerprint = fingerprintOf(request);
    const existing = this.idempotency.get(clientRef);
    if (existing?.response === null) {
      return x.respond(409, errorBody('idempotency_key_in_flight', 'a request with this key is being processed'));
    }
    if (existing && existing.fingerprint !== fingerprint) {
      return x.respond(422, errorBody('idempotency_key_reused', 'this key was used with a different request'));
    }
    if (existing) {
      await this.sleep(this.currentFaults.latencyMs ?? 0);
      x.entry.jobId = existing.response.job_id;
      return x.respond(202, existing.response, { [REPLAYED_HEADER]: 'true' });
    }
    this.idempotency.set(clientRef, { key: clientRef, fingerprint, response: null });
    try {
      await this.sleep(this.currentFaults.latencyMs ?? 0);
      await this.accept(x, request, clientRef, fingerprint);
    } finally {
      // Only a completed acceptance leaves a record behind; anything else frees the key for a retry.
      if (this.idempotency.get(clientRef)?.response === null) this.idempotency.delete(clientRef);
    }
  }

  /** The charge happens here, at acceptance, and is durable (with `stateFile`) before anyone hears of it. */
  private async accept(x: Exchange, request: JobRequest, clientRef: string | null, fingerprint: string | null) {
    const now = new Date();
    const job: JobRecord = {
      job_id: `job_${randomUUID()}`,
      kind: request.kind,
      episode_id: request.episode_id,
      spec: request.spec,
      client_ref: clientRef,
      quoted_cost: { amount_cents: this.prices[request.kind], currency: this.currency },
      accepted_at: now.toISOString(),
      ends_failed: consume(this.currentFaults.failJobs),
      artifact_id: `art_${randomUUID()}`,
    };
    const charge: Charge = {
      charge_id: `ch_${randomUUID()}`,
      job_id: job.job_id,
      kind: job.kind,
      episode_id: job.episode_id,
      client_ref: clientRef,
      amount_cents: job.quoted_cost.amount_cents,
      currency: job.quoted_cost.currency,
      at: job.accepted_at,
    };
    const response: JobAccepted = {
      job_id: job.job_id,
      status: 'queued',
      quoted_cost: job.quoted_cost,
      client_ref: clientRef,
    };
    this.addJob(job);
    x.entry.jobId = job.job_id;
    this.jobFaults.pick(job.job_id, this.currentFaults);
    this.artifactReady(job); // starts the render now, so it is usually ready when the job's time is up
    this.charges.push(charge);
    if (clientRef !== null && fingerprint !== null) {
      this.idempotency.set(clientRef, { key: clientRef, fingerprint, response });
    }
    try {
      await this.persist();
    } catch (e) {
      // Undone before the 500 goes out: a 5xx from this API always means "nothing happened".
      this.jobs.delete(job.job_id);
      this.artifacts.delete(job.artifact_id);
      this.charges.splice(this.charges.indexOf(charge), 1);
      if (clientRef !== null) this.idempotency.delete(clientRef);
      throw e;
    }
    if (consume(this.currentFaults.acceptThenDrop)) return x.drop();
    x.respond(202, response);
  }

  private findByClientRef(x: Exchange): void {
    if (this.currentFaults.noIdempotency === true) {
      return x.respond(501, errorBody('not_supported', 'lookup by client reference is not supported'));
    }
    const ref = x.url.searchParams.get('client_ref');
    if (ref === null || ref === '') return x.respond(400, errorBody('invalid_request', 'client_ref is required'));
    const jobs = [...this.jobs.values()]
      .filter((j) => j.client_ref === ref && !this.jobFaults.isLost(j.job_id))
      .map((j) => this.view(j, x.entry));
    x.respond(200, { jobs });
  }

  private async artifact(x: Exchange, artifactId: string): Promise<void> {
    const jobId = this.artifacts.get(artifactId);
    const job = jobId === undefined ? undefined : this.jobs.get(jobId);
    const done = job && (this.jobFaults.hasSucceeded(job.job_id) || this.statusOf(job) === 'succeeded');
    if (!job || !done || this.jobFaults.isLost(job.job_id)) {
      return x.respond(404, errorBody('not_found', 'no such artifact'));
    }
    x.entry.jobId = job.job_id;
    const bytes = (await this.rendered(job)) ?? artifactBytes(job, this.artifactBytes[job.kind]);
    this.jobFaults.downloadedNow(job.job_id, this.currentFaults, Date.now());
    x.respondBytes(bytes, {
      'content-type': CONTENT_TYPES[job.kind],
      [ARTIFACT_SHA256_HEADER]: createHash('sha256').update(bytes).digest('hex'),
    });
  }

  private routeFaults(x: Exchange, body: Buffer): void {
    if (x.req.method === 'GET') return x.respond(200, this.currentFaults);
    if (x.req.method !== 'POST') return x.respond(405, errorBody('method_not_allowed', 'use GET or POST'));
    let faults: VendorFaults;
    try {
      faults = parseFaults(JSON.parse(body.toString('utf8')));
    } catch {
      return x.respond(400, errorBody('invalid_request', 'body must be a fault set (see docs/vendor-api.md)'));
    }
    this.replaceFaults(faults);
    x.respond(200, faults);
  }

  /** The job's playable media, or null for synthetic bytes (no renderer, a size set for the kind, no ffmpeg). */
  private rendered(job: JobRecord): Promise<Buffer | null> {
    if (!this.renders(job)) return Promise.resolve(null);
    return this.renderer!.render({ kind: job.kind, episodeId: job.episode_id, round: this.reviewRoundOf(job) });
  }

  /** The round a job's picture comes from: its own, or for an assembly that of the cut it assembles. */
  private reviewRoundOf(job: JobRecord): number | null {
    const cut = job.kind === 'assembly' ? this.jobs.get(String(job.spec.video_job)) : job;
    return cut ? roundOfClientRef(cut.client_ref) : null;
  }

  private renders(job: JobRecord): boolean {
    return this.renderer !== null && this.options.artifactBytes?.[job.kind] === undefined;
  }

  /**
   * A job is done when its artifact is: a render still running keeps it `running` (never a slow download). The render
   * starts at acceptance, or at the first look at a job loaded from the state file; the renderer's cache keeps the
   * bytes, so a download after its render pays nothing (and a re-render after eviction gives the same bytes).
   */
  private artifactReady(job: JobRecord): boolean {
    if (!this.renders(job) || this.renderSettled.has(job.job_id)) return true;
    if (!this.renderStarted.has(job.job_id)) {
      this.renderStarted.add(job.job_id);
      void this.rendered(job).finally(() => this.renderSettled.add(job.job_id));
    }
    return false;
  }

  private view(job: JobRecord, entry?: RequestLog): VendorJob {
    const shown = this.jobFaults.view(job.job_id, this.statusOf(job), this.jobDurationMs, Date.now());
    if (entry && shown.note) entry.note = shown.note;
    if (entry && entry.jobId === job.job_id) entry.jobStatus = shown.status;
    const status = shown.status;
    return {
      job_id: job.job_id,
      kind: job.kind,
      episode_id: job.episode_id,
      status,
      quoted_cost: job.quoted_cost,
      artifact_id: status === 'succeeded' ? job.artifact_id : null,
      client_ref: job.client_ref,
      accepted_at: job.accepted_at,
    };
  }

  private statusOf(job: JobRecord): JobStatus {
    const elapsed = Date.now() - Date.parse(job.accepted_at);
    const duration = this.jobDurationMs + this.jobFaults.extraMs(job.job_id);
    if (this.currentFaults.holdKinds?.includes(job.kind)) return elapsed >= duration / 2 ? 'running' : 'queued';
    if (elapsed >= duration && job.ends_failed) return 'failed';
    if (elapsed >= duration && this.artifactReady(job)) return 'succeeded';
    if (elapsed >= duration) return 'running';
    return elapsed >= duration / 2 ? 'running' : 'queued';
  }

  private priceList(): Record<JobKind, { amount_cents: number; currency: string }> {
    const entries = JOB_KINDS.map((kind) => [kind, { amount_cents: this.prices[kind], currency: this.currency }]);
    return Object.fromEntries(entries) as Record<JobKind, { amount_cents: number; currency: string }>;
  }

  private addJob(job: JobRecord): void {
    this.jobs.set(job.job_id, job);
    this.artifacts.set(job.artifact_id, job.job_id);
  }

  private shouldFail5xx(submit: boolean): boolean {
    const fault = this.currentFaults.fail5xx;
    if (!fault || (fault.scope === 'submit' && !submit)) return false;
    if (fault.count !== undefined && fault.count > 0) {
      fault.count -= 1;
      return true;
    }
    return fault.probability !== undefined && this.random() < fault.probability;
  }

  /** Constant time: both sides are hashed to equal length first, so neither length nor content leaks by timing. */
  private authorized(header: string | undefined): boolean {
    const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), this.expectedKeyDigest);
  }

  private persist(): Promise<void> {
    const file = this.options.stateFile;
    if (file === undefined) return Promise.resolve();
    const snapshot: SimulatorState = {
      schema: SIMULATOR_STATE_SCHEMA,
      jobs: [...this.jobs.values()],
      charges: this.charges,
      idempotency: [...this.idempotency.values()].filter((r) => r.response !== null),
    };
    // Copied now, written in order: an older snapshot can never overwrite a newer one.
    const copy = structuredClone(snapshot);
    const write = this.persistChain.then(() => writeSimulatorState(file, copy));
    this.persistChain = write.catch(() => undefined);
    return write;
  }

  private sleep(ms: number): Promise<void> {
    if (this.closing.signal.aborted) return Promise.reject(new SimulatorClosed());
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onClose = (): void => {
        clearTimeout(timer);
        reject(new SimulatorClosed());
      };
      const timer = setTimeout(() => {
        this.closing.signal.removeEventListener('abort', onClose);
        resolve();
      }, ms);
      this.closing.signal.addEventListener('abort', onClose, { once: true });
    });
  }
}

interface Exchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  url: URL;
  entry: RequestLog;
  respond(status: number, body: unknown, headers?: Record<string, string>): void;
  respondBytes(bytes: Buffer, headers: Record<string, string>): void;
  drop(): void;
}

/** The body, or null when it is over the limit. An oversized body is still drained (up to a bound) so the 413 can be
 * read by the client instead of being lost to a TCP reset. */
function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | null> {
  const drainLimit = Math.max(limit * 16, 1024 * 1024);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > drainLimit) return void req.socket.destroy();
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? null : Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => reject(new SimulatorClosed()));
  });
}

/** RFC 8941 string (`"key"`, as the IETF draft specifies) or, leniently, the bare key. */
function parseIdempotencyKeyHeader(header: string | string[] | undefined): { key: string } | 'absent' | 'invalid' {
  if (header === undefined) return 'absent';
  if (Array.isArray(header)) return 'invalid';
  const bare = header.startsWith('"') && header.endsWith('"') && header.length >= 2 ? header.slice(1, -1) : header;
  return IDEMPOTENCY_KEY_PATTERN.test(bare) ? { key: bare } : 'invalid';
}

function parseJobRequest(body: Buffer): JobRequest | string {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return 'body is not valid JSON';
  }
  const parsed = jobRequestSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const { at, message } = firstIssue(parsed.error, 'body');
  return `invalid ${at}: ${message}`;
}

/** Same request ⇔ same canonical JSON (object keys sorted), so key order and whitespace do not matter. */
function fingerprintOf(request: JobRequest): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** sha256(seed ‖ i) blocks: the same job always yields the same bytes, on any machine, after any restart. */
function artifactBytes(job: JobRecord, size: number): Buffer {
  const out = Buffer.alloc(size);
  const seed = `${job.job_id}:${job.kind}:${job.episode_id}`;
  for (let i = 0, offset = 0; offset < size; i++) {
    offset += createHash('sha256').update(`${seed}:${i}`).digest().copy(out, offset);
  }
  return out;
}

function errorBody(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
