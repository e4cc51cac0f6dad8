/**
 * `episodes deploy status | promote | ramp | rollback`: the Worker Deployment of the workers (EPISODES_DEPLOYMENT_NAME),
 * read and routed through the Workflow service. The `temporal worker deployment` equivalents are in docs/deploy.md.
 */
import type { ConnectionLike } from '@temporalio/client';
import type { Command } from 'commander';
import { PipelineError } from '../domain/errors';
import { ErrorType } from '../domain/errors';
import { resolveWorkflowSource } from '../process/workflow-bundle';
import {
  buildIdOfBundle,
  countPinnedRuns,
  describeDeployment,
  loadDeploymentSettings,
  pollersByBuild,
  setCurrentVersion,
  setRampingVersion,
  type DeploymentFacts,
  type VersionStatus,
} from '../process/worker-deployment';
import { printJson, type CliContext } from './context';

export interface VersionReport {
  buildId: string;
  status: VersionStatus;
  /** Live pollers on the pipeline's task queue (workflow and activity). */
  pollers: number;
  /** Open runs pinned to it: paid steps and reassemblies that keep it draining. */
  pinnedOpenRuns: number;
  rampPercent?: number;
}

export interface DeploymentReport {
  deployment: string;
  taskQueue: string;
  current: string | null;
  ramping: { buildId: string; percent: number } | null;
  /** The build id of this checkout's pre-built bundle (or EPISODES_BUILD_ID), if known. */
  thisBuild: string | null;
  versions: VersionReport[];
}

const refused = (message: string) => new PipelineError(ErrorType.DeploymentRefused, message);

export function registerDeployCommands(program: Command, ctx: CliContext): void {
  const deploy = program
    .command('deploy')
    .description('the Worker Deployment (EPISODES_DEPLOYMENT_NAME): status, promote, ramp, rollback');

  deploy
    .command('status')
    .description('current and ramping versions; per version its pollers, drainage state and pinned open runs')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const report = await deploymentReport(ctx);
      if (opts.json) printJson(report);
      else for (const line of describeReport(report)) console.log(line);
    });

  deploy
    .command('promote')
    .description('make a build current: new runs, and AUTO_UPGRADE runs at their next task, go to it')
    .option('--build-id <id>', "the build (default: this checkout's, from its pre-built bundle or EPISODES_BUILD_ID)")
    .action(async (opts: { buildId?: string }) => {
      const buildId = opts.buildId ?? (await thisBuild()) ?? refusedNoBuild();
      await route(ctx, buildId, (c, ns, facts) => setCurrentVersion(c, ns, facts, buildId), { needsPollers: true });
      console.log(`current: ${buildId}`);
    });

  deploy
    .command('ramp')
    .description('send PERCENT of new runs to build ID (the rest to the current version)')
    .argument('<id>', 'build id')
    .argument('<percent>', '0 to 100')
    .action(async (buildId: string, percentText: string) => {
      const percent = Number(percentText);
      if (!/^\d+(\.\d+)?$/.test(percentText) || percent > 100) {
        throw new PipelineError(ErrorType.InvalidInput, `percent must be a number from 0 to 100, not ${percentText}`);
      }
      const ramp = { buildId, percent };
      await route(ctx, buildId, (c, ns, facts) => setRampingVersion(c, ns, facts, ramp), { needsPollers: true });
      console.log(`ramping: ${buildId} at ${percent}% of new runs`);
    });

  deploy
    .command('rollback')
    .description('make the previously current version current again (a ramp in progress ends)')
    .action(() => rollback(ctx));
}

async function rollback(ctx: CliContext): Promise<void> {
  const connection = await ctx.getConnection();
  const namespace = ctx.config.temporal.namespace;
  const facts = await describeDeployment(connection, namespace, loadDeploymentSettings().deploymentName);
  const previous = previousCurrent(facts);
  if (previous === undefined) throw refused(`deployment ${facts.deploymentName} has no earlier current version`);
  // Before the ramp ends: a rollback refused for want of workers changes nothing.
  await refuseUnroutable(ctx, facts, previous, { needsPollers: true });
  if (facts.ramping && facts.ramping.buildId !== previous) {
    await route(ctx, facts.ramping.buildId, (c, ns, f) => setRampingVersion(c, ns, f, undefined));
    console.log(`ramp of ${facts.ramping.buildId} ended`);
  }
  await route(ctx, previous, (c, ns, f) => setCurrentVersion(c, ns, f, previous), { needsPollers: true });
  console.log(`current: ${previous} (was ${facts.current ?? 'unversioned'})`);
}

/** The non-current version that was current last: what `rollback` returns to. */
export function previousCurrent(facts: DeploymentFacts): string | undefined {
  const earlier = facts.versions
    .filter((v) => v.buildId !== facts.current && v.lastCurrentAt !== undefined)
    .sort((a, b) => b.lastCurrentAt!.getTime() - a.lastCurrentAt!.getTime());
  return earlier[0]?.buildId;
}

async function thisBuild(): Promise<string | undefined> {
  const settings = loadDeploymentSettings();
  if (settings.buildId) return settings.buildId;
  const source = await resolveWorkflowSource();
  return source.kind === 'bundle' ? buildIdOfBundle(source.sha256) : undefined;
}

function refusedNoBuild(): never {
  throw refused('no current pre-built bundle here (npm run build) and no EPISODES_BUILD_ID: give --build-id');
}

/**
 * Applies one routing change to a version the deployment knows, with the conflict token of the state just read: a
 * change made by someone else meanwhile is refused by the server, never overwritten. New runs are never sent to a
 * build without live workers on the task queue (`needsPollers`): they would wait for workers that are not there.
 */
async function route(
  ctx: CliContext,
  buildId: string,
  change: (connection: ConnectionLike, namespace: string, facts: DeploymentFacts) => Promise<void>,
  o: { needsPollers?: boolean } = {},
): Promise<void> {
  const connection = await ctx.getConnection();
  const namespace = ctx.config.temporal.namespace;
  const facts = await describeDeployment(connection, namespace, loadDeploymentSettings().deploymentName);
  await refuseUnroutable(ctx, facts, buildId, o);
  try {
    await change(connection, namespace, facts);
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    // INVALID_ARGUMENT, FAILED_PRECONDITION (a task queue it does not poll, a conflict), ABORTED.
    if (code === 3 || code === 9 || code === 10) throw refused(`${buildId}: ${(e as { details?: string }).details}`);
    throw e;
  }
}

/** Refuses a build the deployment does not know, or (`needsPollers`) one without live workers on the task queue. */
async function refuseUnroutable(
  ctx: CliContext,
  facts: DeploymentFacts,
  buildId: string,
  o: { needsPollers?: boolean },
): Promise<void> {
  if (!facts.versions.some((v) => v.buildId === buildId)) {
    const known = facts.versions.map((v) => v.buildId).join(', ') || 'none';
    throw refused(
      `deployment ${facts.deploymentName} has no version ${buildId} (start its workers first; known: ${known})`,
    );
  }
  const { taskQueue, temporal } = ctx.config;
  if (
    o.needsPollers &&
    !(await pollersByBuild(await ctx.getConnection(), temporal.namespace, taskQueue)).get(buildId)
  ) {
    throw refused(`${buildId} has no live workers on task queue ${taskQueue}: start them first`);
  }
}

async function deploymentReport(ctx: CliContext): Promise<DeploymentReport> {
  const connection = await ctx.getConnection();
  const namespace = ctx.config.temporal.namespace;
  const { taskQueue } = ctx.config;
  const facts = await describeDeployment(connection, namespace, loadDeploymentSettings().deploymentName);
  const pollers = await pollersByBuild(connection, namespace, taskQueue);
  const versions = await Promise.all(
    facts.versions.map(async (v) => ({
      buildId: v.buildId,
      status: v.status,
      pollers: pollers.get(v.buildId) ?? 0,
      pinnedOpenRuns: await countPinnedRuns(connection, namespace, { deploymentName: facts.deploymentName, ...v }),
      ...(facts.ramping?.buildId === v.buildId ? { rampPercent: facts.ramping.percent } : {}),
    })),
  );
  const order: VersionStatus[] = ['current', 'ramping', 'draining', 'inactive', 'drained', 'unknown'];
  versions.sort((a, b) => order.indexOf(a.status) - order.indexOf(b.status));
  return {
    deployment: facts.deploymentName,
    taskQueue,
    current: facts.current ?? null,
    ramping: facts.ramping ?? null,
    thisBuild: (await thisBuild()) ?? null,
    versions,
  };
}

function describeReport(r: DeploymentReport): string[] {
  if (r.versions.length === 0) {
    return [`deployment ${r.deployment}: no worker has polled yet (the first build becomes current by itself)`];
  }
  const routing = r.current ? `current ${r.current}` : 'no current version (new runs go to unversioned workers)';
  const ramp = r.ramping ? `, ramping ${r.ramping.buildId} at ${r.ramping.percent}%` : '';
  return [
    `deployment ${r.deployment} (task queue ${r.taskQueue}): ${routing}${ramp}`,
    ...r.versions.map(
      (v) =>
        `  ${v.status.padEnd(8)} ${v.buildId}  ${v.pollers} poller${v.pollers === 1 ? '' : 's'}, ` +
        `${v.pinnedOpenRuns} pinned open run${v.pinnedOpenRuns === 1 ? '' : 's'}` +
        (v.buildId === r.thisBuild ? '  (this checkout)' : ''),
    ),
  ];
}
