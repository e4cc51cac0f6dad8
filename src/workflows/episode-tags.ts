/**
 * What every run of an episode carries: `EpisodeId`/`WeekId` (so one search lists the weekly run, the production and
 * every step) and a static summary for the UI. Pure: used by workflows starting children and by the CLI.
 */
import type { SearchAttributePair } from '@temporalio/common';
import { parseEpisodeId } from '../domain/episode-id';
import { EpisodeIdSearchAttribute, WeekIdSearchAttribute } from '../domain/names';

export interface EpisodeRunTags {
  typedSearchAttributes: SearchAttributePair[];
  staticSummary: string;
}

/** `what` names the run, e.g. "production" or "paid step video-r0". */
export function episodeRunTags(episodeId: string, what: string): EpisodeRunTags {
  const attributes: SearchAttributePair[] = [{ key: EpisodeIdSearchAttribute, value: episodeId }];
  // An id that does not parse gets no WeekId; the paid activities refuse such an episode anyway.
  const weekId = weekOf(episodeId);
  if (weekId !== undefined) attributes.push({ key: WeekIdSearchAttribute, value: weekId });
  return { typedSearchAttributes: attributes, staticSummary: `Episode ${episodeId}: ${what}` };
}

function weekOf(episodeId: string): string | undefined {
  try {
    return parseEpisodeId(episodeId).weekId;
  } catch {
    return undefined;
  }
}
