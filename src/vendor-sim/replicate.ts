/**
 * A local stand-in for Replicate's predictions API as its docs describe it (src/vendor-sim/README.md,
 * replicate): real HTTP on 127.0.0.1, `Authorization: Bearer`, problem+json errors, `201` on create, `Prefer: wait`,
 * the list (newest first, cursor pages, `created_after`/`created_before`), `data_removed` after the retention time
 * with file URLs that stop working, signed webhooks with the `completed` one retried, the account's webhook secret,
 * and `metrics.predict_time`. Replicate's API has no billing endpoint: the simulator keeps a journal of what it
 * charged (`predict_time` × price per second) at `GET /_sim/billing`, for tests and the campaign, never the adapter.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import { meteredCents } from '../domain/metered-cost';
import { PAID_STEPS, type PaidStep } from '../domain/paid-step';
import { CORRELATION_INPUT, TERMINAL_STATUSES, type PredictionStatus } from '../vendor-api/replicate-api';
import { listenLocal } from './listen';
import { consume } from './faults';
import { createMediaRenderer, roundOfClientRef, type MediaRenderer } from './media-render';
import { parseReplicateFaults, type ReplicateFaults } from './replicate-faults';
import { DEFAULT_WEBHOOK_RETRY_DELAYS_MS, newWebhookSecret, WebhookSender, type Delivery } from './replicate-webhooks';

export type { ReplicateFaults } from './replicate-faults';
export type { Delivery } from './replicate-webhooks';

export const REPLICATE_SIM_DEFAULTS = {
  predictionMs: 50,
  predictSeconds: 120,
  usdPerSecond: 0.0014,
  hardware: 'gpu-a100-large',
  retentionMs: 60 * 60_000,
  pageSize: 100,
} as const;
const MAX_BODY_BYTES = 256 * 1024;

export interface ReplicateSimulatorOptions {
  token: string;
  /** 0 (default) picks a free port. The host is always 127.0.0.1. */
  port?: number;
  /** Real time from creation to the end (`processing` from half of it). */
  predictionMs?: number;
  /** `metrics.predict_time` of a prediction that runs to its end, in seconds: the metered quantity. */
  predictSeconds?: number;
  /** Price per second of the hardware, USD: the journal's rate. */
  usdPerSecond?: number;
  hardware?: string;
  /** Inputs, outputs, logs and files are removed this long after creation (one hour at Replicate). */
  retentionMs?: number;
  /** Delays between the tries of a `completed` webhook that failed. */
  webhookRetryDelaysMs?: readonly number[];
  /** Predictions per list page (100 at Replicate). */
  pageSize?: number;
  /** `render` (default): playable media where ffmpeg is available (media-render.ts); `synthetic`: random bytes. */
  media?: 'render' | 'synthetic';
  ffmpeg?: string;
  faults?: ReplicateFaults;
  /** One line per request: method, path, status. Never a header value. */
  log?: (line: string) => void;
  /** Each request once answered (or dropped): the campaign's view of the traffic. */
  onRequest?: (entry: SimRequest) => void;
}

/** One billed prediction, as Replicate would charge it (its API shows no such thing). */
export interface JournalEntry {
  id: string;
  model: string;
  status: PredictionStatus;
  predict_time: number;
  hardware: string;
  price_per_second: number;
  /** USD, unrounded: `predict_time` × `price_per_second`. */
  amount: number;
  /** `amount` to the cent (domain/metered-cost.ts), as our ledger records it. */
  amount_cents: number;
  currency: 'USD';
  /** The correlation value the input carried (the test's view; Replicate knows nothing of it). */
  correlation: string | null;
}

export interface SimRequest {
  method: string;
  path: string;
  status: number | null;
  dropped: boolean;
  /** The prediction a create made, or a get, cancel or output download named (null when none). */
  predictionId: string | null;
}

export interface ReplicateSimulator {
  readonly url: string;
  readonly port: number;
  /** The account's `whsec_…` secret, as `GET /v1/webhooks/default/secret` answers it. */
  readonly webhookSecret: string;
  close(): Promise<void>;
  setFaults(faults: ReplicateFaults): void;
  /** The fault set now, its counts as consumed so far. */
  faults(): ReplicateFaults;
  journal(): JournalEntry[];
  requests(): SimRequest[];
  deliveries(): Delivery[];
  /** Creates as seen by the server (`POST …/predictions`), dropped or not. */
  creates(): number;
}

export async function startReplicateSimulator(options: ReplicateSimulatorOptions): Promise<ReplicateSimulator> {
  const sim = new ReplicateSim(options);
  await sim.listen(options.port ?? 0);
  return sim.handle();
}

interface Fate {
  ends: 'succeeded' | 'model-error' | 'interrupted';
  vanished: boolean;
  expireOutput: boolean;
  drift: number;
  webhookCopies: number;
  webhookDelayMs: number;
  webhookNever: boolean;
}

interface SimPrediction {
  seq: number;
  id: string;
  model: string;
  version: string;
  input: Record<string, unknown>;
  webhook: string | null;
  events: string[];
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  status: PredictionStatus;
  error: string | null;
  output: string | null;
  predictTime: number | null;
  fate: Fate;
  done: Promise<void>;
  finish: () => void;
}

interface Exchange {
  req: http.IncomingMessage;
  url: URL;
  entry: SimRequest;
  respond(status: number, body: unknown): void;
  drop(): void;
}

class ReplicateSim {
  readonly o: Required<Omit<ReplicateSimulatorOptions, 'port' | 'faults' | 'log' | 'ffmpeg' | 'onRequest'>> &
    Pick<ReplicateSimulatorOptions, 'log' | 'onRequest'>;
  private faults: ReplicateFaults;
  private readonly tokenDigest: Buffer;
  private readonly secret = newWebhookSecret();
  private readonly predictions = new Map<string, SimPrediction>();
  private readonly files = new Map<string, { prediction: SimPrediction; bytes: Promise<Buffer>; type: string }>();
  private readonly charges: JournalEntry[] = [];
  private readonly log: SimRequest[] = [];
  private readonly renderer: MediaRenderer | null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly closing = new AbortController();
  private readonly webhooks: WebhookSender;
  private readonly server = http.createServer((req, res) => this.serve(req, res));
  private seq = 0;
  private createCount = 0;
  port = 0;

  constructor(options: ReplicateSimulatorOptions) {
    if (options.token.length === 0) throw new Error('the Replicate simulator needs a token');
    this.tokenDigest = digest(options.token);
    const d = REPLICATE_SIM_DEFAULTS;
    this.o = {
      token: options.token,
      predictionMs: options.predictionMs ?? d.predictionMs,
      predictSeconds: options.predictSeconds ?? d.predictSeconds,
      usdPerSecond: options.usdPerSecond ?? d.usdPerSecond,
      hardware: options.hardware ?? d.hardware,
      retentionMs: options.retentionMs ?? d.retentionMs,
      webhookRetryDelaysMs: options.webhookRetryDelaysMs ?? DEFAULT_WEBHOOK_RETRY_DELAYS_MS,
      pageSize: options.pageSize ?? d.pageSize,
      media: options.media ?? 'render',
      log: options.log,
      onRequest: options.onRequest,
    };
    this.faults = parseReplicateFaults(options.faults ?? {});
    this.renderer = this.o.media === 'render' ? createMediaRenderer({ ffmpeg: options.ffmpeg }) : null;
    this.webhooks = new WebhookSender({
      secret: this.secret,
      retryDelaysMs: this.o.webhookRetryDelaysMs,
      signal: this.closing.signal,
      log: this.o.log,
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async listen(port: number): Promise<void> {
    this.port = await listenLocal(this.server, port);
  }

  handle(): ReplicateSimulator {
    return {
      url: this.url,
      port: this.port,
      webhookSecret: this.secret,
      close: () => this.close(),
      setFaults: (faults) => void (this.faults = parseReplicateFaults(faults)),
      faults: () => structuredClone(this.faults),
      journal: () => structuredClone(this.charges),
      requests: () => structuredClone(this.log),
      deliveries: () => structuredClone(this.webhooks.deliveries),
      creates: () => this.createCount,
    };
  }

  private async close(): Promise<void> {
    this.closing.abort();
    for (const t of this.timers) clearTimeout(t);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const entry: SimRequest = {
      method: (req.method ?? '').slice(0, 16),
      path: url.pathname.slice(0, 512),
      status: null,
      dropped: false,
      predictionId: null,
    };
    this.log.push(entry);
    if (this.log.length > 10_000) this.log.splice(0, this.log.length - 10_000);
    const x: Exchange = {
      req,
      url,
      entry,
      respond: (status, body) => {
        entry.status = status;
        this.o.log?.(`${entry.method} ${entry.path} ${status}`);
        const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
        const type = Buffer.isBuffer(body)
          ? this.fileType(url)
          : status >= 400
            ? 'application/problem+json'
            : 'application/json';
        res.writeHead(status, { 'content-type': type, 'content-length': bytes.length });
        res.end(bytes);
        this.o.onRequest?.(structuredClone(entry));
      },
      drop: () => {
        entry.dropped = true;
        this.o.log?.(`${entry.method} ${entry.path} created, connection reset (fault)`);
        req.socket.destroy();
        this.o.onRequest?.(structuredClone(entry));
      },
    };
    this.route(x).catch((e: unknown) => {
      if (this.closing.signal.aborted || res.headersSent) return void req.socket.destroy();
      this.o.log?.(`${entry.method} ${entry.path} internal error: ${(e as Error).message}`);
      x.respond(500, problem(500, 'Internal server error', 'simulator error'));
    });
  }

  private async route(x: Exchange): Promise<void> {
    const { req, url } = x;
    const [, root, a, b, c, d] = url.pathname.split('/');
    // Output files are public, as replicate.delivery's are: no token.
    if (root === 'files' && req.method === 'GET' && a && b && c === undefined) return this.file(x, a);
    if (!this.authorized(req.headers.authorization)) {
      return x.respond(401, problem(401, 'Unauthenticated', 'You did not pass a valid authentication token'));
    }
    const body = await readBody(req);
    if (body === null) return x.respond(413, problem(413, 'Request too large', `body over ${MAX_BODY_BYTES} bytes`));
    if (root === '_sim') return this.simRoute(x, a, body);
    if (root !== 'v1') return x.respond(404, problem(404, 'Not found', 'no such route'));
    await this.pause(this.faults.latencyMs ?? 0);
    const post = req.method === 'POST';
    if (post && a === 'predictions' && b === undefined) return this.create(x, body, null);
    if (post && a === 'models' && b && c && d === 'predictions') return this.create(x, body, `${b}/${c}`);
    if (post && a === 'predictions' && b && c === 'cancel' && d === undefined) return this.cancel(x, b);
    if (req.method !== 'GET') return x.respond(405, problem(405, 'Method not allowed', 'use GET'));
    if (a === 'predictions' && b === undefined) return this.list(x);
    if (a === 'predictions' && b && c === undefined) return this.get(x, b);
    if (a === 'webhooks' && b === 'default' && c === 'secret') return x.respond(200, { key: this.secret });
    x.respond(404, problem(404, 'Not found', 'no such route'));
  }

  private simRoute(x: Exchange, what: string | undefined, body: Buffer): void {
    if (what === 'billing') return x.respond(200, { entries: this.charges });
    if (what !== 'faults') return x.respond(404, problem(404, 'Not found', 'no such route'));
    if (x.req.method === 'POST') {
      try {
        this.faults = parseReplicateFaults(JSON.parse(body.toString('utf8')));
      } catch {
        return x.respond(400, problem(400, 'Bad request', 'body must be a fault set (docs/vendors.md)'));
      }
    }
    x.respond(200, this.faults);
  }

  /** `POST /v1/predictions` (model = null: the body names a version) or `/v1/models/{owner}/{name}/predictions`. */
  private async create(x: Exchange, body: Buffer, model: string | null): Promise<void> {
    this.createCount += 1;
    const request = parseCreate(body, model);
    if ('status' in request) return x.respond(request.status, request);
    if (consume(this.faults.throttle)) {
      return x.respond(429, { detail: 'Request was throttled. Your rate limit resets in ~30s.' });
    }
    const fail5xx = consume(this.faults.fail5xx) ? this.faults.fail5xx! : null;
    if (fail5xx && !fail5xx.created) return x.respond(503, problem(503, 'Service unavailable', 'try again later'));
    const p = this.newPrediction(request);
    x.entry.predictionId = p.id;
    if (consume(this.faults.acceptThenDrop)) return x.drop();
    if (fail5xx) return x.respond(502, problem(502, 'Bad gateway', 'upstream error'));
    const wait = preferWaitSeconds(String(x.req.headers.prefer ?? ''));
    if (wait > 0) await Promise.race([p.done, this.pause(wait * 1000)]);
    x.respond(201, this.view(p, false));
  }

  private newPrediction(r: CreateRequest): SimPrediction {
    const id = randomBytes(13)
      .toString('base64url')
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'q')
      .slice(0, 26);
    let finish = (): void => undefined;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const p: SimPrediction = {
      seq: ++this.seq,
      id,
      ...r,
      createdAt: Date.now(),
      startedAt: null,
      completedAt: null,
      status: 'starting',
      error: null,
      output: null,
      predictTime: null,
      fate: this.pickFate(),
      done,
      finish,
    };
    this.predictions.set(id, p);
    this.after(this.o.predictionMs / 2, () => this.start(p));
    this.after(this.o.predictionMs, () => this.end(p));
    return p;
  }

  private pickFate(): Fate {
    const f = this.faults;
    const lost = consume(f.losePredictions) ? (f.losePredictions!.mode ?? 'failed') : null;
    const failed = consume(f.failPredictions);
    return {
      ends: lost === 'failed' ? 'interrupted' : failed ? 'model-error' : 'succeeded',
      vanished: lost === 'vanished',
      expireOutput: consume(f.expireOutputs),
      drift: consume(f.meteredDrift) ? f.meteredDrift!.factor : 1,
      webhookCopies: consume(f.webhookTwice) ? 2 : 1,
      webhookDelayMs: consume(f.webhookLate) ? f.webhookLate!.ms : 0,
      webhookNever: consume(f.webhookNever),
    };
  }

  private start(p: SimPrediction): void {
    if (p.status !== 'starting') return;
    p.status = 'processing';
    p.startedAt = Date.now();
    if (p.webhook && p.events.includes('start')) void this.webhooks.send(p.webhook, 'start', this.view(p, false));
  }

  /** The end as fated: output ready (rendered) first, then the charge, then the `completed` webhook. */
  private async end(p: SimPrediction): Promise<void> {
    if (TERMINAL_STATUSES.includes(p.status)) return;
    this.start(p);
    const { ends, drift } = p.fate;
    const share = ends === 'succeeded' ? 1 : ends === 'model-error' ? 0.5 : 0.25;
    if (ends === 'succeeded') p.output = await this.storeOutput(p);
    if (this.closing.signal.aborted || TERMINAL_STATUSES.includes(p.status)) return;
    if (ends === 'model-error') p.error = 'the model raised an error (injected)';
    if (ends === 'interrupted') p.error = 'Prediction interrupted; please retry (code: PA)';
    this.finish(p, ends === 'succeeded' ? 'succeeded' : 'failed', this.o.predictSeconds * share * drift);
  }

  private finish(p: SimPrediction, status: PredictionStatus, seconds: number): void {
    p.status = status;
    p.completedAt = Date.now();
    p.predictTime = Math.round(seconds * 1000) / 1000;
    if (status !== 'aborted') this.charge(p);
    p.finish();
    const { webhook, fate } = p;
    if (!webhook || fate.webhookNever) return;
    const send = () => void this.webhooks.send(webhook, 'completed', this.view(p, false), fate.webhookCopies);
    if (fate.webhookDelayMs > 0) this.after(fate.webhookDelayMs, send);
    else send();
  }

  private charge(p: SimPrediction): void {
    const seconds = p.predictTime ?? 0;
    const ref = p.input[CORRELATION_INPUT];
    this.charges.push({
      id: p.id,
      model: p.model,
      status: p.status,
      predict_time: seconds,
      hardware: this.o.hardware,
      price_per_second: this.o.usdPerSecond,
      amount: seconds * this.o.usdPerSecond,
      amount_cents: meteredCents(seconds, this.o.usdPerSecond),
      currency: 'USD',
      correlation: typeof ref === 'string' ? ref : null,
    });
  }

  private async storeOutput(p: SimPrediction): Promise<string> {
    const step = stepOf(p.input[CORRELATION_INPUT]);
    const kind: PaidStep = step?.kind ?? 'video';
    const token = randomBytes(16).toString('hex');
    const name = kind === 'cover' ? 'output.png' : 'output.mp4';
    const rendered =
      this.renderer && step ? this.renderer.render({ kind, episodeId: step.episodeId, round: step.round }) : null;
    const bytes = Promise.resolve(rendered).then((b) => b ?? syntheticBytes(p.id, kind === 'cover' ? 2048 : 8192));
    this.files.set(token, { prediction: p, bytes, type: kind === 'cover' ? 'image/png' : 'video/mp4' });
    await bytes;
    return `${this.url}/files/${token}/${name}`;
  }

  private async file(x: Exchange, token: string): Promise<void> {
    const f = this.files.get(token);
    x.entry.predictionId = f?.prediction.id ?? null;
    const expired = f?.prediction.fate.expireOutput === true && this.faults.expireOutputs !== undefined;
    if (!f || expired || this.removed(f.prediction)) {
      return x.respond(404, problem(404, 'Not found', 'no such file'));
    }
    x.respond(200, await f.bytes);
  }

  private fileType(url: URL): string {
    return this.files.get(url.pathname.split('/')[2] ?? '')?.type ?? 'application/octet-stream';
  }

  private get(x: Exchange, id: string): void {
    const p = this.predictions.get(id);
    x.entry.predictionId = p?.id ?? null;
    if (!p || this.hidden(p)) return x.respond(404, problem(404, 'Not found', 'no such prediction'));
    x.respond(200, this.view(p, false));
  }

  private cancel(x: Exchange, id: string): void {
    const p = this.predictions.get(id);
    x.entry.predictionId = p?.id ?? null;
    if (!p || this.hidden(p)) return x.respond(404, problem(404, 'Not found', 'no such prediction'));
    if (!TERMINAL_STATUSES.includes(p.status)) {
      const ran = p.startedAt === null ? 0 : (Date.now() - p.startedAt) / (this.o.predictionMs / 2);
      this.finish(p, 'canceled', Math.min(1, ran) * this.o.predictSeconds * p.fate.drift);
    }
    x.respond(200, this.view(p, false));
  }

  /** Newest first, 100 (pageSize) a page; the cursor is the position after the page's last prediction. */
  private list(x: Exchange): void {
    const q = x.url.searchParams;
    const after = dateParam(q.get('created_after'), -Infinity);
    const before = dateParam(q.get('created_before'), Infinity);
    const cursor = q.get('cursor');
    const from = cursor === null ? Infinity : Number(Buffer.from(cursor, 'base64url').toString('utf8').slice(2));
    if (Number.isNaN(after) || Number.isNaN(before) || Number.isNaN(from)) {
      return x.respond(400, problem(400, 'Bad request', 'invalid created_after, created_before or cursor'));
    }
    const shown = [...this.predictions.values()]
      .filter((p) => !this.hidden(p) && p.seq < from && p.createdAt > after && p.createdAt < before)
      .sort((a, b) => b.seq - a.seq);
    const page = shown.slice(0, this.o.pageSize);
    let next: string | null = null;
    if (shown.length > page.length) {
      const link = new URL('/v1/predictions', this.url);
      for (const [k, v] of q) if (k !== 'cursor') link.searchParams.set(k, v);
      link.searchParams.set('cursor', Buffer.from(`p=${page.at(-1)!.seq}`).toString('base64url'));
      next = link.href;
    }
    x.respond(200, { previous: null, next, results: page.map((p) => this.view(p, true)) });
  }

  /** A `vanished` prediction is unknown to get, cancel and the list while the fault set keeps `losePredictions`. */
  private hidden(p: SimPrediction): boolean {
    return p.fate.vanished && this.faults.losePredictions !== undefined;
  }

  private removed(p: SimPrediction): boolean {
    return Date.now() - p.createdAt >= this.o.retentionMs;
  }

  private view(p: SimPrediction, listed: boolean): Record<string, unknown> {
    const removed = this.removed(p);
    const terminal = TERMINAL_STATUSES.includes(p.status);
    const iso = (t: number | null) => (t === null ? undefined : new Date(t).toISOString());
    const base = `${this.url}/v1/predictions/${p.id}`;
    return {
      id: p.id,
      model: p.model,
      version: p.version,
      input: removed ? {} : p.input,
      ...(listed ? {} : { logs: removed ? null : terminal ? 'Done.\n' : '' }),
      output: removed ? null : p.output,
      data_removed: removed,
      error: p.error,
      source: 'api',
      status: p.status,
      created_at: iso(p.createdAt),
      started_at: iso(p.startedAt),
      completed_at: iso(p.completedAt),
      ...(p.webhook ? { webhook: p.webhook, webhook_events_filter: p.events } : {}),
      ...(terminal
        ? { metrics: { predict_time: p.predictTime, total_time: ((p.completedAt ?? 0) - p.createdAt) / 1000 } }
        : {}),
      urls: { get: base, cancel: `${base}/cancel`, web: `https://replicate.com/p/${p.id}` },
    };
  }

  private after(ms: number, work: () => unknown): void {
    if (this.closing.signal.aborted) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void work();
    }, ms);
    this.timers.add(timer);
  }

  private pause(ms: number): Promise<void> {
    return ms <= 0 ? Promise.resolve() : new Promise((resolve) => this.after(ms, resolve));
  }

  /** Constant time: both sides hashed to equal length first. */
  private authorized(header: string | undefined): boolean {
    const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), this.tokenDigest);
  }
}

interface CreateRequest {
  model: string;
  version: string;
  input: Record<string, unknown>;
  webhook: string | null;
  events: string[];
}

const EVENTS = ['start', 'output', 'logs', 'completed'];

/** The create body checked as Replicate does: a problem (400/422 with `invalid_fields`) or the request. */
function parseCreate(
  body: Buffer,
  model: string | null,
): CreateRequest | (Record<string, unknown> & { status: number }) {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return problem(400, 'Bad request', 'the body is not JSON');
  }
  const b = (json !== null && typeof json === 'object' ? json : {}) as Record<string, unknown>;
  const invalid = (field: string, description: string) => ({
    ...problem(422, 'Input validation failed', `- ${field}: ${description}\n`),
    invalid_fields: [{ type: 'invalid', field, description }],
  });
  if (b.input === null || typeof b.input !== 'object' || Array.isArray(b.input))
    return invalid('input', 'Invalid type. Expected: object');
  const version = model === null ? b.version : (b.version ?? 'hidden');
  if (typeof version !== 'string' || version === '') return invalid('version', 'is required');
  const webhook = b.webhook ?? null;
  if (webhook !== null && (typeof webhook !== 'string' || !webhookAllowed(webhook))) {
    return invalid('webhook', 'must be an HTTPS URL');
  }
  const events = b.webhook_events_filter ?? ['output', 'completed'];
  if (!Array.isArray(events) || events.some((e) => typeof e !== 'string' || !EVENTS.includes(e))) {
    return invalid('webhook_events_filter', `values are ${EVENTS.join(', ')}`);
  }
  const named = model ?? /^[^/:]+\/[^/:]+/.exec(version)?.[0] ?? 'unknown/model';
  return { model: named, version, input: b.input as Record<string, unknown>, webhook, events: events as string[] };
}

/** https; plain http only to this machine (the tests' receivers). */
function webhookAllowed(raw: string): boolean {
  try {
    const url = new URL(raw);
    return (
      url.protocol === 'https:' ||
      (url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))
    );
  } catch {
    return false;
  }
}

/** `Prefer: wait` (60 s) or `wait=N` (1–60); 0 without it. */
function preferWaitSeconds(header: string | undefined): number {
  const m = /(?:^|[\s,;])wait(?:=(\d{1,2}))?(?:$|[\s,;])/.exec(header ?? '');
  if (!m) return 0;
  return Math.min(60, Math.max(1, Number(m[1] ?? 60)));
}

/** A date of the query, in ms; `fallback` when absent; NaN when not a date. */
function dateParam(raw: string | null, fallback: number): number {
  return raw === null ? fallback : Date.parse(raw);
}

function stepOf(ref: unknown): { episodeId: string; kind: PaidStep; round: number | null } | null {
  const m = typeof ref === 'string' ? /^(.+):([a-z]+):r\d+$/.exec(ref) : null;
  const kind = PAID_STEPS.find((s) => s === m?.[2]);
  return m && kind ? { episodeId: m[1]!, kind, round: roundOfClientRef(ref as string) } : null;
}

function problem(status: number, title: string, detail: string): Record<string, unknown> & { status: number } {
  return { title, detail, status };
}

/** sha256(id ‖ i) blocks: the same prediction always yields the same bytes. */
function syntheticBytes(id: string, size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0, offset = 0; offset < size; i++)
    offset += createHash('sha256').update(`${id}:${i}`).digest().copy(out, offset);
  return out;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The body, or null when over the limit (the rest is not read). */
function readBody(req: http.IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? null : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
