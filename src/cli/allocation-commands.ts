import { Option, type Command } from 'commander';
import { allocateEpisodeOn } from '../activities/allocation';
import { parseEpisodeId } from '../domain/episode-id';
import { formatMoney } from '../domain/money';
import { stepKey } from '../domain/names';
import type { EpisodeState } from '../domain/episode-state';
import { isoWeekOfInstant, parseInstant, parseTimeZone, parseWeekId } from '../domain/week-id';
import { PipelineError, ErrorType } from '../domain/errors';
import { cliAllocatedBy } from '../store/file-store';
import { weeklyEpisodeWorkflow } from '../workflows';
import { printJson, type CliContext } from './context';

export function registerAllocationCommands(program: Command, ctx: CliContext): void {
  program
    .command('plan')
    .description('zero-cost allocation: the episode id of a logical run (same key → same episode)')
    .requiredOption('--key <key>', 'allocation key of the logical run (its workflow ID)')
    .addOption(new Option('--week <week>', 'target ISO week, YYYY-Www').conflicts('at'))
    .option('--at <instant>', 'an ISO 8601 instant whose ISO week is the target')
    .option('--timezone <tz>', 'IANA timezone for --at (default: EPISODES_TIMEZONE or UTC)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { key: string; week?: string; at?: string; timezone?: string; json?: boolean }) => {
      if (!opts.week && !opts.at) throw new PipelineError(ErrorType.InvalidInput, 'give --week or --at');
      const weekId = opts.week
        ? parseWeekId(opts.week)
        : isoWeekOfInstant(parseInstant(opts.at), parseTimeZone(opts.timezone ?? ctx.config.timezone));
      const r = await allocateEpisodeOn(ctx.getStore(), { allocationKey: opts.key, weekId }, cliAllocatedBy());
      if (opts.json) {
        printJson({ episode_id: r.episodeId, week_id: r.weekId, sequence: r.sequence, created: r.created });
      } else {
        console.log(`${r.episodeId}  (week ${r.weekId}, sequence ${r.sequence}, ${r.created ? 'new' : 'existing'})`);
      }
    });

  program
    .command('list')
    .description('list episodes')
    .option('--week <week>', 'only this ISO week')
    .option('--json', 'machine-readable output')
    .action(async (opts: { week?: string; json?: boolean }) => {
      const weekId = opts.week === undefined ? undefined : parseWeekId(opts.week);
      const episodes = await ctx.getStore().listEpisodes({ weekId });
      if (opts.json) return printJson(episodes.map(summary));
      if (episodes.length === 0) return console.log('no episodes');
      for (const e of episodes) {
        console.log(`${e.episode_id.padEnd(14)} ${e.status.padEnd(18)} key=${e.allocation_key ?? '(migrated)'}`);
      }
    });

  program
    .command('show')
    .description('show one episode')
    .argument('<episode_id>')
    .option('--json', 'machine-readable output')
    .action(async (raw: string, opts: { json?: boolean }) => {
      const { episodeId } = parseEpisodeId(raw);
      const state = await ctx.getStore().requireEpisode(episodeId);
      if (opts.json) return printJson(state);
      console.log(describeEpisode(state));
    });

  program
    .command('run')
    .description('start weeklyEpisodeWorkflow with workflow ID = allocation key, and wait for its result')
    .requiredOption('--key <key>', 'workflow ID and allocation key')
    .option('--week <week>', 'target ISO week (default: the week of the start time)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { key: string; week?: string; json?: boolean }) => {
      const week = opts.week === undefined ? undefined : parseWeekId(opts.week);
      const client = await ctx.getClient();
      let handle;
      try {
        handle = await client.workflow.start(weeklyEpisodeWorkflow, {
          workflowId: opts.key,
          taskQueue: ctx.config.taskQueue,
          args: [{ week, timezone: ctx.config.timezone }],
        });
      } catch (e) {
        const { WorkflowExecutionAlreadyStartedError } = await import('@temporalio/client');
        if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
        console.error(`workflow ${opts.key} is already running; waiting for it`);
        handle = client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(opts.key);
      }
      const result = await handle.result();
      if (opts.json) return printJson(result);
      console.log(`${result.episodeId}  (week ${result.weekId}, sequence ${result.sequence})`);
    });
}

function summary(e: EpisodeState) {
  return {
    episode_id: e.episode_id,
    week_id: e.week_id,
    sequence: e.sequence,
    status: e.status,
    allocation_key: e.allocation_key,
    created_at: e.created_at,
    completed_at: e.completed_at,
  };
}

export function describeEpisode(e: EpisodeState): string {
  const lines = [
    `episode      ${e.episode_id}  (week ${e.week_id}, sequence ${e.sequence})`,
    `status       ${e.status}`,
    `key          ${e.allocation_key ?? '(none: migrated)'}`,
    `allocated    ${e.created_at} by ${JSON.stringify(e.allocated_by)}`,
  ];
  for (const [key, s] of Object.entries(e.steps)) {
    lines.push(`step ${key.padEnd(12)} ${s.status.padEnd(20)} job=${s.remote_job_id ?? '-'}`);
  }
  for (const l of e.ledger) {
    lines.push(
      `charge       ${stepKey(l.step, l.round).padEnd(12)} ${formatMoney(l.amount_cents, l.currency).padStart(12)}  job=${l.remote_job_id}`,
    );
  }
  const total = e.ledger.reduce((sum, l) => sum + l.amount_cents, 0);
  const currency = e.ledger[0]?.currency;
  if (e.ledger.length) lines.push(`ledger       ${e.ledger.length} charges, ${formatMoney(total, currency)}`);
  for (const [name, m] of Object.entries(e.media)) lines.push(`media ${name.padEnd(7)} ${m.path} sha256=${m.sha256}`);
  if (e.completed_at) lines.push(`completed    ${e.completed_at}`);
  return lines.join('\n');
}
