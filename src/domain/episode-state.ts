/**
 * zod schemas of every file the stores write. Files are parsed on every read: a file that does not match is a clear
 * `StoreCorrupt` error naming it, never a silent default.
 */
import { z } from 'zod';
import { parseEpisodeId, type EpisodeIdentity } from './episode-id';
import { parseWeekId } from './week-id';
import { paidStepSchema } from './paid-step';
import { DECISION_CHANNELS } from './decision';

const isoInstant = z.iso.datetime({ offset: true });

export const episodeIdSchema = z.string().transform((s, ctx) => {
  try {
    return parseEpisodeId(s).episodeId;
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
    return z.NEVER;
  }
});
export const weekIdSchema = z.string().transform((s, ctx) => {
  try {
    return parseWeekId(s);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
    return z.NEVER;
  }
});

export const allocatedBySchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('workflow'), workflow_id: z.string(), run_id: z.string(), namespace: z.string() }),
  z.strictObject({ kind: z.literal('cli'), hostname: z.string(), pid: z.number().int(), user: z.string() }),
  z.strictObject({ kind: z.literal('migration'), from_id: z.string() }),
  z.strictObject({ kind: z.literal('test'), note: z.string() }),
]);
export type AllocatedBy = z.infer<typeof allocatedBySchema>;

// Kept here too for the modules that read a step kind beside the records that hold it.
export { paidStepSchema, type PaidStep } from './paid-step';

export const moneySchema = z.strictObject({ amount_cents: z.number().int().nonnegative(), currency: z.string() });
export type Money = z.infer<typeof moneySchema>;

export const mediaFileSchema = z.strictObject({
  path: z.string(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().nonnegative(),
});
export type MediaFile = z.infer<typeof mediaFileSchema>;

/** One paid step's submission record: the protocol's durable memory (intent → reference → artifact → charge). */
export const stepRecordSchema = z.strictObject({
  step: paidStepSchema,
  round: z.number().int().nonnegative(),
  idempotency_key: z.string(),
  status: z.enum(['intent', 'submitted', 'succeeded', 'failed', 'needs_reconciliation', 'not_submitted']),
  intent_at: isoInstant,
  spec: z.record(z.string(), z.unknown()),
  remote_job_id: z.string().nullable(),
  submitted_at: isoInstant.nullable(),
  quoted_cost: moneySchema.nullable(),
  artifact: mediaFileSchema.nullable(),
  charged: z.boolean(),
  reconciliation: z
    .strictObject({ resolution: z.enum(['remote-job', 'not-submitted']), by: z.string(), at: isoInstant })
    .nullable(),
  error: z.string().nullable(),
  /** The adapter the step's job lives at (absent: native); a settle always goes back to it. */
  vendor: z.string().max(200).optional(),
  /** Budget held for the step while its cost is unknown (a metered step's declared maximum). */
  reserved_cents: z.number().int().nonnegative().optional(),
});
export type StepRecord = z.infer<typeof stepRecordSchema>;

export const ledgerEntrySchema = z.strictObject({
  step: paidStepSchema,
  round: z.number().int().nonnegative(),
  remote_job_id: z.string(),
  amount_cents: z.number().int().nonnegative(),
  currency: z.string(),
  recorded_at: isoInstant,
});
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;

/** One decision taken in one round: who, through which channel (domain/decision.ts), when (workflow time). */
export const decisionRecordSchema = z.strictObject({
  round: z.number().int().nonnegative(),
  kind: z.enum(['approve', 'rework']),
  by: z.string(),
  channel: z.enum(DECISION_CHANNELS),
  at: isoInstant,
});
export type DecisionRecord = z.infer<typeof decisionRecordSchema>;

export const approvalSchema = z.strictObject({
  status: z.enum(['pending', 'approved', 'rework_requested', 'expired']),
  by: z.string().nullable(),
  at: isoInstant.nullable(),
  notes: z.string().nullable(),
  /** Every decision of the episode so far, oldest first (productions with the decision-channels patch). */
  decisions: z.array(decisionRecordSchema).optional(),
});
export type Approval = z.infer<typeof approvalSchema>;

export const migrationMetadataSchema = z.strictObject({
  from_id: z.string(),
  from_format: z.literal('week-v1'),
  migrated_at: isoInstant,
  source_state_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  source_history_sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  evidence_dir: z.string(),
});

export const EPISODE_STATUSES = ['allocated', 'in_production', 'awaiting_approval', 'completed', 'failed'] as const;

export const episodeStateSchema = z.strictObject({
  schema: z.literal('episode-state/v1'),
  episode_id: episodeIdSchema,
  week_id: weekIdSchema,
  sequence: z.number().int().nonnegative(),
  allocation_key: z.string().nullable(),
  allocated_by: allocatedBySchema,
  created_at: isoInstant,
  status: z.enum(EPISODE_STATUSES),
  /** Keyed `<step>-r<round>`. */
  steps: z.record(z.string(), stepRecordSchema),
  ledger: z.array(ledgerEntrySchema),
  approval: approvalSchema.nullable(),
  media: z.record(z.string(), mediaFileSchema),
  completed_at: isoInstant.nullable(),
  migration: migrationMetadataSchema.optional(),
  /** Every field of a migrated legacy state, verbatim (unknown ones included): evidence. */
  legacy: z.record(z.string(), z.unknown()).optional(),
});
export type EpisodeState = z.infer<typeof episodeStateSchema>;

/** Completed history: one immutable entry per episode. */
export const historyEntrySchema = z.strictObject({
  schema: z.literal('history-entry/v1'),
  episode_id: episodeIdSchema,
  week_id: weekIdSchema,
  sequence: z.number().int().nonnegative(),
  allocation_key: z.string().nullable(),
  completed_at: isoInstant,
  remote_jobs: z.array(z.strictObject({ step: z.string(), round: z.number().int(), remote_job_id: z.string() })),
  ledger: z.array(ledgerEntrySchema),
  total_cost_cents: z.number().int().nonnegative(),
  currency: z.string(),
  approval: approvalSchema.nullable(),
  media: z.record(z.string(), mediaFileSchema),
  migration: migrationMetadataSchema.optional(),
  legacy: z.record(z.string(), z.unknown()).optional(),
});
export type HistoryEntry = z.infer<typeof historyEntrySchema>;

/** The state of a freshly allocated episode: identity, key, provenance, nothing produced yet. */
export function initialState(
  identity: EpisodeIdentity,
  allocationKey: string | null,
  allocatedBy: AllocatedBy,
  createdAt: string,
): EpisodeState {
  return {
    schema: 'episode-state/v1',
    episode_id: identity.episodeId,
    week_id: identity.weekId,
    sequence: identity.sequence,
    allocation_key: allocationKey,
    allocated_by: allocatedBy,
    created_at: createdAt,
    status: 'allocated',
    steps: {},
    ledger: [],
    approval: null,
    media: {},
    completed_at: null,
  };
}
