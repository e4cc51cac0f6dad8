/**
 * The "week-v1" format, before versioned ids: everything keyed by week alone.
 *
 *   <data>/episodes/<week_id>/state.json   one episode per week
 *   <data>/episodes/<week_id>/<media>      paths as recorded in state.media, relative to that directory
 *   <data>/history.json                    one object keyed by week_id
 *
 * Loose objects on purpose: real files carry fields nobody wrote down, and every one of them is evidence that must
 * survive. Only what the migration maps into the current schema is typed here.
 */
import { z } from 'zod';
import { weekIdSchema } from '../domain/episode-state';

export const LEGACY_FORMAT = 'week-v1';

const isoInstant = z.iso.datetime({ offset: true });
const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

export const legacyMediaSchema = z.looseObject({
  path: z.string(),
  sha256: sha256Hex,
  bytes: z.number().int().nonnegative(),
});

export const legacyRemoteJobSchema = z.looseObject({
  step: z.string(),
  remote_job_id: z.string().min(1),
  submitted_at: isoInstant,
  status: z.string(),
});
export type LegacyRemoteJob = z.infer<typeof legacyRemoteJobSchema>;

export const legacyCostSchema = z.looseObject({
  step: z.string(),
  remote_job_id: z.string(),
  amount_cents: z.number().int().nonnegative(),
  currency: z.string().min(1),
  recorded_at: isoInstant,
});

export const legacyApprovalSchema = z.looseObject({
  status: z.string(),
  approved_by: z.string().nullish(),
  approved_at: isoInstant.nullish(),
});

export const legacyStateSchema = z.looseObject({
  week: weekIdSchema,
  status: z.string(),
  created_at: isoInstant,
  approval: legacyApprovalSchema.nullish(),
  remote_jobs: z.array(legacyRemoteJobSchema),
  costs: z.array(legacyCostSchema),
  completed_at: isoInstant.nullish(),
  media: z.record(z.string(), legacyMediaSchema),
});
export type LegacyState = z.infer<typeof legacyStateSchema>;

/** One week's entry of history.json; `<media name>_sha256` fields are compared with the state's media. */
export const legacyHistoryEntrySchema = z.looseObject({
  completed_at: isoInstant,
  total_cost_cents: z.number().int().nonnegative(),
  currency: z.string().min(1),
});
export type LegacyHistoryEntry = z.infer<typeof legacyHistoryEntrySchema>;

/** Keys shaped like a week id are episodes; any other top-level key is kept, verbatim, only in the evidence copy. */
export const LEGACY_WEEK_KEY = /^\d{4}-W\d{2}$/;

export type JsonObject = Record<string, unknown>;

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
