/**
 * Waiting for a paid step: its vendor job → poll → artifact saved (sha256, size) → ledger. Nothing is taken from a
 * record read earlier: the reference is re-checked, and the charge is written from the vendor's job under the
 * episode's lock, against the record as it is at that moment, at the amount the vendor reports (pay-once.ts). A store
 * that forgot the reference (a failover to an asynchronous replica, a restore) is repaired from the vendor by the
 * step's key, or the step is refused or parked.
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type { EpisodeState, LedgerEntry, MediaFile, Money, PaidStep, StepRecord } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { ledgerCost } from '../domain/pay-once';
import { failpoint } from '../failpoints';
import { assertInside, ensureDirDurable, writeFileDurable } from '../files/durable-fs';
import { isUnknownJob, isVendorError } from '../vendor-api/vendor-error';
import type { VendorAdapter, VendorJob } from '../vendors/port';
import { activityContext } from './activity-context';
import { countCharge } from './metrics';
import { PaidStepCall, type CompletedStep, type PaidStepDeps, type PaidStepInput } from './paid-step-call';

const EXTENSIONS: Record<PaidStep, string> = { video: 'mp4', cover: 'png', rework: 'mp4', assembly: 'mp4' };

export async function awaitPaidStep(deps: PaidStepDeps, input: Omit<PaidStepInput, 'spec'>): Promise<CompletedStep> {
  const { call, state } = await PaidStepCall.begin(deps, input);
  const done = settledStep(state, call.at.key);
  if (done) return done;
  if (call.record?.status === 'needs_reconciliation') call.park(call.record.error ?? 'needs reconciliation');
  return settleStep(call);
}

/** The step's result when its record, its media and its ledger line all say it is done; undefined otherwise. */
export function settledStep(state: EpisodeState, key: string): CompletedStep | undefined {
  const record = state.steps[key];
  if (record?.status !== 'succeeded' || !record.artifact || !record.charged || !record.remote_job_id) return undefined;
  const entry = state.ledger.find((l) => l.remote_job_id === record.remote_job_id);
  if (!entry || entry.amount_cents !== record.quoted_cost?.amount_cents) return undefined;
  return {
    remoteJobId: record.remote_job_id,
    artifact: record.artifact,
    costCents: entry.amount_cents,
    currency: entry.currency,
  };
}

/** Finds the step's vendor job, waits for it to finish, saves its artifact, then its charge. Idempotent. */
export async function settleStep(call: PaidStepCall): Promise<CompletedStep> {
  const { at, deps } = call;
  const vendor = await call.vendor();
  const reference = await referenceOf(call);
  const job = await pollUntilDone(vendor, reference.jobId, deps.pollIntervalMs ?? 200).catch(async (e: unknown) => {
    if (!isUnknownJob(e)) throw e;
    // Accepted (and charged) once, unknown now: resubmitting could pay twice, so the step waits for an operator.
    const why = `the vendor no longer knows job ${reference.jobId} (lost its state?); it may have charged it`;
    await call.markNeedsReconciliation(why);
    return call.park(why);
  });
  if (job.episode_id !== at.id || job.kind !== at.step || (job.client_ref !== null && job.client_ref !== at.ref)) {
    throw call.storeCorrupt(
      `the saved job ${job.job_id} is a ${job.kind} of ${job.episode_id} (key ${job.client_ref})`,
    );
  }
  const cost = ledgerCost(vendor.profile, { status: job.status === 'failed' ? 'failed' : 'succeeded', cost: job.cost });
  if ('park' in cost) return call.park(`${cost.park} (job ${job.job_id})`);
  // The vendor vouches for the job by key (its own answer, or the lookup that found it): enough to repair the record.
  const charge: Charge = { call, job, cost, vouched: reference.byKey || job.client_ref === at.ref };
  if (job.status === 'failed' || !job.artifact) {
    // The ledger says what the vendor bills for the failure (0 where documented unbilled), then the step fails.
    await chargeOnce(deps, charge, null, 'failed');
    throw new PipelineError(ErrorType.VendorRejected, `${at.id} ${at.key}: vendor job ${job.job_id} failed`);
  }
  const media = await saveArtifact(call, vendor, job);
  await failpoint('submission.artifact-downloaded');
  await chargeOnce(deps, charge, media, 'succeeded');
  await failpoint('submission.ledger-written');
  return { remoteJobId: job.job_id, artifact: media, costCents: cost.amount_cents, currency: cost.currency };
}

/** The saved reference, or (the store forgot it) the vendor's job for the step's key, written back before polling. */
async function referenceOf(call: PaidStepCall): Promise<{ jobId: string; byKey: boolean }> {
  const record = call.record;
  if (record?.remote_job_id) return { jobId: record.remote_job_id, byKey: false };
  const answer = await call.lookUp();
  if ('unknown' in answer || !answer.found) {
    const why =
      'unknown' in answer
        ? `the store has no vendor job for this submitted step and ${answer.unknown}`
        : 'the store has no vendor job for this submitted step and the vendor has none for its key (lost its state?)';
    await call.markNeedsReconciliation(why);
    return call.park(why);
  }
  const job = answer.found;
  await call.save((r) => {
    if (r?.remote_job_id === job.job_id) return r;
    if (r?.remote_job_id)
      throw call.storeCorrupt(`the record names job ${r.remote_job_id}, the vendor's is ${job.job_id}`);
    return { ...(r ?? forgottenRecord(call, job)), ...reference(job, r), status: 'submitted', error: null };
  });
  return { jobId: job.job_id, byKey: true };
}

/** The fields a repair writes back together: the job and its cost (the quote, or none yet), both from the vendor. */
function reference(job: VendorJob, r: StepRecord | undefined, cost: Money | null = job.cost): Partial<StepRecord> {
  return { remote_job_id: job.job_id, quoted_cost: cost, submitted_at: r?.submitted_at ?? job.accepted_at };
}

/** Downloads the output into the media dir; an output the vendor no longer serves parks the step, never resends. */
async function saveArtifact(call: PaidStepCall, vendor: VendorAdapter, job: VendorJob): Promise<MediaFile> {
  const { at, deps } = call;
  const bytes = await vendor.download(job).catch(async (e: unknown) => {
    if (!isGoneArtifact(e)) throw e;
    const why = `the vendor no longer serves the output of job ${job.job_id} (expired?); the job is done and paid`;
    await call.markNeedsReconciliation(why);
    return call.park(why);
  });
  const media: MediaFile = {
    path: `media/${at.key}.${EXTENSIONS[at.step]}`,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    bytes: bytes.length,
  };
  // A symlink planted in the episode's directory must not carry the artifact elsewhere.
  const dir = deps.store.mediaDir(at.id);
  const file = assertInside(dir, path.join(dir, media.path));
  await ensureDirDurable(path.dirname(file));
  await writeFileDurable(file, bytes);
  return media;
}

function isGoneArtifact(e: unknown): boolean {
  return isVendorError(e) && e.operation === 'downloadArtifact' && (e.status === 404 || e.status === 410);
}

interface Charge {
  call: PaidStepCall;
  /** The vendor's job, as the last poll returned it. */
  job: VendorJob;
  /** What the ledger records for it (ledgerCost). */
  cost: Money;
  /** The vendor said this job is the one the step's key created: the record may be repaired to name it. */
  vouched: boolean;
}

/** Writes the charge (idempotent per remote job) and counts it only when this call added the ledger entry. */
async function chargeOnce(
  deps: PaidStepDeps,
  c: Charge,
  artifact: MediaFile | null,
  status: 'succeeded' | 'failed',
): Promise<EpisodeState> {
  let added: LedgerEntry | undefined;
  const next = await deps.store.updateEpisode(c.call.at.id, (s) => {
    const updated = charged(s, c, artifact, status);
    added = updated.ledger.length > s.ledger.length ? updated.ledger.at(-1) : undefined;
    return updated;
  });
  if (added) countCharge(added.step, added.amount_cents, status);
  return next;
}

/**
 * Pure, run under the episode's lock on the record as it is now: records the artifact (if any) and the ledger entry
 * of the vendor's job, exactly once per job, at the amount the vendor reports. A record naming another job is refused.
 */
export function charged(s: EpisodeState, c: Charge, artifact: MediaFile | null, status: 'succeeded' | 'failed') {
  const { call, job, cost } = c;
  const { at } = call;
  const record = s.steps[at.key];
  if (record?.remote_job_id && record.remote_job_id !== job.job_id) {
    throw call.storeCorrupt(
      `the record names job ${record.remote_job_id}, the vendor's job for its key is ${job.job_id}`,
    );
  }
  if (!record?.remote_job_id && !c.vouched) {
    call.park(`the store forgot job ${job.job_id} while it ran; the next attempt looks it up by idempotency key`);
  }
  const existing = s.ledger.find((l) => l.remote_job_id === job.job_id);
  if (existing && (existing.amount_cents !== cost.amount_cents || existing.currency !== cost.currency)) {
    throw call.storeCorrupt(
      `the ledger bills job ${job.job_id} ${existing.amount_cents}, the vendor ${cost.amount_cents}`,
    );
  }
  const entry: LedgerEntry = {
    step: at.step,
    round: at.round,
    remote_job_id: job.job_id,
    amount_cents: cost.amount_cents,
    currency: cost.currency,
    recorded_at: new Date().toISOString(),
  };
  const base = record ?? forgottenRecord(call, job);
  // The intent came no later than the acceptance: a record rebuilt after a restore (bare, dated when it was rebuilt)
  // must not look like a step begun later (a reassembly after completion, to `episodes verify`).
  const intentAt = Date.parse(base.intent_at) > Date.parse(job.accepted_at) ? job.accepted_at : base.intent_at;
  const step: StepRecord = {
    ...base,
    ...reference(job, record, cost),
    intent_at: intentAt,
    status,
    artifact,
    charged: true,
    error: null,
  };
  return {
    ...s,
    ledger: existing ? s.ledger : [...s.ledger, entry],
    steps: { ...s.steps, [at.key]: step },
    media: artifact ? { ...s.media, [at.key]: artifact } : s.media,
  };
}

/** A record the store forgot entirely, rebuilt from the vendor's job: its intent came no later than the acceptance. */
function forgottenRecord(call: PaidStepCall, job: VendorJob): StepRecord {
  return call.bareRecord({ intent_at: job.accepted_at });
}

async function pollUntilDone(vendor: VendorAdapter, jobId: string, intervalMs: number): Promise<VendorJob> {
  const context = activityContext();
  for (let wait = intervalMs; ; wait = Math.min(wait * 2, 10_000)) {
    const job = await vendor.get(jobId);
    context?.heartbeat({ jobId, status: job.status });
    if (job.status === 'succeeded' || job.status === 'failed') return job;
    await (context ? context.sleep(wait) : new Promise((resolve) => setTimeout(resolve, wait)));
  }
}
