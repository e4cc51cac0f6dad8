/**
 * The paid boundary. Every activity here starts with `requireEpisode` (an unknown id fails before credentials are
 * read or a vendor client exists) and then follows the submission protocol, persisted in the episode state under the
 * pipeline lock:
 *
 *   intent (idempotency key) → submit → reference + quote saved → poll → artifact saved (sha256, size) → ledger
 *
 * Resuming at any point continues from what is saved: a saved reference is polled, never resubmitted; an intent
 * without a reference is looked up by client reference; if the vendor cannot say, the step needs an operator.
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { Context } from '@temporalio/activity';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import {
  type EpisodeState,
  type LedgerEntry,
  type MediaFile,
  type PaidStep,
  type StepRecord,
} from '../domain/episode-state';
import { PipelineError } from '../domain/errors';
import { idempotencyKey, stepKey } from '../domain/names';
import { failpoint } from '../failpoints';
import { ErrorType } from '../shared';
import { assertInside, ensureDirDurable, writeFileDurable } from '../files/durable-fs';
import type { EpisodeStore } from '../store/episode-store';
import type { VendorJob } from '../vendor-api/api';
import { createVendorClient, type VendorClient } from '../vendor-api/client';
import type { CredentialsLoader } from '../vendor-api/credentials';
import type { VendorEndpoint } from '../vendor-api/endpoint';
import { isVendorError } from '../vendor-api/vendor-error';
import { withFailureMapping } from './failures';
import { withHeartbeat } from './heartbeat';
import { countBudgetRefusal, countCharge, countSubmission } from './metrics';

export interface PaidStepDeps {
  store: EpisodeStore;
  credentials: CredentialsLoader;
  vendor: VendorEndpoint;
  /** Per-episode cost cap: a submission whose quote would exceed it is refused before anything is sent. */
  budgetCents: number;
  /** How often `awaitPaidStep` polls the vendor while a job runs. */
  pollIntervalMs?: number;
}

/** 200 USD: a first cut (video 42 + cover 3 + assembly 8) plus several reworks at 15 each. */
export const DEFAULT_EPISODE_BUDGET_CENTS = 20_000;

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

const EXTENSIONS: Record<PaidStep, string> = { video: 'mp4', cover: 'png', rework: 'mp4', assembly: 'mp4' };

export function createPaidStepActivities(deps: PaidStepDeps) {
  const { store } = deps;

  /** The guard: the episode must exist before anything else happens. */
  async function requireEpisode(raw: string): Promise<{ id: EpisodeId; state: EpisodeState }> {
    const { episodeId } = parseEpisodeId(raw);
    return { id: episodeId, state: await store.requireEpisode(episodeId) };
  }

  function vendorClient(id: EpisodeId): Promise<VendorClient> {
    return createVendorClient(deps.credentials, {
      baseUrl: deps.vendor.baseUrl,
      timeoutMs: deps.vendor.timeoutMs,
      logger: activityLogger(id),
    });
  }

  async function saveStep(id: EpisodeId, key: string, change: (record: StepRecord | undefined) => StepRecord) {
    return store.updateEpisode(id, (s) => ({ ...s, steps: { ...s.steps, [key]: change(s.steps[key]) } }));
  }

  /** Retryable on purpose: the activity keeps the step parked (polling nothing, submitting nothing) until settled. */
  function parked(id: EpisodeId, key: string, why: string): never {
    throw new PipelineError(
      ErrorType.RemoteJobUnknown,
      `${id} ${key} parked: ${why}; check the vendor's billing, then settle it with ` +
        `\`episodes reconcile ${id} --step ${key} --remote-job J\``,
      { episodeId: id, step: key },
    );
  }

  async function needsReconciliation(id: EpisodeId, key: string, why: string): Promise<never> {
    const saved = await saveStep(id, key, (r) => ({ ...r!, status: 'needs_reconciliation', error: why }));
    countSubmission('unknown', saved.steps[key]!.step);
    throw new PipelineError(
      ErrorType.SubmissionOutcomeUnknown,
      `${id} ${key}: ${why}; settle it with \`episodes reconcile ${id} --step ${key} (--remote-job J | --not-submitted)\``,
      { episodeId: id, step: key },
    );
  }

  async function saveReference(id: EpisodeId, key: string, job: Pick<VendorJob, 'job_id' | 'quoted_cost'>) {
    await saveStep(id, key, (r) => ({
      ...r!,
      status: 'submitted',
      remote_job_id: job.job_id,
      submitted_at: new Date().toISOString(),
      quoted_cost: job.quoted_cost,
      error: null,
    }));
    await failpoint('submission.reference-saved');
    return { remoteJobId: job.job_id };
  }

  /** An earlier attempt's job, found at the vendor by its idempotency key: adopted, never sent again. */
  function found(id: EpisodeId, key: string, step: PaidStep, job: VendorJob) {
    countSubmission('found_by_idempotency_key', step);
    return saveReference(id, key, job);
  }

  /** Asks the vendor whether an earlier attempt created the job. Returns it, null (certainly not), or stops. */
  async function lookUp(client: VendorClient, id: EpisodeId, key: string, ref: string): Promise<VendorJob | null> {
    const found = await client.findJobsByClientRef(ref);
    if (!found.supported) {
      return needsReconciliation(id, key, 'the vendor may have accepted this submission and cannot look it up');
    }
    if (found.jobs.length > 1) {
      return needsReconciliation(id, key, `the vendor holds ${found.jobs.length} jobs for one idempotency key`);
    }
    return found.jobs[0] ?? null;
  }

  async function submitPaidStep(input: PaidStepInput): Promise<SubmittedStep> {
    const { id, state } = await requireEpisode(input.episodeId);
    const key = stepKey(input.step, input.round);
    const ref = idempotencyKey(id, input.step, input.round);
    let record = state.steps[key];
    if (record?.remote_job_id) return { remoteJobId: record.remote_job_id };
    if (record?.status === 'needs_reconciliation') {
      throw new PipelineError(ErrorType.SubmissionOutcomeUnknown, `${id} ${key} is waiting for \`episodes reconcile\``);
    }

    const client = await vendorClient(id);
    if (record?.status === 'intent') {
      // An earlier attempt saved the intent and may have sent it: find out before sending anything.
      const job = await lookUp(client, id, key, ref);
      if (job) return found(id, key, input.step, job);
    } else {
      const quote = (await client.getPrices())[input.step];
      const committed = committedCents(state);
      if (committed + quote.amount_cents > deps.budgetCents) {
        countBudgetRefusal(input.step);
        throw new PipelineError(
          ErrorType.BudgetExceeded,
          `${id} ${key}: quote ${quote.amount_cents} + committed ${committed} exceeds the budget of ${deps.budgetCents} cents`,
          { episodeId: id, quote: quote.amount_cents, committed, budget: deps.budgetCents },
        );
      }
      const intent = newIntent(input, ref, record);
      await saveStep(id, key, () => intent);
      record = intent;
      await failpoint('submission.intent-saved');
    }

    let accepted;
    try {
      accepted = await client.submitJob({ kind: input.step, episode_id: id, spec: record.spec }, ref);
    } catch (e) {
      if (!isVendorError(e) || e.outcome === null) throw e;
      if (e.outcome === 'not-accepted') {
        // Certainly not accepted: the next attempt may send again (same key, same body).
        await saveStep(id, key, (r) => ({ ...r!, status: 'not_submitted', error: e.message }));
        throw e;
      }
      const job = await lookUp(client, id, key, ref);
      if (job) return found(id, key, input.step, job);
      await saveStep(id, key, (r) => ({ ...r!, status: 'not_submitted', error: e.message }));
      throw new PipelineError(ErrorType.VendorUnavailable, `${e.message}; the vendor confirms it has no such job`);
    }
    countSubmission('accepted', input.step);
    await failpoint('submission.accepted');
    return saveReference(id, key, accepted);
  }

  async function awaitPaidStep(input: Omit<PaidStepInput, 'spec'>): Promise<CompletedStep> {
    const { id, state } = await requireEpisode(input.episodeId);
    const key = stepKey(input.step, input.round);
    const record = state.steps[key];
    if (!record?.remote_job_id) {
      throw new PipelineError(ErrorType.InvalidState, `${id} ${key} has no saved vendor job to wait for`);
    }
    if (record.status === 'succeeded' && record.artifact && record.charged) {
      return completed(record.remote_job_id, record.artifact, state);
    }
    if (record.status === 'needs_reconciliation') parked(id, key, record.error ?? 'needs reconciliation');
    const client = await vendorClient(id);
    const job = await pollUntilDone(client, record.remote_job_id, deps.pollIntervalMs ?? 200).catch(
      async (e: unknown) => {
        if (!(isVendorError(e) && e.operation === 'getJob' && e.status === 404)) throw e;
        // Accepted (and charged) once, unknown now: resubmitting could pay twice, so the step waits for an operator.
        const why = `the vendor no longer knows job ${record.remote_job_id} (lost its state?); it may have charged it`;
        await saveStep(id, key, (r) => ({ ...r!, status: 'needs_reconciliation', error: why }));
        return parked(id, key, why);
      },
    );
    if (job.status === 'failed' || !job.artifact_id) {
      // The vendor did the work and bills for it: the ledger must say so, then the step fails for good.
      await chargeOnce(id, key, record.remote_job_id, null, 'failed');
      throw new PipelineError(ErrorType.VendorRejected, `${id} ${key}: vendor job ${job.job_id} failed`);
    }
    const artifact = await client.downloadArtifact(job.artifact_id);
    const media: MediaFile = {
      path: `media/${key}.${EXTENSIONS[input.step]}`,
      sha256: createHash('sha256').update(artifact.bytes).digest('hex'),
      bytes: artifact.bytes.length,
    };
    // A symlink planted in the episode's directory must not carry the artifact elsewhere.
    const file = assertInside(store.mediaDir(id), path.join(store.mediaDir(id), media.path));
    await ensureDirDurable(path.dirname(file));
    await writeFileDurable(file, artifact.bytes);
    await failpoint('submission.artifact-downloaded');
    const next = await chargeOnce(id, key, record.remote_job_id, media, 'succeeded');
    await failpoint('submission.ledger-written');
    return completed(record.remote_job_id, media, next);
  }

  /** Writes the charge (idempotent per remote job) and counts it only when this call added the ledger entry. */
  async function chargeOnce(
    id: EpisodeId,
    key: string,
    remoteJobId: string,
    artifact: MediaFile | null,
    status: 'succeeded' | 'failed',
  ): Promise<EpisodeState> {
    let added: LedgerEntry | undefined;
    const next = await store.updateEpisode(id, (s) => {
      const updated = charge(s, key, remoteJobId, artifact, status);
      added = updated.ledger.length > s.ledger.length ? updated.ledger.at(-1) : undefined;
      return updated;
    });
    if (added) countCharge(added.step, added.amount_cents, status);
    return next;
  }

  return {
    submitPaidStep: (input: PaidStepInput): Promise<SubmittedStep> =>
      withHeartbeat(() => withFailureMapping(() => submitPaidStep(input))),
    awaitPaidStep: (input: Omit<PaidStepInput, 'spec'>): Promise<CompletedStep> =>
      withFailureMapping(() => awaitPaidStep(input)),
  };
}

/** Money already spent or promised: ledger entries plus accepted jobs not charged yet. */
export function committedCents(state: EpisodeState): number {
  const charged = state.ledger.reduce((sum, l) => sum + l.amount_cents, 0);
  const pending = Object.values(state.steps)
    .filter((s) => s.remote_job_id !== null && !s.charged)
    .reduce((sum, s) => sum + (s.quoted_cost?.amount_cents ?? 0), 0);
  return charged + pending;
}

function newIntent(input: PaidStepInput, ref: string, previous: StepRecord | undefined): StepRecord {
  return {
    step: input.step,
    round: input.round,
    idempotency_key: ref,
    status: 'intent',
    intent_at: new Date().toISOString(),
    // A resend after "certainly not accepted" must carry the same body, or the vendor answers 422.
    spec: previous?.spec ?? input.spec,
    remote_job_id: null,
    submitted_at: null,
    quoted_cost: null,
    artifact: null,
    charged: false,
    reconciliation: previous?.reconciliation ?? null,
    error: null,
  };
}

/** Records the artifact (if any) and the ledger entry of one job, exactly once per remote job. */
function charge(
  s: EpisodeState,
  key: string,
  remoteJobId: string,
  artifact: MediaFile | null,
  status: 'succeeded' | 'failed',
): EpisodeState {
  const record = s.steps[key]!;
  const cost = record.quoted_cost ?? { amount_cents: 0, currency: 'USD' };
  const entry: LedgerEntry = {
    step: record.step,
    round: record.round,
    remote_job_id: remoteJobId,
    amount_cents: cost.amount_cents,
    currency: cost.currency,
    recorded_at: new Date().toISOString(),
  };
  const ledger = s.ledger.some((l) => l.remote_job_id === remoteJobId) ? s.ledger : [...s.ledger, entry];
  return {
    ...s,
    ledger,
    steps: { ...s.steps, [key]: { ...record, status, artifact, charged: true } },
    media: artifact ? { ...s.media, [key]: artifact } : s.media,
  };
}

function completed(remoteJobId: string, artifact: MediaFile, state: EpisodeState): CompletedStep {
  const entry = state.ledger.find((l) => l.remote_job_id === remoteJobId);
  return { remoteJobId, artifact, costCents: entry?.amount_cents ?? 0, currency: entry?.currency ?? 'USD' };
}

async function pollUntilDone(client: VendorClient, jobId: string, intervalMs: number): Promise<VendorJob> {
  const context = Context.current();
  for (let wait = intervalMs; ; wait = Math.min(wait * 2, 10_000)) {
    const job = await client.getJob(jobId);
    context.heartbeat({ jobId, status: job.status });
    if (job.status === 'succeeded' || job.status === 'failed') return job;
    await context.sleep(wait);
  }
}

/** The activity's SDK logger (workflow and activity ids attached by the SDK) plus the episode. */
function activityLogger(episodeId: EpisodeId) {
  const log = Context.current().log;
  return {
    debug(message: string, meta?: Record<string, unknown>): void {
      log.debug(message, { episodeId, ...meta });
    },
    warn(message: string, meta?: Record<string, unknown>): void {
      log.warn(message, { episodeId, ...meta });
    },
  };
}
