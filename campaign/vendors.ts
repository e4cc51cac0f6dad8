/**
 * The campaign's vendors (`--vendor native|fal|replicate|mixed`): which adapter each kind's jobs go to, the simulators
 * that assignment needs (and only those), the settings the workers and the CLI get for them, one view of every
 * simulator's traffic (the campaign's clock and its faults' evidence), each simulator's fault set, what an operator
 * finds for a step (the vendor's billing and its listing), and the journals the checker reads.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { meteredCents } from '../src/domain/metered-cost';
import type { PaidStep } from '../src/domain/paid-step';
import { PAID_STEPS } from '../src/domain/paid-step';
import { startFalSimulator, type FalRequestLog, type FalSimulator } from '../src/vendor-sim/fal';
import { parseFalFaults } from '../src/vendor-sim/fal-faults';
import { parseFaults } from '../src/vendor-sim/faults';
import { startReplicateSimulator, type ReplicateSimulator, type SimRequest } from '../src/vendor-sim/replicate';
import { parseReplicateFaults } from '../src/vendor-sim/replicate-faults';
import type { RequestLog, VendorSimulator } from '../src/vendor-sim/simulator';
import { vendorsFromEnv } from '../src/vendors/directory';
import { startTestVendor } from '../testkit/deps';

export const VENDOR_CHOICES = ['native', 'fal', 'replicate', 'mixed'] as const;
export type VendorChoice = (typeof VENDOR_CHOICES)[number];
export const ADAPTERS = ['native', 'fal', 'replicate'] as const;
export type AdapterName = (typeof ADAPTERS)[number];

/**
 * `mixed`: every adapter at once, and both metered ones on a step that reworks or assembles: video and assembly on
 * fal (the long, webhook-driven jobs), cover native (fixed price, keyed), rework on replicate.
 */
const ASSIGNMENTS: Record<VendorChoice, Record<PaidStep, AdapterName>> = {
  native: { video: 'native', cover: 'native', rework: 'native', assembly: 'native' },
  fal: { video: 'fal', cover: 'fal', rework: 'fal', assembly: 'fal' },
  replicate: { video: 'replicate', cover: 'replicate', rework: 'replicate', assembly: 'replicate' },
  mixed: { video: 'fal', cover: 'native', rework: 'replicate', assembly: 'fal' },
};

export function assignmentOf(choice: VendorChoice): Record<PaidStep, AdapterName> {
  return ASSIGNMENTS[choice];
}

export function adaptersOf(choice: VendorChoice): AdapterName[] {
  return ADAPTERS.filter((a) => PAID_STEPS.some((s) => ASSIGNMENTS[choice][s] === a));
}

export const FAL_MODEL = 'fal-ai/kling-video/v2.1/standard/text-to-video';
export const REPLICATE_MODEL = 'acme/media-model';
const FAL_KEY = 'campaign-fal-key-SECRET-5d1a';
const REPLICATE_TOKEN = 'r8_campaign-SECRET-77c3';
/** fal: 5 seconds at 7 cents a request (35 cents) unless a metered fault says otherwise. */
export const FAL_UNITS = 5;
export const FAL_UNIT_CENTS = 7;
/** Replicate: 120 s of predict_time at $0.0014/s (17 cents) unless a metered fault says otherwise. */
export const REPLICATE_SECONDS = 120;
const REPLICATE_USD_PER_SECOND = 0.0014;

/** A request to any of the campaign's simulators, once answered (or dropped), as the campaign watches it. */
export interface VendorEvent {
  adapter: AdapterName;
  method: string;
  path: string;
  status: number | null;
  dropped: boolean;
  /** The vendor's own id of the job a submission created or a read or download named (native job, fal request, prediction). */
  jobId: string | null;
  /** A submission that created a new job, whatever its answer (a reply, a drop, a gateway 5xx after queueing). */
  accepted: boolean;
  /** A fetch of a job's output. */
  download: boolean;
  /** `lost`: a read answered 404 for a job the vendor accepted; `repeat-completion`: native's second `succeeded`. */
  note: 'lost' | 'repeat-completion' | null;
  jobStatus?: RequestLog['jobStatus'];
  idempotencyKey: string | null;
  at: string;
}

/** A journal the checker reads: the simulator's own record of what it charged, in its own format. */
export interface Journal {
  flavor: AdapterName;
  file: string;
}

type FaultSet = Record<string, unknown>;

export interface CampaignVendorsOptions {
  choice: VendorChoice;
  out: string;
  seed: number;
  jobDurationMs: number;
  onEvent: (e: VendorEvent) => void;
}

export class CampaignVendors {
  readonly assigned: Record<PaidStep, AdapterName>;
  readonly adapters: AdapterName[];

  private constructor(
    readonly choice: VendorChoice,
    private readonly out: string,
    readonly native: VendorSimulator | undefined,
    readonly fal: FalSimulator | undefined,
    readonly replicate: ReplicateSimulator | undefined,
  ) {
    this.assigned = assignmentOf(choice);
    this.adapters = adaptersOf(choice);
  }

  static async start(o: CampaignVendorsOptions): Promise<CampaignVendors> {
    const wanted = adaptersOf(o.choice);
    const now = () => new Date().toISOString();
    const native = wanted.includes('native')
      ? await startTestVendor({
          jobDurationMs: o.jobDurationMs,
          media: 'synthetic',
          stateFile: path.join(o.out, 'vendor-journal.json'),
          seed: o.seed,
          onRequest: (e) => o.onEvent(fromNative(e)),
        })
      : undefined;
    const fal = wanted.includes('fal')
      ? await startFalSimulator({
          apiKey: FAL_KEY,
          jobDurationMs: o.jobDurationMs,
          media: 'synthetic',
          unitsPerRequest: FAL_UNITS,
          unitPriceCents: FAL_UNIT_CENTS,
          // fal's 10 redeliveries over 2 h, squeezed into a minute: a worker killed meanwhile is back by then.
          webhookRetryWindowMs: 60_000,
          onRequest: (e) => o.onEvent(fromFal(e, now())),
        })
      : undefined;
    const replicate = wanted.includes('replicate')
      ? await startReplicateSimulator({
          token: REPLICATE_TOKEN,
          predictionMs: o.jobDurationMs,
          predictSeconds: REPLICATE_SECONDS,
          usdPerSecond: REPLICATE_USD_PER_SECOND,
          media: 'synthetic',
          onRequest: (e) => o.onEvent(fromReplicate(e, now())),
        })
      : undefined;
    return new CampaignVendors(o.choice, o.out, native, fal, replicate);
  }

  /** The vendor settings of the workers and of the operator's CLI (callbacks are the pool's, per worker). */
  env(): Record<string, string> {
    const vendorOf = (a: AdapterName) =>
      a === 'fal' ? `fal:${FAL_MODEL}` : a === 'replicate' ? `replicate:${REPLICATE_MODEL}` : 'native';
    const env: Record<string, string> = {
      EPISODES_VENDOR_VIDEO: vendorOf(this.assigned.video),
      EPISODES_VENDOR_COVER: vendorOf(this.assigned.cover),
      EPISODES_VENDOR_REWORK: vendorOf(this.assigned.rework),
      EPISODES_VENDOR_ASSEMBLY: vendorOf(this.assigned.assembly),
    };
    if (this.fal) {
      Object.assign(env, {
        EPISODES_FAL_QUEUE_URL: this.fal.queueUrl,
        EPISODES_FAL_API_URL: this.fal.apiUrl,
        EPISODES_FAL_JWKS_URL: this.fal.jwksUrl,
        EPISODES_FAL_KEY: FAL_KEY,
      });
    }
    if (this.replicate) {
      Object.assign(env, {
        EPISODES_REPLICATE_URL: this.replicate.url,
        EPISODES_REPLICATE_TOKEN: REPLICATE_TOKEN,
        EPISODES_REPLICATE_USD_PER_SECOND: String(REPLICATE_USD_PER_SECOND),
      });
    }
    return env;
  }

  /** The native simulator's URL; without one, an address nothing listens on (no step is assigned to it). */
  nativeUrl(): string {
    return this.native?.url ?? 'http://127.0.0.1:9';
  }

  /** Whether the assignment has a vendor that calls back (the workers then take callbacks). */
  callsBack(): boolean {
    return this.fal !== undefined || this.replicate !== undefined;
  }

  faults(a: AdapterName): FaultSet {
    return (this.sim(a).faults() as FaultSet) ?? {};
  }

  /** Replaces the adapter's simulator's fault set (validated by the simulator's own schema). */
  setFaults(a: AdapterName, f: FaultSet): void {
    if (a === 'native') this.native!.setFaults(parseFaults(f));
    else if (a === 'fal') this.fal!.setFaults(parseFalFaults(f));
    else this.replicate!.setFaults(parseReplicateFaults(f));
  }

  patch(a: AdapterName, f: FaultSet): void {
    this.setFaults(a, { ...this.faults(a), ...f });
  }

  clear(a: AdapterName, keys: readonly string[]): void {
    const copy = { ...this.faults(a) };
    for (const k of keys) delete copy[k];
    this.setFaults(a, copy);
  }

  countLeft(a: AdapterName, key: string): number {
    const v = this.faults(a)[key] as { count?: unknown } | undefined;
    return typeof v?.count === 'number' ? v.count : 0;
  }

  clearAll(): void {
    for (const a of this.adapters) this.setFaults(a, {});
  }

  /** The operator asked: every simulator finds its lost jobs again (the vendor's support, in real life). */
  findLost(): void {
    if (this.native) this.clear('native', ['loseJobs']);
    if (this.fal) this.clear('fal', ['loseJobs']);
    if (this.replicate) this.clear('replicate', ['losePredictions']);
  }

  /** The operator asked: outputs deleted early are served again (the vendor's support restores them). */
  serveExpired(): void {
    if (this.fal) this.clear('fal', ['expireFiles']);
    if (this.replicate) this.clear('replicate', ['expireOutputs']);
  }

  /**
   * The jobs an operator finds for a step's correlation value `ref`, as the step's adapter names them: those the
   * vendor billed (its journal) and those its listing shows (the adapter's own lookup, as `episodes` would run it).
   */
  async jobsFor(ref: string, cliEnv: NodeJS.ProcessEnv): Promise<string[]> {
    const step = PAID_STEPS.find((s) => ref.includes(`:${s}:`));
    const a = step ? this.assigned[step] : 'native';
    const billed =
      a === 'native'
        ? this.native!.billing()
            .filter((c) => c.client_ref === ref)
            .map((c) => c.job_id)
        : a === 'fal'
          ? this.fal!.billing()
              .filter((c) => c.ref === ref)
              .map((c) => `${ref}@${c.request_id}`)
          : this.replicate!.journal()
              .filter((c) => c.correlation === ref)
              .map((c) => c.id);
    if (a === 'native') return billed;
    const vendor = a === 'fal' ? `fal:${FAL_MODEL}` : `replicate:${REPLICATE_MODEL}`;
    const adapter = await vendorsFromEnv({ ...cliEnv }).open(vendor);
    const listed = await adapter.find(ref);
    return [...new Set([...billed, ...(listed === 'unsupported' ? [] : listed.map((j) => j.job_id))])];
  }

  /** The webhook deliveries of one job so far: answered (2xx), failed, and when the campaign first saw each. */
  deliveries(a: AdapterName, jobId: string): { status: number | null }[] {
    if (a === 'fal') return this.fal!.webhooks().filter((d) => d.requestId === jobId);
    if (a === 'replicate') {
      return this.replicate!.deliveries().filter((d) => d.predictionId === jobId && d.event === 'completed');
    }
    return [];
  }

  /** A charge the metered fault set changed: fal's units, Replicate's predict_time, for a job billed after `from`. */
  meteredCharges(a: AdapterName, from: number): { job: string; cents: number; usualCents: number }[] {
    if (a === 'fal') {
      return this.fal!.billing()
        .slice(from)
        .filter((c) => c.unit_quantity !== FAL_UNITS && c.unit_quantity !== 1)
        .map((c) => ({ job: c.request_id, cents: c.amount_cents, usualCents: FAL_UNITS * FAL_UNIT_CENTS }));
    }
    return this.replicate!.journal()
      .slice(from)
      .filter((c) => c.status === 'succeeded' && c.predict_time !== REPLICATE_SECONDS)
      .map((c) => ({
        job: c.id,
        cents: c.amount_cents,
        usualCents: meteredCents(REPLICATE_SECONDS, REPLICATE_USD_PER_SECOND),
      }));
  }

  billedCount(a: AdapterName): number {
    if (a === 'native') return this.native!.billing().length;
    return a === 'fal' ? this.fal!.billing().length : this.replicate!.journal().length;
  }

  /** Each simulator's journal, as the simulator keeps it, in the out dir: what the checker reads. */
  async writeJournals(): Promise<Journal[]> {
    const journals: Journal[] = [];
    if (this.native) journals.push({ flavor: 'native', file: path.join(this.out, 'vendor-journal.json') });
    if (this.fal) {
      const file = path.join(this.out, 'fal-billing.json');
      await fs.writeFile(file, JSON.stringify({ charges: this.fal.billing() }, null, 2) + '\n');
      journals.push({ flavor: 'fal', file });
    }
    if (this.replicate) {
      const file = path.join(this.out, 'replicate-billing.json');
      await fs.writeFile(file, JSON.stringify({ entries: this.replicate.journal() }, null, 2) + '\n');
      journals.push({ flavor: 'replicate', file });
    }
    return journals;
  }

  async close(): Promise<void> {
    await Promise.all(
      [this.native, this.fal, this.replicate].map((s) => s?.close().catch(() => undefined) ?? Promise.resolve()),
    );
  }

  private sim(a: AdapterName): { faults(): unknown } {
    const s = a === 'native' ? this.native : a === 'fal' ? this.fal : this.replicate;
    if (!s) throw new Error(`the campaign runs no ${a} simulator (vendor ${this.choice})`);
    return s;
  }
}

function fromNative(e: RequestLog): VendorEvent {
  return {
    adapter: 'native',
    method: e.method,
    path: e.path,
    status: e.status,
    dropped: e.dropped,
    jobId: e.jobId,
    accepted: e.method === 'POST' && (e.status === 202 || e.dropped) && e.jobId !== null,
    download: e.method === 'GET' && e.path.startsWith('/v1/artifacts/'),
    note: e.note,
    jobStatus: e.jobStatus,
    idempotencyKey: e.idempotencyKey,
    at: e.at,
  };
}

/** fal: a submission queued a request when the log names one (answered 200, dropped, or a gateway 504 after it). */
function fromFal(e: FalRequestLog, at: string): VendorEvent {
  const file = e.path.startsWith('/files/');
  const read = e.method === 'GET' && /^\/[^/]+\/[^/]+\/requests\//.test(e.path);
  return {
    adapter: 'fal',
    method: e.method,
    path: e.path,
    status: e.status,
    dropped: e.dropped,
    jobId: e.requestId,
    accepted: e.method === 'POST' && !e.path.startsWith('/_sim') && e.requestId !== null,
    download: e.method === 'GET' && file,
    note: read && e.status === 404 && e.requestId !== null ? 'lost' : null,
    idempotencyKey: null,
    at,
  };
}

function fromReplicate(e: SimRequest, at: string): VendorEvent {
  const create = e.method === 'POST' && /\/predictions$/.test(e.path);
  const read = e.method === 'GET' && e.path.startsWith('/v1/predictions/');
  return {
    adapter: 'replicate',
    method: e.method,
    path: e.path,
    status: e.status,
    dropped: e.dropped,
    jobId: e.predictionId,
    accepted: create && e.predictionId !== null,
    download: e.method === 'GET' && e.path.startsWith('/files/'),
    note: read && e.status === 404 && e.predictionId !== null ? 'lost' : null,
    idempotencyKey: null,
    at,
  };
}
