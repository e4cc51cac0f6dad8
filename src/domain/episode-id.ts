import { PipelineError, ErrorType } from './errors';
import { parseWeekId, type WeekId } from './week-id';

/** `${week_id}-${sequence}`: the one durable id of an episode (directories, state, history, commands). */
export type EpisodeId = string & { readonly __brand: 'EpisodeId' };

/** Far above any real weekly cadence; keeps ids short and sequences exact integers. */
export const MAX_SEQUENCE = 999_999;

const EPISODE_ID_PATTERN = /^(\d{4}-W\d{2})-(0|[1-9]\d{0,5})$/;

export function formatEpisodeId(weekId: WeekId, sequence: number): EpisodeId {
  if (!Number.isInteger(sequence) || sequence < 0 || sequence > MAX_SEQUENCE) {
    throw new PipelineError(ErrorType.InvalidInput, `invalid sequence ${sequence}`);
  }
  return `${weekId}-${sequence}` as EpisodeId;
}

export interface EpisodeIdentity {
  episodeId: EpisodeId;
  weekId: WeekId;
  sequence: number;
}

/** Strict: the whole string must be a week id and a sequence without leading zeros; nothing else gets near a path. */
export function parseEpisodeId(raw: unknown): EpisodeIdentity {
  if (typeof raw !== 'string') {
    throw new PipelineError(ErrorType.InvalidInput, `episode id must be a string like 2026-W32-0, got ${typeof raw}`);
  }
  const match = EPISODE_ID_PATTERN.exec(raw);
  if (!match) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `invalid episode id ${JSON.stringify(raw.slice(0, 80))}: expected YYYY-Www-N (N without leading zeros)`,
    );
  }
  const weekId = parseWeekId(match[1]);
  const sequence = Number(match[2]);
  return { episodeId: raw as EpisodeId, weekId, sequence };
}
