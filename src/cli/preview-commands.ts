/**
 * `episodes preview [--slots N]`: a run triggered now and the schedule's next slots, each with its ISO week and the
 * episode id it would take if it ran now. Reads the schedule and the store's episodes of those weeks; writes nothing,
 * takes no lock, allocates nothing. The ids come from the allocation rule (src/domain/allocation.ts) applied to what
 * the store holds now, counting earlier slots of the same week as taken.
 */
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { z } from 'zod';
import { parseAllocationKey } from '../domain/allocation-key';
import { decideAllocation, type StoredEpisodeRef } from '../domain/allocation';
import { PipelineError, ErrorType } from '../domain/errors';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { isoWeekOfInstant, type WeekId } from '../domain/week-id';
import { SCHEDULE_ID } from '../domain/names';
import type { EpisodeStore } from '../store/episode-store';
import { printJson, type CliContext } from './context';
import { describeSchedule } from './schedule-commands';
import { parseInteger } from './vendor-commands';

/** Why the ids are a preview: said with every preview, in the CLI and on the desk. */
export const PREVIEW_NOTE =
  'Ids are decided when a run starts, by allocation under the pipeline lock (only allocation hands out ids): a run ' +
  'started, retried or restored before then takes the next one, so these may change. Nothing was written.';

export interface PreviewSlot {
  /** `now`: a run triggered now (`episodes schedule trigger`, `npm run demo`); else the slot's scheduled time. */
  slot: 'now' | Date;
  weekId: WeekId;
  /** Undefined when the week is full. */
  episodeId: EpisodeId | undefined;
}

export interface SlotPreview {
  scheduleId: string;
  timezone: string;
  paused: boolean;
  slots: PreviewSlot[];
}

/** Slots in order; each takes the rule's next id over the stored episodes of its week and the earlier slots in it. */
export function previewEpisodeIds(
  slots: readonly { slot: 'now' | Date; weekId: WeekId }[],
  stored: ReadonlyMap<WeekId, readonly StoredEpisodeRef[]>,
): PreviewSlot[] {
  const taken = new Map<WeekId, StoredEpisodeRef[]>();
  return slots.map(({ slot, weekId }) => {
    const weekEpisodes = [...(stored.get(weekId) ?? []), ...(taken.get(weekId) ?? [])];
    const key = parseAllocationKey(`preview-${slot === 'now' ? 'now' : slot.toISOString()}`);
    try {
      const decision = decideAllocation({ key, weekId, keyMatches: [], weekEpisodes });
      if (decision.kind !== 'new') throw new Error('a preview key matched a stored episode');
      const ref = { episodeId: decision.episodeId, weekId, sequence: decision.sequence, allocationKey: key };
      taken.set(weekId, [...(taken.get(weekId) ?? []), ref]);
      return { slot, weekId, episodeId: decision.episodeId };
    } catch (e) {
      if (e instanceof PipelineError && e.type === ErrorType.InvalidAllocationRequest) {
        return { slot, weekId, episodeId: undefined };
      }
      throw e;
    }
  });
}

const scheduleArgs = z.object({ timezone: z.string() });

/** Read-only: the schedule's description and the store's episodes of the weeks concerned. */
export async function slotPreview(
  client: Client,
  store: EpisodeStore,
  opts: { scheduleId: string; slots: number; now?: Date; fallbackTimezone: string },
): Promise<SlotPreview> {
  const d = await describeSchedule(client, opts.scheduleId);
  // Each run decides its week in the timezone the schedule passes it (src/workflows/weekly-episode.ts).
  const args = d.action.type === 'startWorkflow' ? scheduleArgs.safeParse(d.action.args?.[0]) : undefined;
  const timezone = args?.success ? args.data.timezone : opts.fallbackTimezone;
  const times: ('now' | Date)[] = ['now', ...d.info.nextActionTimes.slice(0, opts.slots)];
  const now = opts.now ?? new Date();
  const slots = times.map((slot) => ({ slot, weekId: isoWeekOfInstant(slot === 'now' ? now : slot, timezone) }));
  const stored = new Map<WeekId, StoredEpisodeRef[]>();
  for (const weekId of new Set(slots.map((s) => s.weekId))) {
    const episodes = await store.listEpisodes({ weekId });
    stored.set(
      weekId,
      episodes.map((e) => ({
        episodeId: parseEpisodeId(e.episode_id).episodeId,
        weekId,
        sequence: e.sequence,
        allocationKey: e.allocation_key,
      })),
    );
  }
  return { scheduleId: d.scheduleId, timezone, paused: d.state.paused, slots: previewEpisodeIds(slots, stored) };
}

export function slotLabel(slot: 'now' | Date): string {
  return slot === 'now' ? 'now (trigger)' : slot.toISOString();
}

export function registerPreviewCommands(program: Command, ctx: CliContext): void {
  program
    .command('preview')
    .description('the episode id a run triggered now and each next scheduled slot would take (writes nothing)')
    .option('--slots <n>', 'how many scheduled slots (at most 10)', '3')
    .option('--schedule-id <id>', 'schedule id', SCHEDULE_ID)
    .option('--json', 'machine-readable output')
    .action(async (opts: { slots: string; scheduleId: string; json?: boolean }) => {
      const preview = await slotPreview(await ctx.getClient(), ctx.getStore(), {
        scheduleId: opts.scheduleId,
        slots: parseInteger('--slots', opts.slots, 10),
        fallbackTimezone: ctx.config.timezone,
      });
      const rows = preview.slots.map((s) => ({
        slot: s.slot === 'now' ? 'now' : s.slot.toISOString(),
        week_id: s.weekId,
        episode_id: s.episodeId ?? null,
      }));
      if (opts.json) {
        const { scheduleId, timezone, paused } = preview;
        return printJson({ schedule_id: scheduleId, timezone, paused, slots: rows, note: PREVIEW_NOTE });
      }
      console.log(`schedule ${preview.scheduleId} (${preview.timezone})${preview.paused ? ', paused' : ''}:`);
      for (const s of preview.slots) {
        console.log(`  ${slotLabel(s.slot).padEnd(26)} ${s.weekId}  ${s.episodeId ?? '(week full)'}`);
      }
      console.log(PREVIEW_NOTE);
    });
}
