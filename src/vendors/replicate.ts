/**
 * Replicate's predictions API (docs/vendors.md, "replicate"): no idempotency key, so a create is sent once and an
 * unknown outcome is settled by listing predictions and matching the step's correlation value; cost is metered
 * (`metrics.predict_time` × the hardware's price per second), known when the prediction ends; outputs expire after an
 * hour; webhooks are signed. Never Replicate's SDKs: the Python one resends a create on its own.
 */
import { PipelineError, ErrorType } from '../domain/errors';
import { meteredCents } from '../domain/metered-cost';
import { PAID_STEPS, type PaidStep } from '../domain/paid-step';
import type { VendorProfile } from '../domain/vendor-profile';
import { readSettings } from '../settings/read';
import { meteredMaxCentsFromEnv } from './metered-max';
import { envCredentialsLoader } from '../vendor-api/credentials';
import { parseVendorBaseUrl } from '../vendor-api/endpoint';
import {
  CORRELATION_INPUT,
  outputUrl,
  predictionListSchema,
  predictionSchema,
  PREDICTION_ID_PATTERN,
  TERMINAL_STATUSES,
  webhookSecretSchema,
  type Prediction,
} from '../vendor-api/replicate-api';
import { VendorError } from '../vendor-api/vendor-error';
import {
  CALLBACK_REF_QUERY,
  type CallbackReader,
  type CallbackRequest,
  type VendorCallback,
  type JobStatus,
  type Submission,
  type VendorAdapter,
  type VendorJob,
  type VendorLogger,
} from './port';
import { downloadOutput, outputFailure } from './replicate-download';
import { failure, ReplicateHttp } from './replicate-http';
import { refused, verifyWebhook } from './replicate-webhook';

/** Inputs, outputs, logs and files of API predictions are removed an hour after creation (data-retention docs). */
export const REPLICATE_RETENTION_MS = 60 * 60_000;
/** The listing starts this long before the step's intent: our clock and Replicate's may differ. */
const LIST_MARGIN_MS = 15 * 60_000;
/** 100 predictions a page: past this many pages the lookup cannot say (the step parks) rather than list forever. */
const MAX_LIST_PAGES = 50;
/** What a succeeded prediction's artifact is once Replicate removed its output: `download` answers 410. */
const REMOVED_OUTPUT = 'data-removed:';

export function replicateProfile(maxCents: Readonly<Record<PaidStep, number>>): VendorProfile {
  return {
    idempotency: 'none',
    lookup: 'list-correlation',
    // "A paginated list of all predictions created by the user or organization" (predictions.list), but the docs are
    // silent on a prediction that is lost, and there is no billing to check "none listed" against: it parks.
    lookupSeesEveryJob: false,
    completion: 'webhook',
    charging: { mode: 'metered', maxCents },
    artifactTtlMs: REPLICATE_RETENTION_MS,
    // `aborted` is not charged (the adapter reports 0), `canceled` is; `failed`: docs silent, assume billed.
    failedJobsUnbilled: false,
    billingJournal: false,
  };
}

export interface ReplicateOptions {
  /** https, or http to localhost only (the simulator). */
  baseUrl: string | URL;
  token: string;
  /** `owner/name` (created at /v1/models/{owner}/{name}/predictions) or a 64-hex version id (/v1/predictions). */
  model: string;
  /** Price per second of the model's hardware: cost = `predict_time` × this. */
  usdPerSecond: number;
  maxCents: Readonly<Record<PaidStep, number>>;
  timeoutMs?: number;
  logger?: VendorLogger;
  /** The account's webhook secret, fetched once and kept (shared by the adapters of one opener). */
  secret?: { value?: Promise<string> };
}

const MODEL_PATTERN = /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/;
const VERSION_PATTERN = /^[0-9a-f]{64}$/;

export function replicateAdapter(options: ReplicateOptions): VendorAdapter {
  const { model, maxCents } = options;
  if (!MODEL_PATTERN.test(model) && !VERSION_PATTERN.test(model)) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `replicate model ${JSON.stringify(model)}: owner/name or a version id`,
    );
  }
  const http = replicateHttp(options);
  const secret = options.secret ?? {};
  const read = new PredictionReader(model, options.usdPerSecond);
  return {
    name: 'replicate',
    profile: replicateProfile(maxCents),
    prices() {
      const range = (step: PaidStep) => ({ min_cents: 0, max_cents: maxCents[step], currency: 'USD' });
      return Promise.resolve({
        video: range('video'),
        cover: range('cover'),
        rework: range('rework'),
        assembly: range('assembly'),
      });
    },
    async submit(s: Submission) {
      const p = await http.json('submitJob', predictionSchema, createRequest(model, s));
      const echoed = correlationOf(p);
      if (echoed !== null && echoed !== s.ref)
        throw failure('submitJob', 'malformed-response', 'another correlation came back', 201);
      return read.job(p, s.ref);
    },
    find: (ref, since) => findByListing(http, read, ref, since),
    async get(jobId: string) {
      requireId(jobId, 'getJob');
      const p = await http.json('getJob', predictionSchema, { path: `v1/predictions/${jobId}` });
      if (p.id !== jobId) throw failure('getJob', 'malformed-response', 'another prediction came back', 200);
      const ref = correlationOf(p);
      if (ref === null) throw unreadable(p);
      return read.job(p, ref);
    },
    download(job: VendorJob) {
      if (job.artifact?.startsWith(REMOVED_OUTPUT)) {
        return Promise.reject(outputFailure(`the output of ${job.job_id} was removed (data_removed)`, 410));
      }
      return downloadOutput(job.artifact ?? '', options.timeoutMs ?? 10_000);
    },
    billing: () => Promise.resolve(null),
    readCallback: (request) => readCallback(http, secret, request),
  };
}

/** What checks Replicate's webhooks: the account's secret, whatever the model a prediction ran. */
export function replicateCallbackReader(
  options: Pick<ReplicateOptions, 'baseUrl' | 'token' | 'timeoutMs' | 'logger' | 'secret'>,
): CallbackReader {
  const http = replicateHttp(options);
  const secret = options.secret ?? {};
  return { readCallback: (request) => readCallback(http, secret, request) };
}

function replicateHttp(options: Pick<ReplicateOptions, 'baseUrl' | 'token' | 'timeoutMs' | 'logger'>): ReplicateHttp {
  const base = parseVendorBaseUrl(String(options.baseUrl), 'EPISODES_REPLICATE_URL');
  return new ReplicateHttp(base, options.token, options.timeoutMs ?? 10_000, options.logger);
}

/** Verifies the signature with the account's secret, then reads which prediction of which step ended how. */
async function readCallback(
  http: ReplicateHttp,
  secret: { value?: Promise<string> },
  request: CallbackRequest,
): Promise<VendorCallback> {
  verifyWebhook(request, await webhookSecret(http, secret));
  let p: Prediction;
  try {
    p = predictionSchema.parse(JSON.parse(request.body.toString('utf8')));
  } catch {
    throw refused('the signed body is not a prediction');
  }
  const fromUrl = request.url.searchParams.get(CALLBACK_REF_QUERY);
  const shown = correlationOf(p);
  if (fromUrl !== null && shown !== null && fromUrl !== shown) throw refused('two correlation values disagree');
  const ref = fromUrl ?? shown;
  if (ref === null) throw refused('no correlation value: not a webhook of ours');
  if (!stepOfRef(ref))
    throw failure('getJob', 'malformed-response', `prediction ${p.id} carries a foreign correlation`, 200);
  return { ref, jobId: p.id, status: STATUS[p.status] };
}

/** The create: the correlation value in the input (listed for an hour) and in the webhook URL's query (kept). */
function createRequest(model: string, s: Submission) {
  const input = { ...s.spec, [CORRELATION_INPUT]: s.ref };
  let webhook: Record<string, unknown> = {};
  if (s.callbackUrl) {
    const url = new URL(s.callbackUrl);
    url.searchParams.set(CALLBACK_REF_QUERY, s.ref);
    webhook = { webhook: url.href, webhook_events_filter: ['completed'] };
  }
  return VERSION_PATTERN.test(model)
    ? { method: 'POST' as const, path: 'v1/predictions', body: { version: model, input, ...webhook } }
    : { method: 'POST' as const, path: `v1/models/${model}/predictions`, body: { input, ...webhook } };
}

/**
 * Lists predictions created since the step's intent (less a margin), newest first, page by page, and keeps those of
 * this model carrying `ref`. A prediction of this model whose correlation cannot be read (its input removed after an
 * hour, no webhook query) could be the step's: then, with no match, the lookup cannot say.
 */
async function findByListing(
  http: ReplicateHttp,
  read: PredictionReader,
  ref: string,
  since: string | undefined,
): Promise<VendorJob[] | 'unsupported'> {
  const after = since === undefined ? null : new Date(Date.parse(since) - LIST_MARGIN_MS);
  let path =
    'v1/predictions' + (after && !Number.isNaN(after.getTime()) ? `?created_after=${after.toISOString()}` : '');
  const found: VendorJob[] = [];
  let unreadable = false;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const list = await http.json('findJobsByClientRef', predictionListSchema, { path });
    for (const p of list.results.filter((r) => read.isOurs(r))) {
      const correlation = correlationOf(p);
      if (correlation === ref) found.push(read.job(p, ref));
      unreadable ||= correlation === null;
    }
    if (!list.next) return found.length === 0 && unreadable ? 'unsupported' : found;
    path = http.url(list.next).href;
  }
  return 'unsupported';
}

/** How a prediction of this adapter's model reads as a step's job. */
class PredictionReader {
  constructor(
    readonly model: string,
    readonly usdPerSecond: number,
  ) {}

  /** Created through the API for this model (web predictions and other models are never a step's). */
  isOurs(p: Prediction): boolean {
    if (p.source !== undefined && p.source !== 'api') return false;
    return VERSION_PATTERN.test(this.model)
      ? p.version === this.model
      : p.model === undefined || p.model === this.model;
  }

  job(p: Prediction, ref: string): VendorJob {
    const step = stepOfRef(ref);
    if (!step) throw failure('getJob', 'malformed-response', `prediction ${p.id} carries a foreign correlation`, 200);
    const succeeded = p.status === 'succeeded';
    return {
      job_id: p.id,
      kind: step.kind,
      episode_id: step.episodeId,
      status: STATUS[p.status],
      cost: this.cost(p),
      artifact: succeeded ? (p.data_removed ? `${REMOVED_OUTPUT}${p.id}` : outputUrl(p.output)) : null,
      client_ref: ref,
      accepted_at: p.created_at,
    };
  }

  /** Null until the prediction ends; `aborted` (never started) is not charged; no `predict_time`: unknown. */
  cost(p: Prediction): VendorJob['cost'] {
    if (!TERMINAL_STATUSES.includes(p.status)) return null;
    if (p.status === 'aborted') return { amount_cents: 0, currency: 'USD' };
    const seconds = p.metrics?.predict_time;
    return seconds === undefined ? null : { amount_cents: meteredCents(seconds, this.usdPerSecond), currency: 'USD' };
  }
}

/** The step's correlation value as the prediction shows it: its webhook URL's query, else its input; null: neither. */
function correlationOf(p: Prediction): string | null {
  if (p.webhook) {
    try {
      const value = new URL(p.webhook).searchParams.get(CALLBACK_REF_QUERY);
      if (value) return value;
    } catch {
      // not a URL: fall back to the input
    }
  }
  const value = p.input?.[CORRELATION_INPUT];
  return typeof value === 'string' && value !== '' ? value : null;
}

const STATUS: Record<Prediction['status'], JobStatus> = {
  starting: 'queued',
  processing: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'failed',
  aborted: 'failed',
};

/** `<episode>:<step>:r<round>` (names.ts `idempotencyKey`). */
function stepOfRef(ref: string): { episodeId: string; kind: PaidStep } | null {
  const m = /^(.{1,128}):([a-z]+):r\d{1,6}$/.exec(ref);
  const kind = PAID_STEPS.find((s) => s === m?.[2]);
  return m && kind ? { episodeId: m[1]!, kind } : null;
}

async function webhookSecret(http: ReplicateHttp, cache: { value?: Promise<string> }): Promise<string> {
  cache.value ??= http
    .json('getWebhookSecret', webhookSecretSchema, { path: 'v1/webhooks/default/secret' })
    .then((s) => s.key);
  // A failed fetch is not kept: the next webhook asks again.
  return cache.value.catch((e: unknown) => {
    cache.value = undefined;
    throw e;
  });
}

function requireId(id: string, op: 'getJob'): void {
  if (!PREDICTION_ID_PATTERN.test(id))
    throw new PipelineError(ErrorType.InvalidInput, `replicate ${op}: invalid prediction id`);
}

/** Replicate shows the prediction but no longer which step it was: a 410, which parks the step like a lost job. */
function unreadable(p: Prediction): VendorError {
  const why = p.data_removed
    ? 'its input was removed (data_removed, after an hour)'
    : 'it carries no correlation value';
  return new VendorError({
    type: ErrorType.VendorUnavailable,
    message: `replicate getJob: prediction ${p.id} cannot be tied to a step: ${why}`,
    operation: 'getJob',
    reason: 'http-status',
    outcome: null,
    status: 410,
  });
}

/** The opener `vendorsFromEnv` registers: settings read when a step opens it, the token only then. */
export function replicateOpener(
  env: NodeJS.ProcessEnv,
  warn?: (message: string) => void,
): (model: string | null, logger?: VendorLogger) => Promise<VendorAdapter> {
  const credentials = replicateCredentials(env, warn);
  const secret = {};
  return async (model, logger) => {
    if (model === null) {
      throw new PipelineError(
        ErrorType.InvalidInput,
        'replicate needs a model: `replicate:owner/name` or `replicate:<version id>`',
      );
    }
    const s = readSettings(
      ['EPISODES_REPLICATE_URL', 'EPISODES_REPLICATE_USD_PER_SECOND', 'EPISODES_VENDOR_TIMEOUT_MS'],
      env,
    );
    return replicateAdapter({
      baseUrl: s.EPISODES_REPLICATE_URL,
      token: await credentials.load(),
      model,
      usdPerSecond: s.EPISODES_REPLICATE_USD_PER_SECOND,
      maxCents: meteredMaxCentsFromEnv(env),
      timeoutMs: s.EPISODES_VENDOR_TIMEOUT_MS,
      logger,
      secret,
    });
  };
}

/** What checks Replicate's webhooks for the callback receiver: no model; the secret fetched once and kept. */
export function replicateCallbackOpener(
  env: NodeJS.ProcessEnv,
  warn?: (message: string) => void,
): () => Promise<CallbackReader> {
  const credentials = replicateCredentials(env, warn);
  const secret = {};
  return async () => {
    const s = readSettings(['EPISODES_REPLICATE_URL', 'EPISODES_VENDOR_TIMEOUT_MS'], env);
    const token = await credentials.load();
    return replicateCallbackReader({
      baseUrl: s.EPISODES_REPLICATE_URL,
      token,
      timeoutMs: s.EPISODES_VENDOR_TIMEOUT_MS,
      secret,
    });
  };
}

function replicateCredentials(env: NodeJS.ProcessEnv, warn?: (message: string) => void) {
  return envCredentialsLoader(env, {
    ...(warn ? { warn } : {}),
    settings: { key: 'EPISODES_REPLICATE_TOKEN', file: 'EPISODES_REPLICATE_TOKEN_FILE', what: 'Replicate API token' },
  });
}
