/**
 * One paid step, for one activity call: the episode guard, the step record (the submission protocol's durable
 * memory), the vendor adapter its job lives at, one write of the record, the lookup, and the two ways a step stops
 * for an operator. Submission, settling, repair and the completion check all work through it.
 */
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import type { EpisodeState, MediaFile, PaidStep, StepRecord } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { idempotencyKey, stepKey } from '../domain/names';
import { afterLookup } from '../domain/pay-once';
import type { EpisodeStore } from '../store/episode-store';
import type { VendorAdapter, VendorJob, Vendors } from '../vendors/port';
import { activityContext } from './activity-context';
import type { AllocationRecords } from './allocation-records';
import { countSubmission } from './metrics';

export interface PaidStepDeps {
  store: EpisodeStore;
  /** The adapters, opened (and their keys read) only after the episode guard. */
  vendors: Vendors;
  /** Per-episode cost cap: a submission whose quote (or metered maximum) could exceed it is refused before sending. */
  budgetCents: number;
  /** How often `awaitPaidStep` polls the vendor while a job runs. */
  pollIntervalMs?: number;
  /** Temporal's records of allocations, to re-assert one the store forgot (reassertion.ts); none: no healing. */
  allocationRecords?: AllocationRecords;
  /** Where vendors that call back reach the worker's callback receiver; none: every job is polled. */
  callbackUrl?: URL;
}

export interface PaidStepInput {
  episodeId: string;
  step: PaidStep;
  round: number;
  /** What to ask the vendor for. Saved with the intent; a resume always sends the saved spec, never a rebuilt one. */
  spec: Record<string, unknown>;
}

export interface SubmittedStep {
  remoteJobId: string;
}

export interface CompletedStep {
  remoteJobId: string;
  artifact: MediaFile;
  costCents: number;
  currency: string;
}

/** One paid step of one episode, with the names the store and the vendor know it by. */
export interface StepRef {
  id: EpisodeId;
  step: PaidStep;
  round: number;
  /** `video-r0`: the record's key in the episode state. */
  key: string;
  /** The step's correlation value: the vendor's idempotency key (and `client_ref`) of its one submission. */
  ref: string;
}

/** The vendor's answer to "which job did this step's submission create?". */
export type Lookup = { found: VendorJob } | { found: null } | { unknown: string };

export function stepRef(id: EpisodeId, step: PaidStep, round: number): StepRef {
  return { id, step, round, key: stepKey(step, round), ref: idempotencyKey(id, step, round) };
}

export class PaidStepCall {
  #adapter: Promise<VendorAdapter> | undefined;

  constructor(
    readonly deps: PaidStepDeps,
    readonly at: StepRef,
    /** The record as the call found it (the store may have moved on: writes go through `save`). */
    readonly record: StepRecord | undefined,
  ) {}

  /** The guard: the episode must exist before anything else happens (no credentials, no vendor before it). */
  static async begin(
    deps: PaidStepDeps,
    input: { episodeId: string; step: PaidStep; round: number },
  ): Promise<{ call: PaidStepCall; state: EpisodeState }> {
    const { episodeId: id } = parseEpisodeId(input.episodeId);
    const state = await deps.store.requireEpisode(id);
    const at = stepRef(id, input.step, input.round);
    return { call: new PaidStepCall(deps, at, state.steps[at.key]), state };
  }

  /** The adapter the step's job lives at: the one its record names, else the one assigned to its kind now. */
  vendorName(): string {
    return this.record?.vendor ?? this.deps.vendors.assigned(this.at.step);
  }

  vendor(): Promise<VendorAdapter> {
    this.#adapter ??= this.deps.vendors.open(this.vendorName(), activityLogger(this.at.id));
    return this.#adapter;
  }

  /** Read-modify-write of the step record under the episode's lock; `change` sees the record as it is now. */
  save(change: (record: StepRecord | undefined) => StepRecord): Promise<EpisodeState> {
    const { id, key } = this.at;
    return this.deps.store.updateEpisode(id, (s) => ({ ...s, steps: { ...s.steps, [key]: change(s.steps[key]) } }));
  }

  /** Asks the vendor which job the step's submission created: one, certainly none, or it cannot say. */
  async lookUp(): Promise<Lookup> {
    const vendor = await this.vendor();
    const jobs =
      vendor.profile.lookup === 'none' ? 'unsupported' : await vendor.find(this.at.ref, this.record?.intent_at);
    if (jobs === 'unsupported') return this.#verdict(vendor, { unsupported: true }, undefined);
    const job = jobs[0];
    if (jobs.length === 1 && job && (job.episode_id !== this.at.id || job.kind !== this.at.step)) {
      throw this.storeCorrupt(`the vendor's job ${job.job_id} for this key is a ${job.kind} of ${job.episode_id}`);
    }
    const billed = jobs.length === 0 && vendor.profile.billingJournal ? await vendor.billing(this.at.ref) : null;
    return this.#verdict(vendor, { jobs: jobs.length, billed: (billed?.length ?? 0) > 0 }, job, billed);
  }

  #verdict(
    vendor: VendorAdapter,
    facts: Parameters<typeof afterLookup>[1],
    job: VendorJob | undefined,
    billed?: { job_id: string }[] | null,
  ): Lookup {
    const verdict = afterLookup(vendor.profile, facts);
    if ('adopt' in verdict && job) return { found: job };
    if ('send' in verdict) return { found: null };
    const why = 'park' in verdict ? verdict.park : 'the vendor cannot say';
    return { unknown: billed?.length ? `${why} (${billed.map((c) => c.job_id).join(', ')})` : why };
  }

  /** Retryable on purpose: the activity keeps the step parked (polling nothing, submitting nothing) until settled. */
  park(why: string): never {
    const { id, key } = this.at;
    throw new PipelineError(
      ErrorType.RemoteJobUnknown,
      `${id} ${key} parked: ${why}; check the vendor's billing, then settle it with ` +
        `\`episodes reconcile ${id} --step ${key} --remote-job J\``,
      { episodeId: id, step: key },
    );
  }

  /** Saves the step as `needs_reconciliation` with the reason (a record the store forgot is written back bare). */
  async markNeedsReconciliation(why: string): Promise<void> {
    await this.save((r) => ({ ...(r ?? this.bareRecord({})), status: 'needs_reconciliation', error: why }));
    countSubmission('unknown', this.at.step);
  }

  /** Submission's refusal: non-retryable, the step workflow waits for `episodes reconcile` and its signal. */
  async needsReconciliation(why: string): Promise<never> {
    await this.markNeedsReconciliation(why);
    const { id, key } = this.at;
    throw new PipelineError(
      ErrorType.SubmissionOutcomeUnknown,
      `${id} ${key}: ${why}; settle it with \`episodes reconcile ${id} --step ${key} (--remote-job J | --not-submitted)\``,
      { episodeId: id, step: key },
    );
  }

  storeCorrupt(why: string): PipelineError {
    const { id, key } = this.at;
    return new PipelineError(ErrorType.StoreCorrupt, `${id} ${key}: ${why}; nothing was charged or changed`, {
      episodeId: id,
      step: key,
    });
  }

  /** A record for a step whose record the store forgot entirely: what the vendor says, nothing invented. */
  bareRecord(fields: Partial<StepRecord>): StepRecord {
    return {
      step: this.at.step,
      round: this.at.round,
      idempotency_key: this.at.ref,
      status: 'intent',
      intent_at: new Date().toISOString(),
      // The spec went with the forgotten write; a step with a vendor job is never sent again, so none is needed.
      spec: {},
      remote_job_id: null,
      submitted_at: null,
      quoted_cost: null,
      artifact: null,
      charged: false,
      reconciliation: null,
      error: null,
      ...(this.vendorName() === 'native' ? {} : { vendor: this.vendorName() }),
      ...fields,
    };
  }
}

/** The activity's SDK logger (workflow and activity ids attached by the SDK) plus the episode; none outside one. */
function activityLogger(episodeId: EpisodeId) {
  const log = activityContext()?.log;
  return {
    debug(message: string, meta?: Record<string, unknown>): void {
      log?.debug(message, { episodeId, ...meta });
    },
    warn(message: string, meta?: Record<string, unknown>): void {
      log?.warn(message, { episodeId, ...meta });
    },
  };
}
