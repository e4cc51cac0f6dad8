/** Rows of the PostgreSQL store <-> domain states: every row read is validated with zod, every JSONB value written as text. */
import { z } from 'zod';
import type { StoredEpisodeRef } from '../domain/allocation';
import type { EpisodeId } from '../domain/episode-id';
import { episodeStateSchema, type EpisodeState, type HistoryEntry } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import type { WeekId } from '../domain/week-id';
import { unexpectedContent } from '../domain/zod-issue';

/** An episode row with its remote jobs and ledger folded back into the state's `steps` and `ledger`. */
export const EPISODE_COLUMNS = `
  e.episode_id, e.week_id, e.sequence, e.allocation_key, e.allocated_by, e.created_at, e.status, e.approval, e.media,
  e.completed_at, e.migration, e.legacy,
  COALESCE((SELECT jsonb_object_agg(j.step_key, j.record) FROM remote_jobs j WHERE j.episode_id = e.episode_id),
           '{}'::jsonb) AS steps,
  COALESCE((SELECT jsonb_agg(jsonb_build_object('step', l.step, 'round', l.round, 'remote_job_id', l.remote_job_id,
                                                'amount_cents', l.amount_cents, 'currency', l.currency,
                                                'recorded_at', l.recorded_at) ORDER BY l.position)
            FROM ledger_entries l WHERE l.episode_id = e.episode_id), '[]'::jsonb) AS ledger`;

const refRowSchema = z.object({
  episode_id: z.string(),
  week_id: z.string(),
  sequence: z.number().int(),
  allocation_key: z.string().nullable(),
});

export function toRef(row: Record<string, unknown>): StoredEpisodeRef {
  const r = parseRow(`episodes row ${String(row.episode_id)}`, refRowSchema, row);
  // The ids are re-checked by decideAllocation; the casts only carry the brands.
  return {
    episodeId: r.episode_id as EpisodeId,
    weekId: r.week_id as WeekId,
    sequence: r.sequence,
    allocationKey: r.allocation_key,
  };
}

export function stateFromRow(row: Record<string, unknown>): EpisodeState {
  const { migration, legacy, ...rest } = row;
  return parseRow(`episodes row ${String(row.episode_id)}`, episodeStateSchema, {
    schema: 'episode-state/v1',
    ...rest,
    ...(migration === null ? {} : { migration }),
    ...(legacy === null ? {} : { legacy }),
  });
}

export function parseRow<S extends z.ZodType>(where: string, schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new PipelineError(ErrorType.StoreCorrupt, `${where}: ${unexpectedContent(parsed.error)}`, { where });
  }
  return parsed.data;
}

export function historyValues(entry: HistoryEntry): unknown[] {
  return [
    entry.episode_id,
    entry.week_id,
    entry.sequence,
    entry.allocation_key,
    entry.completed_at,
    entry.total_cost_cents,
    entry.currency,
    json(entry),
  ];
}

export function json(value: unknown): string {
  return JSON.stringify(value);
}

export function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
