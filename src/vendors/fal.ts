/**
 * fal's queue API as a vendor (docs/vendors.md, "fal"): no idempotency key, so a submission whose outcome is unknown
 * is found again by the Platform API's request listing, which shows each request's input and so our correlation
 * value (`episodes_ref`, fal-api.ts); cost is metered and read from fal's billing events when the request ends;
 * outputs are CDN URLs that expire after the time this adapter asks for (X-Fal-Object-Lifecycle-Preference).
 *
 * A job id is `<ref>@<request_id>`: fal's status call shows neither the input nor our value, and a paid step must know
 * which step a job belongs to at every poll. The listing vouches for the ref (`client_ref`) once it shows the request.
 */
import type { ZodType } from 'zod';
import { ErrorType } from '../domain/errors';
import type { PaidStep } from '../domain/paid-step';
import type { VendorProfile } from '../domain/vendor-profile';
import { parseVendorBaseUrl } from '../vendor-api/endpoint';
import { VendorError } from '../vendor-api/vendor-error';
import {
  billingEventsSchema,
  FAL_MODEL_PATTERN,
  FAL_REF_FIELD,
  FAL_REF_QUERY,
  FAL_REQUEST_ID_PATTERN,
  firstFileUrl,
  jwksSchema,
  listSchema,
  parseRef,
  pricingSchema,
  refOfInput,
  statusSchema,
  submitSchema,
  usdToCents,
  type FalBillingEvent,
  type FalListItem,
} from './fal-api';
import { FalHttp } from './fal-http';
import { FalJwks } from './fal-jwks';
import { refused, verifyFalWebhook } from './fal-webhook';
import type {
  CallbackReader,
  CallbackRequest,
  PriceRange,
  Submission,
  VendorAdapter,
  VendorCharge,
  VendorJob,
  VendorLogger,
} from './port';

/** How long fal keeps an output, as the adapter asks per request: a day is ample for a download seconds later. */
export const FAL_DEFAULT_ARTIFACT_TTL_MS = 24 * 3600_000;
/** How far back a lookup lists requests and billing events (billing events allow at most 90 days). */
const LOOKBACK_MS = 30 * 24 * 3600_000;
/** Pages of 100 a lookup reads at most before it says it cannot tell. */
const MAX_PAGES = 50;
/** fal's promises (docs/vendors.md has the source of each). */
export function falProfile(
  maxCents: Readonly<Record<PaidStep, number>>,
  artifactTtlMs = FAL_DEFAULT_ARTIFACT_TTL_MS,
): VendorProfile {
  return {
    idempotency: 'none',
    lookup: 'list-correlation',
    // Docs silent on whether a queued request is listed: an empty listing proves nothing.
    lookupSeesEveryJob: false,
    completion: 'webhook',
    charging: { mode: 'metered', maxCents },
    artifactTtlMs,
    // 5xx are unbilled, but a 422 may be billed (GPU time spent): a failure's amount comes from the billing events.
    failedJobsUnbilled: false,
    billingJournal: true,
  };
}

export interface FalAdapterOptions {
  /** `https://queue.fal.run` (https, or http to localhost only). */
  queueUrl: string | URL;
  /** `https://api.fal.ai/v1`. */
  apiUrl: string | URL;
  /** fal's webhook JWKS, `https://rest.alpha.fal.ai/.well-known/jwks.json`. */
  jwksUrl: string | URL;
  apiKey: string;
  /** `owner/name[/subpath]`, e.g. `fal-ai/kling-video/v2.1/standard/text-to-video`. */
  model: string;
  maxCents: Readonly<Record<PaidStep, number>>;
  artifactTtlMs?: number;
  timeoutMs?: number;
  maxResponseBytes?: number;
  maxArtifactBytes?: number;
  maxCallbackBytes?: number;
  logger?: VendorLogger;
  /** The clock the webhook's timestamp window (and the JWKS's age) is checked against. */
  now?: () => number;
  /** fal's webhook keys (`falJwks`), shared by the adapters of one opener; absent: this adapter keeps its own. */
  jwks?: FalJwks;
}

/** What checks fal's webhooks: the account's JWKS, whatever the model a request ran. */
export type FalCallbackOptions = Pick<
  FalAdapterOptions,
  'jwksUrl' | 'timeoutMs' | 'maxCallbackBytes' | 'logger' | 'now' | 'jwks'
>;

interface Fal {
  o: FalAdapterOptions;
  http: FalHttp;
  queue: URL;
  api: URL;
  /** `owner/name`: status, result and cancel live under it, whatever the model's subpath. */
  app: string;
  profile: VendorProfile;
}

export function falAdapter(o: FalAdapterOptions): VendorAdapter {
  if (!FAL_MODEL_PATTERN.test(o.model)) {
    throw new VendorError({
      type: ErrorType.VendorRejected,
      message: `fal model ${JSON.stringify(o.model.slice(0, 200))} is not owner/name[/subpath]`,
      operation: 'submitJob',
      reason: 'malformed-response',
      outcome: 'not-accepted',
    });
  }
  const fal: Fal = {
    o,
    http: new FalHttp(o.apiKey, o.timeoutMs ?? 10_000, o.logger),
    queue: parseVendorBaseUrl(String(o.queueUrl)),
    api: parseVendorBaseUrl(String(o.apiUrl)),
    app: o.model.split('/').slice(0, 2).join('/'),
    profile: falProfile(o.maxCents, o.artifactTtlMs),
  };
  const g = <T>(fn: () => Promise<T>) => fal.http.guard(fn);
  const callbacks = falCallbackReader(o);
  return {
    name: 'fal',
    profile: fal.profile,
    prices: () => g(() => prices(fal)),
    submit: (s) => g(() => submit(fal, s)),
    find: (ref) => g(async () => (await listed(fal, { ref })).map((item) => listedJob(item))),
    get: (jobId) => g(() => get(fal, jobId)),
    download: (job) => g(() => download(fal, job)),
    billing: (ref) => g(() => billing(fal, ref)),
    readCallback: (request) => callbacks.readCallback(request),
  };
}

async function prices(fal: Fal): Promise<Record<PaidStep, PriceRange>> {
  const url = apiUrl(fal, 'models/pricing', { endpoint_id: fal.o.model });
  const res = await fal.http.send('getPrices', { url, maxResponseBytes: 256 * 1024 });
  const price = fal.http.parse('getPrices', res, pricingSchema).prices.find((p) => p.endpoint_id === fal.o.model);
  const unit = price ? usdToCents(price.unit_price) : 0;
  const range = (step: PaidStep): PriceRange => {
    const max = fal.o.maxCents[step];
    return { min_cents: Math.min(unit, max), max_cents: max, currency: price?.currency ?? 'USD' };
  };
  return { video: range('video'), cover: range('cover'), rework: range('rework'), assembly: range('assembly') };
}

async function submit(fal: Fal, s: Submission): Promise<VendorJob> {
  const url = new URL(fal.o.model, fal.queue);
  if (s.callbackUrl) {
    const callback = new URL(s.callbackUrl);
    callback.searchParams.set(FAL_REF_QUERY, s.ref);
    url.searchParams.set('fal_webhook', callback.href);
  }
  const ttlS = Math.ceil(fal.profile.artifactTtlMs! / 1000);
  const res = await fal.http.send('submitJob', {
    url,
    method: 'POST',
    body: Buffer.from(JSON.stringify({ ...s.spec, [FAL_REF_FIELD]: s.ref })),
    headers: {
      'content-type': 'application/json',
      // The stated time the profile promises; platform retries stay on (they keep the request id and bill once).
      'x-fal-object-lifecycle-preference': JSON.stringify({ expiration_duration_seconds: ttlS }),
    },
    maxResponseBytes: 64 * 1024,
  });
  const accepted = fal.http.parse('submitJob', res, submitSchema);
  return {
    job_id: jobIdOf(s.ref, accepted.request_id),
    kind: s.step,
    episode_id: s.episodeId,
    status: 'queued',
    cost: null,
    artifact: null,
    client_ref: s.ref,
    accepted_at: new Date().toISOString(),
  };
}

async function get(fal: Fal, jobId: string): Promise<VendorJob> {
  const { ref, requestId } = parseJobId(jobId);
  const named = parseRef(ref)!;
  const base = `${fal.app}/requests/${requestId}`;
  const res = await fal.http.send('getJob', { url: new URL(`${base}/status`, fal.queue), maxResponseBytes: 1 << 20 });
  const status = fal.http.parse('getJob', res, statusSchema);
  if (status.request_id !== requestId) throw malformedJob('fal answered with another request');
  const job: VendorJob = {
    job_id: jobId,
    kind: named.step,
    episode_id: named.episodeId,
    status: status.status === 'IN_QUEUE' ? 'queued' : 'running',
    cost: null,
    artifact: null,
    client_ref: null,
    accepted_at: new Date(0).toISOString(),
  };
  if (status.status !== 'COMPLETED') return job;
  // Ended requests are listed: until this one is, it is not settled (its ref is not vouched for, its bill may lag).
  const [item] = await listed(fal, { requestId });
  if (!item) return job;
  const failed = Boolean(status.error);
  const result = await resultOf(fal, base);
  if (!failed && (result.status > 299 || !result.file)) {
    // A finished request whose output we cannot read now is not a failure: poll again, never settle it as one.
    throw result.status > 299
      ? fal.http.statusError('getJob', result.status, Buffer.alloc(0))
      : malformedJob('no file in the output');
  }
  const events = await billingEvents(fal, requestId);
  const billedCents = events.reduce((sum, e) => sum + usdToCents(e.cost_total), 0);
  // "Server errors (HTTP 500+) are never charged"; any other failure (a 422) is billed as the events say, once shown.
  const unbilled = failed && result.status >= 500;
  const cost = events.length > 0 || unbilled ? { amount_cents: billedCents, currency: currencyOf(events) } : null;
  return {
    ...job,
    status: failed ? 'failed' : 'succeeded',
    cost,
    artifact: failed ? null : result.file,
    // The listing vouches for the step: the value in the input fal ran, not the one in our id.
    client_ref: refOfInput(item.json_input),
    accepted_at: item.sent_at ?? job.accepted_at,
  };
}

/** The request's result: its HTTP status (a failed request answers with its error's) and its first file URL. */
async function resultOf(fal: Fal, base: string): Promise<{ status: number; file: string | null }> {
  let res;
  try {
    res = await fal.http.send('getJob', { url: new URL(base, fal.queue), maxResponseBytes: 1 << 20 });
  } catch (e) {
    if (e instanceof VendorError && e.status !== null && e.status !== 404 && e.reason === 'http-status') {
      return { status: e.status, file: null };
    }
    throw e;
  }
  let output: unknown;
  try {
    output = JSON.parse(res.body.toString('utf8'));
  } catch {
    throw malformedJob('the result is not JSON');
  }
  return { status: res.status, file: firstFileUrl(output) };
}

/** The output file: public, so fetched without the key; https, or http to this machine (the simulator). */
async function download(fal: Fal, job: VendorJob): Promise<Buffer> {
  const url = publicUrl(job.artifact, 'downloadArtifact');
  const maxResponseBytes = fal.o.maxArtifactBytes ?? 256 * 1024 * 1024;
  return (await fal.http.send('downloadArtifact', { url, auth: false, maxResponseBytes })).body;
}

/** A URL fetched without the key (an output file, the JWKS): https, or http to this machine (the simulator). */
function publicUrl(raw: string | null, op: 'downloadArtifact' | 'readCallback'): URL {
  let url: URL | null = null;
  try {
    url = new URL(raw ?? '');
  } catch {
    url = null;
  }
  const local = url?.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url && (url.protocol === 'https:' || local) && url.username === '' && url.password === '') return url;
  throw new VendorError({
    type: ErrorType.VendorRejected,
    message: `fal ${op}: the URL is not https (or http to localhost)`,
    operation: op,
    reason: 'malformed-response',
    outcome: null,
  });
}

/** The requests fal lists for the model: those carrying `ref`, or the one with `requestId`. */
async function listed(fal: Fal, filter: { ref?: string; requestId?: string }): Promise<FalListItem[]> {
  const query: Record<string, string> = { endpoint_id: fal.o.model, expand: 'payloads', limit: '100' };
  if (filter.requestId) query.request_id = filter.requestId;
  else query.start = new Date(Date.now() - LOOKBACK_MS).toISOString();
  const items = await pages(fal, { op: 'findJobsByClientRef', path: 'models/requests/by-endpoint', query }, listSchema);
  if (filter.requestId) return items.filter((i) => i.request_id === filter.requestId);
  return filter.ref === undefined ? items : items.filter((i) => refOfInput(i.json_input) === filter.ref);
}

function listedJob(item: FalListItem): VendorJob {
  const ref = refOfInput(item.json_input)!;
  const named = parseRef(ref)!;
  const code = item.status_code ?? null;
  return {
    job_id: jobIdOf(ref, item.request_id),
    kind: named.step,
    episode_id: named.episodeId,
    status: !item.ended_at || code === null ? 'running' : code < 300 ? 'succeeded' : 'failed',
    cost: null,
    artifact: firstFileUrl(item.json_output),
    client_ref: ref,
    accepted_at: item.sent_at ?? new Date(0).toISOString(),
  };
}

async function billingEvents(fal: Fal, requestId?: string): Promise<FalBillingEvent[]> {
  const query: Record<string, string> = {
    endpoint_id: fal.o.model,
    start: new Date(Date.now() - LOOKBACK_MS).toISOString(),
    limit: '100',
  };
  if (requestId) query.request_id = requestId;
  const items = await pages(fal, { op: 'getBilling', path: 'models/billing-events', query }, billingEventsSchema);
  return requestId ? items.filter((e) => e.request_id === requestId) : items;
}

/** fal's charges for the model, each named by the step whose input it ran; all, or those of one correlation value. */
async function billing(fal: Fal, ref?: string): Promise<VendorCharge[]> {
  const requests = ref === undefined ? await listed(fal, {}) : await listed(fal, { ref });
  const refs = new Map(requests.map((r) => [r.request_id, refOfInput(r.json_input)]));
  const events = (await billingEvents(fal)).filter((e) => ref === undefined || refs.has(e.request_id));
  const charges = new Map<string, VendorCharge>();
  for (const e of events) {
    const named = parseRef(refs.get(e.request_id));
    if (!named) {
      // Billed but not listed yet (or not ours): the journal cannot be read whole now.
      throw new VendorError({
        type: ErrorType.VendorUnavailable,
        message: `fal getBilling: request ${e.request_id} is billed but not listed with our reference yet`,
        operation: 'getBilling',
        reason: 'malformed-response',
        outcome: null,
      });
    }
    const id = jobIdOf(named.ref, e.request_id);
    const charge = charges.get(id) ?? {
      job_id: id,
      kind: named.step,
      episode_id: named.episodeId,
      client_ref: named.ref,
      amount_cents: 0,
      currency: e.currency ?? 'USD',
    };
    charges.set(id, { ...charge, amount_cents: charge.amount_cents + usdToCents(e.cost_total) });
  }
  return [...charges.values()];
}

/** fal's webhook keys, fetched without the key from `jwksUrl` (https, or http to localhost) and kept (fal-jwks.ts). */
export function falJwks(o: Pick<FalCallbackOptions, 'jwksUrl' | 'timeoutMs' | 'logger' | 'now'>): FalJwks {
  const http = new FalHttp('', o.timeoutMs ?? 10_000, o.logger);
  const fetchKeys = async () => {
    const url = publicUrl(String(o.jwksUrl), 'readCallback');
    const res = await http.send('readCallback', { url, auth: false, maxResponseBytes: 64 * 1024 });
    return http.parse('readCallback', res, jwksSchema).keys;
  };
  return new FalJwks(fetchKeys, o.now);
}

/** Checks a fal webhook's signature, then reads which request of which step it reports. */
export function falCallbackReader(o: FalCallbackOptions): CallbackReader {
  const keys = o.jwks ?? falJwks(o);
  return {
    async readCallback(request: CallbackRequest) {
      const hook = await verifyFalWebhook(request, {
        keys,
        nowMs: (o.now ?? Date.now)(),
        maxBodyBytes: o.maxCallbackBytes ?? 1024 * 1024,
      });
      const named = parseRef(request.url.searchParams.get(FAL_REF_QUERY));
      if (!named) throw refused(`the webhook URL carries no ${FAL_REF_QUERY} of ours`);
      return {
        ref: named.ref,
        jobId: jobIdOf(named.ref, hook.request_id),
        status: hook.status === 'OK' ? ('succeeded' as const) : ('failed' as const),
      };
    },
  };
}

/** Every item of a Platform API listing, page by page, up to MAX_PAGES. */
async function pages<T>(
  fal: Fal,
  list: { op: 'findJobsByClientRef' | 'getBilling'; path: string; query: Record<string, string> },
  schema: ZodType<{ items: T[]; next_cursor?: string | null; has_more: boolean }>,
): Promise<T[]> {
  const { op, path, query } = list;
  const items: T[] = [];
  let cursor: string | null | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = apiUrl(fal, path, cursor ? { ...query, cursor } : query);
    const body = fal.http.parse(op, await fal.http.send(op, { url, maxResponseBytes: 8 << 20 }), schema);
    items.push(...body.items);
    if (!body.has_more) return items;
    cursor = body.next_cursor;
    if (!cursor) break;
  }
  throw new VendorError({
    type: ErrorType.VendorUnavailable,
    message: `fal ${op}: more than ${MAX_PAGES} pages; cannot tell`,
    operation: op,
    reason: 'response-too-large',
    outcome: null,
  });
}

function apiUrl(fal: Fal, path: string, query: Record<string, string>): URL {
  const url = new URL(path, fal.api);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return url;
}

function currencyOf(events: FalBillingEvent[]): string {
  return events[0]?.currency ?? 'USD';
}

export function jobIdOf(ref: string, requestId: string): string {
  return `${ref}@${requestId}`;
}

/** Our job id back into its parts; anything else is a job fal cannot know (404, like an unknown request). */
export function parseJobId(jobId: string): { ref: string; requestId: string } {
  const at = jobId.lastIndexOf('@');
  const ref = jobId.slice(0, at);
  const requestId = jobId.slice(at + 1);
  if (at < 0 || !parseRef(ref) || !FAL_REQUEST_ID_PATTERN.test(requestId)) {
    throw new VendorError({
      type: ErrorType.VendorRejected,
      message: 'fal getJob: not a fal job id (<ref>@<request_id>)',
      operation: 'getJob',
      reason: 'http-status',
      outcome: null,
      status: 404,
    });
  }
  return { ref, requestId };
}

function malformedJob(what: string): VendorError {
  return new VendorError({
    type: ErrorType.VendorUnavailable,
    message: `fal getJob: ${what}`,
    operation: 'getJob',
    reason: 'malformed-response',
    outcome: null,
  });
}
