import type { ScheduleDescription, ScheduleOptions } from '@temporalio/client';
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { PipelineError, ErrorType } from '../domain/errors';
import { parseInstant } from '../domain/week-id';
import { SCHEDULE_ID, SCHEDULED_WORKFLOW_ID_BASE } from '../domain/names';
import { weeklyEpisodeWorkflow } from '../workflows';
import { printJson, type CliContext } from './context';

/**
 * The weekly schedule. Overlap ALLOW_ALL: each slot is its own logical run with its own key and episode, and a run
 * may legitimately wait days for approval; SKIP or BUFFER would silently drop or delay next week's episode.
 * Catchup window one day: after a short outage the missed Monday run still happens; after a longer one an operator
 * decides, with `schedule backfill`, which slots to run.
 */
export interface WeeklyScheduleParams {
  scheduleId: string;
  taskQueue: string;
  /** IANA timezone of the calendar, also passed to each run to decide its ISO week. */
  timezone: string;
  /** Runs are named `<base>-<nominal time>`; that workflow ID is the run's allocation key. */
  workflowIdBase?: string;
  /** Replaces the Monday 09:00 calendar (tests use denser specs). */
  spec?: ScheduleOptions['spec'];
  /**
   * Creates the schedule already paused, with this note: it then only runs what is backfilled or triggered. Pausing
   * right after creating leaves a window in which the spec can fire, and a pause sent just before a backfill can be
   * lost on the dev server (docs/reliability.md).
   */
  pausedNote?: string;
}

export function weeklyScheduleOptions(p: WeeklyScheduleParams): ScheduleOptions {
  return {
    scheduleId: p.scheduleId,
    spec: p.spec ?? { calendars: [{ dayOfWeek: 'MONDAY', hour: 9, minute: 0 }], timezone: p.timezone },
    action: {
      type: 'startWorkflow',
      workflowType: weeklyEpisodeWorkflow,
      workflowId: p.workflowIdBase ?? SCHEDULED_WORKFLOW_ID_BASE,
      taskQueue: p.taskQueue,
      args: [{ timezone: p.timezone }],
    },
    policies: { overlap: 'ALLOW_ALL', catchupWindow: '1 day' },
    // Only when asked: the definition hash of `ensureWeeklySchedule` must not change for existing schedules.
    ...(p.pausedNote === undefined ? {} : { state: { paused: true, note: p.pausedNote } }),
  };
}

/**
 * Memo key (on the runs the schedule starts) holding a hash of the schedule's definition: schedule memos cannot be
 * updated, and comparing the server's expanded calendar with ours would be fragile.
 */
const DEFINITION_MEMO = 'episodesScheduleDefinition';

export type EnsureOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Creates the weekly schedule, or updates it to the current definition. With `onlyIfChanged`, a schedule already at
 * this definition is left untouched (`cluster setup`: a second run changes nothing).
 */
export async function ensureWeeklySchedule(
  client: Client,
  p: WeeklyScheduleParams,
  { onlyIfChanged = false }: { onlyIfChanged?: boolean } = {},
): Promise<EnsureOutcome> {
  const base = weeklyScheduleOptions(p);
  const definition = createHash('sha256')
    .update(JSON.stringify({ ...base, action: { ...base.action, workflowType: weeklyEpisodeWorkflow.name } }))
    .digest('hex');
  const options = { ...base, action: { ...base.action, memo: { [DEFINITION_MEMO]: definition } } };
  try {
    await client.schedule.create(options);
    return 'created';
  } catch (e) {
    const { ScheduleAlreadyRunning } = await import('@temporalio/client');
    if (!(e instanceof ScheduleAlreadyRunning)) throw e;
  }
  const handle = client.schedule.getHandle(p.scheduleId);
  if (onlyIfChanged && (await handle.describe()).action.memo?.[DEFINITION_MEMO] === definition) return 'unchanged';
  await handle.update((prev) => ({ ...prev, spec: options.spec, action: options.action, policies: options.policies }));
  return 'updated';
}

/** The schedule's description; a missing schedule is an operator's error with the command that creates it. */
export async function describeSchedule(client: Client, scheduleId: string): Promise<ScheduleDescription> {
  try {
    return await client.schedule.getHandle(scheduleId).describe();
  } catch (e) {
    const { ScheduleNotFoundError } = await import('@temporalio/client');
    if (e instanceof ScheduleNotFoundError) {
      const message = `schedule ${scheduleId} does not exist (create it with \`episodes schedule ensure\`)`;
      throw new PipelineError(ErrorType.InvalidState, message);
    }
    throw e;
  }
}

export function registerScheduleCommands(program: Command, ctx: CliContext): void {
  const schedule = program.command('schedule').description('the weekly Temporal schedule');
  const idOption = ['--schedule-id <id>', 'schedule id', SCHEDULE_ID] as const;

  schedule
    .command('ensure')
    .description('create the weekly schedule, or update it to the current definition (idempotent)')
    .option(...idOption)
    .action(async (opts: { scheduleId: string }) => {
      const client = await ctx.getClient();
      const outcome = await ensureWeeklySchedule(client, {
        scheduleId: opts.scheduleId,
        taskQueue: ctx.config.taskQueue,
        timezone: ctx.config.timezone,
      });
      console.log(`${outcome} schedule ${opts.scheduleId}`);
    });

  schedule
    .command('describe')
    .option(...idOption)
    .option('--json', 'machine-readable output')
    .action(async (opts: { scheduleId: string; json?: boolean }) => {
      const d = await describeSchedule(await ctx.getClient(), opts.scheduleId);
      const view = {
        schedule_id: d.scheduleId,
        paused: d.state.paused,
        next_action_times: d.info.nextActionTimes.map((t) => t.toISOString()),
        recent_actions: d.info.recentActions.map((a) => ({
          scheduled_at: a.scheduledAt.toISOString(),
          workflow_id: a.action.workflow.workflowId,
        })),
        running: d.info.runningActions.map((a) => a.workflow.workflowId),
      };
      if (opts.json) return printJson(view);
      console.log(`schedule ${view.schedule_id}${view.paused ? ' (paused)' : ''}`);
      console.log(`next runs: ${view.next_action_times.join(', ')}`);
      for (const a of view.recent_actions) console.log(`recent: ${a.scheduled_at} → ${a.workflow_id}`);
    });

  schedule
    .command('trigger')
    .description('start one run now: a NEW logical run, so the next sequence of the current week')
    .option(...idOption)
    .action(async (opts: { scheduleId: string }) => {
      const client = await ctx.getClient();
      await client.schedule.getHandle(opts.scheduleId).trigger('ALLOW_ALL');
      console.log(`triggered ${opts.scheduleId}`);
    });

  schedule
    .command('backfill')
    .description('run the slots between --from and --to as if on time (a slot run again gets the same episode)')
    .option(...idOption)
    .requiredOption('--from <instant>', 'ISO 8601 instant with offset')
    .requiredOption('--to <instant>', 'ISO 8601 instant with offset')
    .action(async (opts: { scheduleId: string; from: string; to: string }) => {
      const start = parseInstant(opts.from);
      const end = parseInstant(opts.to);
      const client = await ctx.getClient();
      await client.schedule.getHandle(opts.scheduleId).backfill({ start, end, overlap: 'ALLOW_ALL' });
      console.log(`backfilled ${opts.scheduleId} from ${start.toISOString()} to ${end.toISOString()}`);
    });
}
