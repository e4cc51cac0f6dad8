/**
 * The step record, the submission protocol's durable memory, and the helpers every paid activity shares: which step,
 * the guard, the vendor client, one write of the record, and the two ways a step stops for an operator.
 */
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import type { EpisodeState, MediaFile, PaidStep, StepRecord } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { idempotencyKey, stepKey } from '../domain/names';
import type { EpisodeStore } from '../store/episode-store';
import type { VendorJob } from '../vendor-api/api';
import { createVendorClient, type VendorClient } from '../vendor-api/client';
import type { CredentialsLoader } from '../vendor-api/credentials';
import type { VendorEndpoint } from '../vendor-api/endpoint';
import { activityContext } from './activity-context';
import type { AllocationRecords } from './allocation-records';
import { countSubmission } from './metrics';

export interface PaidStepDeps {
  store: EpisodeStore;
  credentials: CredentialsLoader;
  vendor: VendorEndpoint;
  /** Per-episode cost cap: a submission whose quote would exceed it is refused before anything is sent. */
  budgetCents: number;
  /** How often `awaitPaidStep` polls the vendor while a job runs. */
  pollIntervalMs?: number;
  /** Temporal's records of allocations, to re-assert one the store forgot (reassertion.ts); none: no healing. */
  allocationRecords?: AllocationRecords;
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
  /** The vendor's idempotency key (and `client_ref`) of the step's one submission. */
  ref: string;
}

/** The guard: the episode must exist before anything else happens (no credentials, no vendor client before it). */
export async function requireStep(
  store: EpisodeStore,
  input: { episodeId: string; step: PaidStep; round: number },
): Promise<{ at: StepRef; state: EpisodeState }> {
  const { episodeId: id } = parseEpisodeId(input.episodeId);
  const state = await store.requireEpisode(id);
  const at = { id, step: input.step, round: input.round, key: stepKey(input.step, input.round) };
  return { at: { ...at, ref: idempotencyKey(id, input.step, input.round) }, state };
}

export function vendorClient(deps: PaidStepDeps, id: EpisodeId): Promise<VendorClient> {
  return createVendorClient(deps.credentials, {
    baseUrl: deps.vendor.baseUrl,
    timeoutMs: deps.vendor.timeoutMs,
    logger: activityLogger(id),
  });
}

/** Read-modify-write of one step record under the episode's lock; `change` sees the record as it is now. */
export function saveStep(
  store: EpisodeStore,
  at: StepRef,
  change: (record: StepRecord | undefined) => StepRecord,
): Promise<EpisodeState> {
  return store.updateEpisode(at.id, (s) => ({ ...s, steps: { ...s.steps, [at.key]: change(s.steps[at.key]) } }));
}

/** Retryable on purpose: the activity keeps the step parked (polling nothing, submitting nothing) until settled. */
export function parked(at: StepRef, why: string): never {
  throw new PipelineError(
    ErrorType.RemoteJobUnknown,
    `${at.id} ${at.key} parked: ${why}; check the vendor's billing, then settle it with ` +
      `\`episodes reconcile ${at.id} --step ${at.key} --remote-job J\``,
    { episodeId: at.id, step: at.key },
  );
}

/** Saves the step as `needs_reconciliation` with the reason (a record the store forgot is written back bare). */
export async function markNeedsReconciliation(store: EpisodeStore, at: StepRef, why: string): Promise<void> {
  await saveStep(store, at, (r) => ({ ...(r ?? bareRecord(at, {})), status: 'needs_reconciliation', error: why }));
  countSubmission('unknown', at.step);
}

/** Submission's refusal: non-retryable, the step workflow waits for `episodes reconcile` and its signal. */
export async function needsReconciliation(store: EpisodeStore, at: StepRef, why: string): Promise<never> {
  await markNeedsReconciliation(store, at, why);
  throw new PipelineError(
    ErrorType.SubmissionOutcomeUnknown,
    `${at.id} ${at.key}: ${why}; settle it with ` +
      `\`episodes reconcile ${at.id} --step ${at.key} (--remote-job J | --not-submitted)\``,
    { episodeId: at.id, step: at.key },
  );
}

/** The vendor's answer to "which job did this idempotency key create?". */
export type Lookup = { found: VendorJob } | { found: null } | { unknown: string };

/** Asks the vendor whether a submission with the step's key created a job: one job, certainly none, or it cannot say. */
export async function lookUpJob(client: VendorClient, at: StepRef): Promise<Lookup> {
  const answer = await client.findJobsByClientRef(at.ref);
  if (!answer.supported) return { unknown: 'the vendor may have accepted this submission and cannot look it up' };
  if (answer.jobs.length > 1) return { unknown: `the vendor holds ${answer.jobs.length} jobs for one idempotency key` };
  const job = answer.jobs[0] ?? null;
  if (job && (job.episode_id !== at.id || job.kind !== at.step)) {
    throw storeCorrupt(at, `the vendor's job ${job.job_id} for this key is a ${job.kind} of ${job.episode_id}`);
  }
  if (job) return { found: job };
  // "None" is believed only if the vendor's billing agrees: a job it charged and then lost, or accepted while it
  // ignored keys, is not found by the lookup, and a resend would be charged again.
  const billed = await client.getBilling({}, at.ref);
  if (billed.length > 0) {
    return { unknown: `the vendor billed ${billed.map((c) => c.job_id).join(', ')} for this key and cannot find it` };
  }
  return { found: null };
}

export function storeCorrupt(at: StepRef, why: string): PipelineError {
  return new PipelineError(ErrorType.StoreCorrupt, `${at.id} ${at.key}: ${why}; nothing was charged or changed`, {
    episodeId: at.id,
    step: at.key,
  });
}

/** A record for a step whose record the store forgot entirely: what the vendor says, nothing invented. */
export function bareRecord(at: StepRef, fields: Partial<StepRecord>): StepRecord {
  return {
    step: at.step,
    round: at.round,
    idempotency_key: at.ref,
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
    ...fields,
  };
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
