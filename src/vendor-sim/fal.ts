/**
 * A local stand-in for fal (src/vendor-sim/README.md, fal): the queue API, the Platform API's request
 * listing, billing events and pricing, signed webhooks with redelivery, and expiring output files, over real HTTP on
 * 127.0.0.1, one port for all of them. `billing()` is the test-only journal of what was charged (the ground truth).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorType, PipelineError } from '../domain/errors';
import { parseFalFaults, type FalFaults } from './fal-faults';
import {
  chargeOf,
  errorBodyOf,
  queuedRequest,
  renderTarget,
  statusOf,
  type FalCharge,
  type FalRequest,
} from './fal-requests';
import { FalWebhookSender, type WebhookDelivery } from './fal-webhooks';
import { createMediaRenderer, type MediaRenderer } from './media-render';

export type { FalFaults } from './fal-faults';
export type { FalCharge } from './fal-requests';

export interface FalSimulatorOptions {
  apiKey: string;
  port?: number;
  /** One attempt, from submission to the end (IN_PROGRESS from half of it). Default 50 ms. */
  jobDurationMs?: number;
  /** A request is not listed until this long after its submission (docs silent on queued ones). Default 1 s. */
  listingDelayMs?: number;
  /** How long an output file lives when the request does not say (X-Fal-Object-Lifecycle-Preference). Default 1 h. */
  fileTtlMs?: number;
  /** The model's price: `unitsPerRequest` output units at `unitPriceCents` each. Default 5 seconds at 7 cents. */
  unitPriceCents?: number;
  unit?: string;
  unitsPerRequest?: number;
  /** Webhook redelivery after a failed delivery: this many retries spread over the window (fal: 10 in 2 h). */
  webhookRetries?: number;
  webhookRetryWindowMs?: number;
  media?: 'render' | 'synthetic';
  ffmpeg?: string;
  faults?: FalFaults;
  log?: (line: string) => void;
  /** Each request once answered (or dropped): the campaign's view of the traffic. */
  onRequest?: (entry: FalRequestLog) => void;
}

export interface FalRequestLog {
  method: string;
  path: string;
  status: number | null;
  dropped: boolean;
  requestId: string | null;
}

export interface FalSimulator {
  readonly url: string;
  /** Base URLs as the adapter takes them (EPISODES_FAL_QUEUE_URL, _API_URL, _JWKS_URL). */
  readonly queueUrl: string;
  readonly apiUrl: string;
  readonly jwksUrl: string;
  readonly port: number;
  close(): Promise<void>;
  setFaults(faults: FalFaults): void;
  faults(): FalFaults;
  /** Every charge, as fal's billing would show it: the ground truth for "did we pay twice?". */
  billing(): FalCharge[];
  requests(): FalRequestLog[];
  webhooks(): WebhookDelivery[];
  /** The signed headers fal would send with `body` (tests forge and replay with them). */
  signWebhook(requestId: string, body: Buffer, timestampS?: number): Record<string, string>;
  /** Rotates the webhook key: a new one signs, the JWKS lists only it. */
  rotateWebhookKey(): void;
}

interface Exchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  url: URL;
  entry: FalRequestLog;
  body: Buffer;
}

const MAX_BODY_BYTES = 256 * 1024;

export async function startFalSimulator(options: FalSimulatorOptions): Promise<FalSimulator> {
  const sim = new FalSim(options);
  await sim.listen(options.port ?? 0);
  return sim.handle();
}

class FalSim {
  private readonly keyDigest: Buffer;
  private currentFaults: FalFaults;
  private readonly requestsById = new Map<string, FalRequest>();
  /** `early`: deleted before its time by the `expireFiles` fault, for as long as the fault set keeps it. */
  private readonly files = new Map<string, { bytes: Buffer; type: string; expiresAt: number; early: boolean }>();
  private readonly charges: FalCharge[] = [];
  private readonly log: FalRequestLog[] = [];
  private readonly renderer: MediaRenderer | null;
  private readonly hooks: FalWebhookSender;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly server = http.createServer((req, res) => this.serve(req, res));
  private port = 0;

  constructor(private readonly o: FalSimulatorOptions) {
    if (o.apiKey.length === 0) throw new PipelineError(ErrorType.CredentialsMissing, 'simulator needs an API key');
    this.keyDigest = digest(o.apiKey);
    this.currentFaults = parseFalFaults(o.faults ?? {});
    this.renderer = o.media === 'synthetic' ? null : createMediaRenderer({ ffmpeg: o.ffmpeg });
    this.hooks = new FalWebhookSender({
      retries: o.webhookRetries ?? 10,
      windowMs: o.webhookRetryWindowMs ?? 2 * 3600_000,
      log: o.log,
    });
  }

  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  handle(): FalSimulator {
    const url = `http://127.0.0.1:${this.port}`;
    return {
      url,
      queueUrl: url,
      apiUrl: `${url}/v1`,
      jwksUrl: `${url}/.well-known/jwks.json`,
      port: this.port,
      close: () => this.close(),
      setFaults: (faults) => void (this.currentFaults = parseFalFaults(faults)),
      faults: () => structuredClone(this.currentFaults),
      billing: () => structuredClone(this.charges),
      requests: () => structuredClone(this.log),
      webhooks: () => structuredClone(this.hooks.deliveries),
      signWebhook: (id, body, ts) => this.hooks.signedHeaders(id, body, ts),
      rotateWebhookKey: () => void this.hooks.rotateKey(),
    };
  }

  private async close(): Promise<void> {
    this.hooks.close();
    for (const t of this.timers) clearTimeout(t);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const entry: FalRequestLog = {
      method: (req.method ?? '').slice(0, 16),
      path: (url.pathname + url.search).slice(0, 512),
      status: null,
      dropped: false,
      requestId: null,
    };
    this.log.push(entry);
    if (this.log.length > 10_000) this.log.splice(0, this.log.length - 10_000);
    readBody(req)
      .then((body) => this.route({ req, res, url, entry, body }))
      .catch((e: unknown) => {
        this.o.log?.(`${entry.method} ${entry.path} internal error: ${(e as Error).message}`);
        if (!res.headersSent) this.json({ req, res, url, entry, body: Buffer.alloc(0) }, 500, { detail: 'error' });
      });
  }

  private json(x: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
    x.entry.status = status;
    this.o.log?.(`${x.entry.method} ${x.entry.path} ${status}`);
    const payload = Buffer.from(JSON.stringify(body));
    x.res.writeHead(status, { 'content-type': 'application/json', 'content-length': payload.length, ...headers });
    x.res.end(payload);
    this.o.onRequest?.(structuredClone(x.entry));
  }

  private route(x: Exchange): void {
    const path = x.url.pathname;
    // Public, as on fal: the webhook keys and the CDN's files need no key.
    if (path === '/.well-known/jwks.json' && x.req.method === 'GET') return this.json(x, 200, this.hooks.jwks);
    if (path.startsWith('/files/')) return this.file(x);
    if (!this.authorized(x.req.headers.authorization)) {
      return this.json(x, 401, { detail: 'Invalid Key Authorization header format' });
    }
    if (path === '/_sim/faults') return this.routeFaults(x);
    if (path === '/_sim/billing') return this.json(x, 200, { charges: this.charges });
    if (path.startsWith('/v1/')) return this.platform(x);
    const m = /^\/([^/]+\/[^/]+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(path);
    if (m && x.req.method === 'GET') return this.read(x, m[1]!, m[2]!, m[3] === '/status');
    if (x.req.method === 'POST' && /^\/[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+){1,5}$/.test(path)) {
      return this.submit(x, path.slice(1));
    }
    return this.json(x, 404, { detail: 'Not Found' });
  }

  private submit(x: Exchange, endpointId: string): void {
    if (consumeCount(this.currentFaults.fail5xx)) {
      return this.json(x, 503, { detail: 'Service unavailable', error_type: 'runner_scheduling_failure' });
    }
    const input = parseObject(x.body);
    if (!input) {
      return this.json(x, 422, { detail: [{ loc: ['body'], msg: 'Input should be an object', type: 'dict_type' }] });
    }
    const webhook = x.url.searchParams.get('fal_webhook');
    const r = queuedRequest(
      {
        endpointId,
        input,
        webhook,
        noRetry: /^(1|true|yes)$/i.test(String(x.req.headers['x-fal-no-retry'] ?? '')),
        ttlMs: ttlOf(x.req.headers['x-fal-object-lifecycle-preference']) ?? this.o.fileTtlMs ?? 3600_000,
        durationMs: this.o.jobDurationMs ?? 50,
        unitsPerRequest: this.o.unitsPerRequest ?? 5,
      },
      this.currentFaults,
      Date.now(),
    );
    this.requestsById.set(r.request_id, r);
    x.entry.requestId = r.request_id;
    this.schedule(r);
    if (consumeCount(this.currentFaults.acceptThenDrop)) {
      x.entry.dropped = true;
      this.o.log?.(`POST /${endpointId} queued ${r.request_id}, connection dropped (fault)`);
      x.req.socket.destroy();
      return void this.o.onRequest?.(structuredClone(x.entry));
    }
    if (consumeCount(this.currentFaults.gateway5xxAfterQueue)) {
      return this.json(x, 504, { detail: 'Request timed out', error_type: 'request_timeout' });
    }
    const app = endpointId.split('/').slice(0, 2).join('/');
    const base = `${this.queueBase()}/${app}/requests/${r.request_id}`;
    this.json(x, 200, {
      status: 'IN_QUEUE',
      request_id: r.request_id,
      gateway_request_id: r.gateway_request_ids[0],
      response_url: base,
      status_url: `${base}/status`,
      cancel_url: `${base}/cancel`,
      queue_position: [...this.requestsById.values()].filter((q) => !q.ended).length - 1,
    });
  }

  /** The request ends at its time: output rendered, billed once, file stored, webhook sent. */
  private schedule(r: FalRequest): void {
    const target = renderTarget(r.input);
    const bytes = this.renderer
      ? this.renderer.render(target).then((b) => b ?? synthetic(r.request_id))
      : Promise.resolve(synthetic(r.request_id));
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        void bytes.then((b) => this.end(r, target.kind === 'cover' ? 'image/png' : 'video/mp4', b));
      },
      Math.max(0, r.ends_at - Date.now()),
    );
    this.timers.add(t);
  }

  private end(r: FalRequest, type: string, bytes: Buffer): void {
    r.ends_at = Math.max(r.ends_at, Date.now());
    const name = type === 'image/png' ? 'output.png' : 'output.mp4';
    const fileUrl = `${this.queueBase()}/files/${r.request_id}/${name}`;
    if (r.error_status === null) {
      const expiresAt = r.ends_at + r.ttl_ms;
      this.files.set(`/files/${r.request_id}/${name}`, { bytes, type, expiresAt, early: r.expire_early });
      const file = { url: fileUrl, content_type: type, file_name: name, file_size: bytes.length };
      r.output = type === 'image/png' ? { image: file, seed: 1 } : { video: file, seed: 1 };
    }
    const price = { unitPriceCents: this.o.unitPriceCents ?? 7, unit: this.o.unit ?? 'second', currency: 'USD' };
    const ref = typeof r.input.episodes_ref === 'string' ? r.input.episodes_ref : null;
    const charge = chargeOf(r, price, ref);
    if (charge) this.charges.push(charge);
    r.ended = true;
    if (r.webhook && r.webhook_fault?.kind !== 'never') {
      const error = r.error_status === null ? null : errorBodyOf(r.error_status);
      this.hooks.deliver(
        r.webhook,
        r.request_id,
        {
          request_id: r.request_id,
          gateway_request_id: r.gateway_request_ids.at(-1),
          status: error ? 'ERROR' : 'OK',
          payload: error ? error.body : r.output,
          error: error ? error.message : null,
        },
        {
          delayMs: r.webhook_fault?.kind === 'late' ? r.webhook_fault.ms : 0,
          duplicate: r.webhook_fault?.kind === 'twice',
        },
      );
    }
  }

  private read(x: Exchange, app: string, id: string, statusOnly: boolean): void {
    const r = this.requestsById.get(id);
    x.entry.requestId = r?.request_id ?? null;
    if (
      !r ||
      (r.lost && this.currentFaults.loseJobs) ||
      (r.endpoint_id !== app && !r.endpoint_id.startsWith(`${app}/`))
    ) {
      return this.json(x, 404, { detail: 'Request not found' });
    }
    const status = statusOf(r, Date.now());
    if (statusOnly) return this.json(x, 200, this.statusBody(r, app, status));
    if (status !== 'COMPLETED') return this.json(x, 400, { detail: 'Request is still in progress' });
    if (r.error_status !== null) {
      const e = errorBodyOf(r.error_status);
      return this.json(x, r.error_status, e.body, e.type ? { 'x-fal-error-type': e.type } : {});
    }
    this.json(x, 200, r.output);
  }

  private statusBody(r: FalRequest, app: string, status: string): Record<string, unknown> {
    const base = `${this.queueBase()}/${app}/requests/${r.request_id}`;
    const urls = { response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
    if (status === 'IN_QUEUE') return { status, request_id: r.request_id, queue_position: 0, ...urls };
    if (status === 'IN_PROGRESS') return { status, request_id: r.request_id, ...urls, logs: [] };
    const done = { status, request_id: r.request_id, ...urls, logs: [], metrics: { inference_time: 0.05 } };
    if (r.error_status === null) return done;
    const e = errorBodyOf(r.error_status);
    return { ...done, metrics: {}, error: e.message, error_type: e.type };
  }

  private file(x: Exchange): void {
    const f = this.files.get(x.url.pathname);
    x.entry.requestId = /^\/files\/([^/]+)\//.exec(x.url.pathname)?.[1] ?? null;
    const early = f?.early === true && this.currentFaults.expireFiles !== undefined;
    if (!f || early || Date.now() >= f.expiresAt) return this.json(x, 404, { detail: 'File not found' });
    x.entry.status = 200;
    x.res.writeHead(200, { 'content-type': f.type, 'content-length': f.bytes.length });
    x.res.end(f.bytes);
    this.o.onRequest?.(structuredClone(x.entry));
  }

  private platform(x: Exchange): void {
    const q = x.url.searchParams;
    const endpoint = q.get('endpoint_id');
    if (x.req.method !== 'GET') return this.json(x, 405, { detail: 'Method Not Allowed' });
    if (!endpoint) return this.json(x, 422, { detail: [{ loc: ['query', 'endpoint_id'], msg: 'Field required' }] });
    const path = x.url.pathname;
    if (path === '/v1/models/pricing') {
      const price = { unit_price: (this.o.unitPriceCents ?? 7) / 100, unit: this.o.unit ?? 'second', currency: 'USD' };
      return this.json(x, 200, { prices: [{ endpoint_id: endpoint, ...price }], next_cursor: null, has_more: false });
    }
    if (path === '/v1/models/requests/by-endpoint') return this.paged(x, this.listed(endpoint, q), 50);
    if (path === '/v1/models/billing-events') return this.paged(x, this.events(endpoint, q), 100);
    return this.json(x, 404, { detail: 'Not Found' });
  }

  /** The listing: a request is shown once `listingDelayMs` passed since its submission; a lost one never. */
  private listed(endpoint: string, q: URLSearchParams): unknown[] {
    const now = Date.now();
    const payloads = q.get('expand')?.split(',').includes('payloads') ?? false;
    const window = timeWindow(q, q.get('request_id') ? 90 : 1);
    return [...this.requestsById.values()]
      .filter((r) => r.endpoint_id === endpoint && !(r.lost && this.currentFaults.loseJobs))
      .filter((r) => now - r.submitted_at >= (this.o.listingDelayMs ?? 1000))
      .filter((r) => (q.get('request_id') ?? r.request_id) === r.request_id && inWindow(r.submitted_at, window))
      .sort((a, b) => b.submitted_at - a.submitted_at)
      .map((r) => ({
        request_id: r.request_id,
        endpoint_id: r.endpoint_id,
        sent_at: new Date(r.submitted_at).toISOString(),
        started_at: new Date(r.submitted_at + 1).toISOString(),
        ended_at: r.ended ? new Date(r.ends_at).toISOString() : null,
        status_code: r.ended ? (r.error_status ?? 200) : null,
        duration: r.ended ? (r.ends_at - r.submitted_at) / 1000 : null,
        ...(payloads ? { json_input: r.input, json_output: r.output } : {}),
      }));
  }

  private events(endpoint: string, q: URLSearchParams): unknown[] {
    const window = timeWindow(q, 90);
    return this.charges
      .filter((c) => c.endpoint_id === endpoint && (q.get('request_id') ?? c.request_id) === c.request_id)
      .filter((c) => inWindow(Date.parse(c.at), window))
      .map((c) => ({
        request_id: c.request_id,
        endpoint_id: c.endpoint_id,
        timestamp: c.at,
        unit: c.unit,
        unit_quantity: c.unit_quantity,
        unit_price: c.unit_price_cents / 100,
        cost_total: c.amount_cents / 100,
        currency: c.currency,
      }));
  }

  private paged(x: Exchange, items: unknown[], defaultLimit: number): void {
    const limit = Math.min(Number(x.url.searchParams.get('limit') ?? defaultLimit) || defaultLimit, 100);
    const offset = Number(x.url.searchParams.get('cursor') ?? 0) || 0;
    const page = items.slice(offset, offset + limit);
    const more = offset + limit < items.length;
    this.json(x, 200, { items: page, next_cursor: more ? String(offset + limit) : null, has_more: more });
  }

  private routeFaults(x: Exchange): void {
    if (x.req.method === 'GET') return this.json(x, 200, this.currentFaults);
    try {
      this.currentFaults = parseFalFaults(JSON.parse(x.body.toString('utf8')));
    } catch {
      return this.json(x, 400, { detail: 'body must be a fal fault set (docs/vendors.md)' });
    }
    this.json(x, 200, this.currentFaults);
  }

  private queueBase(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private authorized(header: string | undefined): boolean {
    const m = /^Key +(\S+) *$/.exec(header ?? '');
    return m !== null && timingSafeEqual(digest(m[1]!), this.keyDigest);
  }
}

function consumeCount(fault: { count: number } | undefined): boolean {
  if (!fault || fault.count <= 0) return false;
  fault.count -= 1;
  return true;
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) return void req.socket.destroy();
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseObject(body: Buffer): Record<string, unknown> | null {
  try {
    const json: unknown = JSON.parse(body.toString('utf8'));
    return json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function ttlOf(header: string | string[] | undefined): number | null {
  try {
    const seconds = (JSON.parse(String(header)) as { expiration_duration_seconds?: unknown })
      .expiration_duration_seconds;
    return typeof seconds === 'number' && seconds > 0 ? seconds * 1000 : null;
  } catch {
    return null;
  }
}

/** `start` (default `defaultDays` ago) and `end` (default now) of a Platform API query. */
function timeWindow(q: URLSearchParams, defaultDays: number): { start: number; end: number } {
  const start = Date.parse(q.get('start') ?? '') || Date.now() - defaultDays * 86_400_000;
  const end = Date.parse(q.get('end') ?? '') || Number.MAX_SAFE_INTEGER;
  return { start, end };
}

function inWindow(at: number, w: { start: number; end: number }): boolean {
  return at >= w.start && at < w.end;
}

function synthetic(seed: string): Buffer {
  return Buffer.concat(Array.from({ length: 64 }, (_, i) => createHash('sha256').update(`${seed}:${i}`).digest()));
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
