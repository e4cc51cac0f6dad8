/**
 * Legacy (week-v1) episode → current schema, as pure functions: the migration writes what `mapLegacyEpisode` returns,
 * and `episodes verify` recomputes it from the preserved evidence to prove that nothing changed since.
 *
 * The whole legacy state.json goes verbatim under `legacy` in the new state (history.json's week value likewise in
 * the history entry); the typed fields are derived from it:
 *  - id `<week>-0`, sequence 0; `allocation_key` null, `allocated_by` `{ kind: 'migration', from_id: <week> }`;
 *  - status `completed`; approval `{ status, by: approved_by, at: approved_at, notes: null }`, or null when its
 *    status is not one the schema knows; media as recorded, relative to the episode directory;
 *  - one step record per remote job of a paid step, keyed `<step>-r<round>` (legacy had no rounds: a step's jobs are
 *    numbered in the order recorded), with `idempotency_key` `week-v1:<week>:<remote_job_id>`, `charged` when a cost
 *    names the job, and the artifact of the last succeeded round; one ledger entry per cost.
 * Anything else (extra fields, jobs of steps that are not paid steps) stays only under `legacy`.
 */
import { formatEpisodeId, type EpisodeId } from '../domain/episode-id';
import {
  approvalSchema,
  episodeStateSchema,
  historyEntrySchema,
  type Approval,
  type EpisodeState,
  type HistoryEntry,
  type LedgerEntry,
  type MediaFile,
  type StepRecord,
} from '../domain/episode-state';
import { stepKey } from '../domain/names';
import { paidStepSchema } from '../domain/paid-step';
import type { WeekId } from '../domain/week-id';
import type { WeekIndexEntry } from '../store/file-store';
import { ProblemCode, problem, type Problem } from '../domain/problem';
import { EVIDENCE_DIR } from './journal';
import {
  LEGACY_FORMAT,
  type JsonObject,
  type LegacyHistoryEntry,
  type LegacyRemoteJob,
  type LegacyState,
} from './legacy-format';

/** The old layout had one episode per week, so every legacy episode becomes sequence 0 of its week. */
export const LEGACY_SEQUENCE = 0;

/** Remote job statuses a completed legacy episode may carry; anything else is still in flight and is refused. */
const FINAL_JOB_STATUSES = new Set(['succeeded', 'failed']);

export interface MigrationSource {
  /** state.json exactly as parsed from its bytes: it goes verbatim under `legacy`. */
  raw: JsonObject;
  legacy: LegacyState;
  /** This week's value in history.json, verbatim. */
  historyRaw: JsonObject;
  history: LegacyHistoryEntry;
  sourceStateSha256: string;
  sourceHistorySha256: string;
  migratedAt: string;
}

export interface MappedEpisode {
  state: EpisodeState;
  history: HistoryEntry;
  indexEntry: WeekIndexEntry;
}

/**
 * Values that fit the legacy schema but cannot be carried into the current one without losing money or meaning.
 * Anything reported here stops the migration; values that merely have no typed home stay only under `legacy`.
 */
export function legacyRepresentationProblems(legacy: LegacyState, file: string, episodeId: string): Problem[] {
  const where = { episode_id: episodeId, file };
  const problems: Problem[] = [];
  const unrepresentable = (message: string) =>
    problems.push(problem(ProblemCode.LegacyUnrepresentable, message, where));
  if (legacy.status !== 'completed') {
    problems.push(
      problem(ProblemCode.LegacyNotCompleted, `status is ${JSON.stringify(legacy.status)}, not "completed"`, where),
    );
  } else if (legacy.completed_at == null) {
    problems.push(problem(ProblemCode.LegacyStateInvalid, 'status is "completed" but completed_at is missing', where));
  }
  const jobs = new Map<string, LegacyRemoteJob>();
  for (const job of legacy.remote_jobs) {
    if (jobs.has(job.remote_job_id)) unrepresentable(`remote job ${job.remote_job_id} is recorded twice`);
    jobs.set(job.remote_job_id, job);
    if (paidStepSchema.safeParse(job.step).success && !FINAL_JOB_STATUSES.has(job.status)) {
      unrepresentable(`remote job ${job.remote_job_id} (${job.step}) has status ${JSON.stringify(job.status)}`);
    }
  }
  const currencies = new Set<string>();
  for (const cost of legacy.costs) {
    currencies.add(cost.currency);
    if (!paidStepSchema.safeParse(cost.step).success) {
      unrepresentable(
        `cost of remote job ${cost.remote_job_id} has step ${JSON.stringify(cost.step)}, not a paid step`,
      );
    }
    const job = jobs.get(cost.remote_job_id);
    if (!job) unrepresentable(`cost references remote job ${JSON.stringify(cost.remote_job_id)}, not in remote_jobs`);
    else if (job.step !== cost.step) {
      unrepresentable(`cost of remote job ${cost.remote_job_id} is for step ${cost.step}, the job is ${job.step}`);
    }
  }
  if (currencies.size > 1) unrepresentable(`costs mix currencies ${[...currencies].sort().join(', ')}`);
  return problems;
}

/** What the state and the history entry of a migrated episode share. */
interface MappedParts {
  episodeId: EpisodeId;
  fromId: WeekId;
  roundOf: (jobId: string) => number;
  media: Record<string, MediaFile>;
  ledger: LedgerEntry[];
  approval: Approval | null;
  completedAt: string;
  migration: EpisodeState['migration'];
}

export function mapLegacyEpisode(source: MigrationSource): MappedEpisode {
  const { legacy } = source;
  const fromId: WeekId = legacy.week;
  const rounds = roundsOf(legacy.remote_jobs);
  const roundOf = (jobId: string): number => rounds.get(jobId) ?? 0;
  const parts: MappedParts = {
    episodeId: formatEpisodeId(fromId, LEGACY_SEQUENCE),
    fromId,
    roundOf,
    media: mapMedia(legacy),
    ledger: legacy.costs.map((c) => ({
      step: paidStepSchema.parse(c.step),
      round: roundOf(c.remote_job_id),
      remote_job_id: c.remote_job_id,
      amount_cents: c.amount_cents,
      currency: c.currency,
      recorded_at: c.recorded_at,
    })),
    approval: mapApproval(legacy.approval),
    completedAt: legacy.completed_at ?? source.history.completed_at,
    migration: {
      from_id: fromId,
      from_format: LEGACY_FORMAT,
      migrated_at: source.migratedAt,
      source_state_sha256: source.sourceStateSha256,
      source_history_sha256: source.sourceHistorySha256,
      evidence_dir: EVIDENCE_DIR,
    },
  };
  const indexEntry: WeekIndexEntry = {
    episode_id: parts.episodeId,
    sequence: LEGACY_SEQUENCE,
    allocation_key: null,
    created_at: legacy.created_at,
    allocated_by: migrationAllocatedBy(fromId),
  };
  return { state: mapState(source, parts), history: mapHistory(source, parts), indexEntry };
}

function migrationAllocatedBy(fromId: WeekId) {
  return { kind: 'migration', from_id: fromId } as const;
}

function mapMedia(legacy: LegacyState): Record<string, MediaFile> {
  return Object.fromEntries(
    Object.entries(legacy.media).map(([name, m]): [string, MediaFile] => [
      name,
      { path: m.path, sha256: m.sha256, bytes: m.bytes },
    ]),
  );
}

function mapState(source: MigrationSource, parts: MappedParts): EpisodeState {
  const { legacy } = source;
  return episodeStateSchema.parse({
    schema: 'episode-state/v1',
    episode_id: parts.episodeId,
    week_id: parts.fromId,
    sequence: LEGACY_SEQUENCE,
    allocation_key: null,
    allocated_by: migrationAllocatedBy(parts.fromId),
    created_at: legacy.created_at,
    status: 'completed',
    steps: mapSteps(legacy, parts),
    ledger: parts.ledger,
    approval: parts.approval,
    media: parts.media,
    completed_at: parts.completedAt,
    migration: parts.migration,
    legacy: source.raw,
  } satisfies EpisodeState);
}

/** One step record per paid remote job; the latest succeeded job of a step holds that step's media. */
function mapSteps(legacy: LegacyState, parts: MappedParts): Record<string, StepRecord> {
  const { roundOf } = parts;
  const steps: Record<string, StepRecord> = {};
  for (const job of legacy.remote_jobs) {
    const step = paidStepSchema.safeParse(job.step);
    if (!step.success) continue; // Not a paid step: no typed home, kept under `legacy` only.
    const round = roundOf(job.remote_job_id);
    const succeeded = job.status === 'succeeded';
    const latest = !legacy.remote_jobs.some((j) => j.step === job.step && roundOf(j.remote_job_id) > round);
    steps[stepKey(step.data, round)] = {
      step: step.data,
      round,
      idempotency_key: `${LEGACY_FORMAT}:${parts.fromId}:${job.remote_job_id}`,
      status: succeeded ? 'succeeded' : 'failed',
      intent_at: job.submitted_at,
      spec: {},
      remote_job_id: job.remote_job_id,
      submitted_at: job.submitted_at,
      quoted_cost: null,
      artifact: succeeded && latest ? (parts.media[job.step] ?? null) : null,
      charged: legacy.costs.some((c) => c.remote_job_id === job.remote_job_id),
      reconciliation: null,
      error: null,
    };
  }
  return steps;
}

function mapHistory(source: MigrationSource, parts: MappedParts): HistoryEntry {
  return historyEntrySchema.parse({
    schema: 'history-entry/v1',
    episode_id: parts.episodeId,
    week_id: parts.fromId,
    sequence: LEGACY_SEQUENCE,
    allocation_key: null,
    completed_at: parts.completedAt,
    remote_jobs: source.legacy.remote_jobs.map((j) => ({
      step: j.step,
      round: parts.roundOf(j.remote_job_id),
      remote_job_id: j.remote_job_id,
    })),
    ledger: parts.ledger,
    total_cost_cents: source.history.total_cost_cents,
    currency: source.history.currency,
    approval: parts.approval,
    media: parts.media,
    migration: parts.migration,
    legacy: source.historyRaw,
  } satisfies HistoryEntry);
}

/** Legacy had no rounds: jobs of the same step are numbered in the order they are recorded. */
function roundsOf(jobs: readonly LegacyRemoteJob[]): Map<string, number> {
  const next = new Map<string, number>();
  const rounds = new Map<string, number>();
  for (const job of jobs) {
    const round = next.get(job.step) ?? 0;
    rounds.set(job.remote_job_id, round);
    next.set(job.step, round + 1);
  }
  return rounds;
}

/** An approval status the current schema does not know stays under `legacy` only (approval null). */
function mapApproval(a: LegacyState['approval']): Approval | null {
  if (!a) return null;
  const status = approvalSchema.shape.status.safeParse(a.status);
  if (!status.success) return null;
  return { status: status.data, by: a.approved_by ?? null, at: a.approved_at ?? null, notes: null };
}
