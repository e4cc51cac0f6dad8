import type { Command } from 'commander';
import { isPipelineError, PipelineError, ErrorType } from '../domain/errors';
import { SCHEDULE_ID } from '../domain/names';
import { describeSettings } from '../process/temporal-connection';
import {
  describeSearchAttributes,
  registerSearchAttributes,
  requireNamespace,
  SETUP_COMMAND,
  wrongTypeLine,
} from '../process/temporal-namespace';
import { describeDeployment, loadDeploymentSettings, pollersByBuild } from '../process/worker-deployment';
import { printJson, type CliContext } from './context';
import { ensureWeeklySchedule } from './schedule-commands';

interface CheckLine {
  check: string;
  ok: boolean;
  detail: string;
}

// Proto enum values (temporal.api.enums.v1): TaskQueueKind NORMAL, TaskQueueType WORKFLOW / ACTIVITY.
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPES = [
  { type: 1, name: 'workflow' },
  { type: 2, name: 'activity' },
] as const;
/** A poller seen longer ago than this is a worker that stopped: live ones re-poll at least every ~70 s. */
const LIVE_POLLER_MS = 2 * 60_000;

export function registerClusterCommands(program: Command, ctx: CliContext): void {
  const cluster = program
    .command('cluster')
    .description('the Temporal namespace: setup (search attributes, schedule) and check, with the TEMPORAL_* profile');
  const idOption = ['--schedule-id <id>', 'schedule id', SCHEDULE_ID] as const;

  cluster
    .command('setup')
    .description('register EpisodeId and WeekId (Keyword) and ensure the weekly schedule (idempotent)')
    .option(...idOption)
    .action(async (opts: { scheduleId: string }) => {
      const connection = await ctx.getConnection();
      const namespace = ctx.config.temporal.namespace;
      console.log(`connected to ${describeSettings(ctx.config.temporal)}`);
      await requireNamespace(connection, namespace);
      const report = await describeSearchAttributes(connection, namespace);
      if (report.wrongType.length > 0)
        throw new PipelineError(ErrorType.NamespaceNotReady, wrongTypeLine(namespace, report));
      for (const name of report.present) console.log(`search attribute ${name}: already registered (Keyword)`);
      if (report.missing.length > 0) {
        await registerSearchAttributes(connection, namespace, report.missing);
        for (const name of report.missing) console.log(`search attribute ${name}: registered (Keyword)`);
      }
      const outcome = await ensureWeeklySchedule(
        await ctx.getClient(),
        { scheduleId: opts.scheduleId, taskQueue: ctx.config.taskQueue, timezone: ctx.config.timezone },
        { onlyIfChanged: true },
      );
      const said = {
        created: 'created',
        updated: 'updated to the current definition',
        unchanged: 'already there, unchanged',
      };
      console.log(`schedule ${opts.scheduleId}: ${said[outcome]}`);
      console.log(`deployment ${(await deploymentCheck(ctx)).detail}`);
    });

  cluster
    .command('check')
    .description('is everything a weekly run needs there? one line each; exit 0 only when all hold')
    .option(...idOption)
    .option('--json', 'machine-readable output')
    .action(async (opts: { scheduleId: string; json?: boolean }) => {
      const lines = await runChecks(ctx, opts.scheduleId);
      if (opts.json) printJson({ ok: lines.every((l) => l.ok), checks: lines });
      else for (const l of lines) console.log(`${l.ok ? 'ok  ' : 'FAIL'} ${l.check}: ${l.detail}`);
      const failed = lines.filter((l) => !l.ok);
      if (failed.length > 0) {
        throw new PipelineError(
          ErrorType.ClusterCheckFailed,
          `cluster check failed: ${failed.map((l) => l.check).join(', ')}` +
            (failed.some((l) => l.check === 'search attributes' || l.check === 'schedule')
              ? ` (run \`${SETUP_COMMAND}\`)`
              : ''),
        );
      }
    });
}

async function runChecks(ctx: CliContext, scheduleId: string): Promise<CheckLine[]> {
  const settings = ctx.config.temporal;
  const lines: CheckLine[] = [];
  const step = async (check: string, run: () => Promise<{ ok: boolean; detail: string }>): Promise<boolean> => {
    try {
      const r = await run();
      lines.push({ check, ...r });
      return r.ok;
    } catch (e) {
      lines.push({ check, ok: false, detail: isPipelineError(e) ? e.message : oneLine(e) });
      return false;
    }
  };
  const reachable = await step('server', async () => {
    const connection = await ctx.getConnection();
    const info = await connection.workflowService.getSystemInfo({});
    return {
      ok: true,
      detail: `reachable at ${describeSettings(settings)}, server ${info.serverVersion || 'unknown'}`,
    };
  });
  if (!reachable) return lines;
  const connection = await ctx.getConnection();
  const namespace = settings.namespace;
  const exists = await step('namespace', async () => {
    await requireNamespace(connection, namespace);
    return { ok: true, detail: `${namespace} exists` };
  });
  if (!exists) return lines;
  await step('search attributes', async () => {
    const r = await describeSearchAttributes(connection, namespace);
    const parts = [
      ...r.present.map((n) => `${n} Keyword`),
      ...r.missing.map((n) => `${n} missing`),
      ...r.wrongType.map((w) => `${w.name} is ${w.type}, not Keyword`),
    ];
    return { ok: r.missing.length === 0 && r.wrongType.length === 0, detail: parts.join(', ') };
  });
  await step('schedule', async () => {
    const client = await ctx.getClient();
    try {
      const d = await client.schedule.getHandle(scheduleId).describe();
      const next = d.info.nextActionTimes[0]?.toISOString() ?? 'none';
      return {
        ok: !d.state.paused && d.info.nextActionTimes.length > 0,
        detail: `${scheduleId} present${d.state.paused ? ', PAUSED' : ''}, next run ${next}`,
      };
    } catch (e) {
      if ((e as { name?: string }).name === 'ScheduleNotFoundError')
        return { ok: false, detail: `${scheduleId} missing` };
      throw e;
    }
  });
  await step('workers', async () => {
    const taskQueue = ctx.config.taskQueue;
    const counts: string[] = [];
    let all = true;
    for (const { type, name } of TASK_QUEUE_TYPES) {
      const r = await connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: TASK_QUEUE_KIND_NORMAL },
        taskQueueType: type,
      });
      const live = (r.pollers ?? []).filter(
        (p) => Date.now() - Number(p.lastAccessTime?.seconds ?? 0) * 1000 < LIVE_POLLER_MS,
      );
      counts.push(`${live.length} ${name} poller${live.length === 1 ? '' : 's'}`);
      if (live.length === 0) all = false;
    }
    return { ok: all, detail: `task queue ${taskQueue}: ${counts.join(', ')}` };
  });
  await step('deployment', () => deploymentCheck(ctx));
  return lines;
}

/** Holds when the Worker Deployment has a current version with live pollers; else says what to run. */
async function deploymentCheck(ctx: CliContext): Promise<{ ok: boolean; detail: string }> {
  const connection = await ctx.getConnection();
  const { namespace } = ctx.config.temporal;
  const facts = await describeDeployment(connection, namespace, loadDeploymentSettings().deploymentName);
  const name = facts.deploymentName;
  if (facts.versions.length === 0) {
    return { ok: false, detail: `${name}: no worker has polled yet (the first build becomes current once it polls)` };
  }
  if (facts.current === undefined) {
    const newest = [...facts.versions].sort((a, b) => (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0));
    const promote = `npx episodes deploy promote --build-id ${newest[0]!.buildId}`;
    return {
      ok: false,
      detail: `${name}: no current version, new runs wait for unversioned workers (run \`${promote}\`)`,
    };
  }
  const pollers = (await pollersByBuild(connection, namespace, ctx.config.taskQueue)).get(facts.current) ?? 0;
  const ramp = facts.ramping ? `, ramping ${facts.ramping.buildId} at ${facts.ramping.percent}%` : '';
  return {
    ok: pollers > 0,
    detail: `${name}: current ${facts.current} (${pollers} poller${pollers === 1 ? '' : 's'})${ramp}`,
  };
}

function oneLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').trim();
}
