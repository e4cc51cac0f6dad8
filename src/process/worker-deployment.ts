/**
 * Worker Deployments (worker versioning): the deployment version a worker runs as, and the routing facts and changes
 * the worker's start line, `episodes deploy` and `episodes cluster` read and make through the Workflow service.
 * Which workflow type is PINNED and which AUTO_UPGRADE, and why: docs/deploy.md.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionLike } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, Worker, WorkerDeploymentOptions, WorkerOptions } from '@temporalio/worker';
import { readSettings } from '../settings/read';
import { settingDefault } from '../settings/table';
import { codeHash } from './workflow-bundle';

export const DEFAULT_DEPLOYMENT_NAME = settingDefault('EPISODES_DEPLOYMENT_NAME');

export interface DeploymentSettings {
  deploymentName: string;
  /** EPISODES_BUILD_ID; unset: derived from the workflow bundle. */
  buildId?: string;
}

export function loadDeploymentSettings(env: NodeJS.ProcessEnv = process.env): DeploymentSettings {
  const s = readSettings(['EPISODES_DEPLOYMENT_NAME', 'EPISODES_BUILD_ID'], env);
  return { deploymentName: s.EPISODES_DEPLOYMENT_NAME, buildId: s.EPISODES_BUILD_ID };
}

/**
 * The first 12 hex digits of the bundle's code hash (codeHash: without the source map, which names the checkout's
 * path): the same code gives the same build id on every host and in every directory.
 */
export function buildIdOfBundle(sha256: string): string {
  return sha256.slice(0, 12);
}

export function deploymentVersion(settings: DeploymentSettings, bundleSha256: string): WorkerDeploymentVersion {
  return { deploymentName: settings.deploymentName, buildId: settings.buildId ?? buildIdOfBundle(bundleSha256) };
}

export function workerDeploymentOptions(version: WorkerDeploymentVersion): WorkerDeploymentOptions {
  return {
    version,
    useWorkerVersioning: true,
    // Every workflow type declares its own behaviour (test/integration/workflows/versioning.test.ts); a type that forgot would
    // finish on the code that started it rather than meet code it did not start on.
    defaultVersioningBehavior: 'PINNED',
  };
}

/** The version of a bundle's code on the default deployment (tests and the bench, which bundle in process). */
export function versionOfCode(code: string, settings: DeploymentSettings = loadDeploymentSettings({})) {
  return deploymentVersion(settings, codeHash(code));
}

/**
 * Worker.create as `version` of its deployment, with adoptBesideWorker running beside it: the one way every worker
 * (the real one, the demo's, tests' and the bench's) is built, since a bundle whose workflows declare a versioning
 * behaviour is refused by the server from an unversioned worker.
 */
export async function createVersionedWorker(
  options: WorkerOptions & { connection: NativeConnection },
  version: WorkerDeploymentVersion,
  log: (line: string) => void,
): Promise<Worker> {
  const { Worker } = await import('@temporalio/worker');
  const worker = await Worker.create({ ...options, workerDeploymentOptions: workerDeploymentOptions(version) });
  void adoptBesideWorker(worker, options.connection, { namespace: options.namespace ?? 'default', version, log });
  return worker;
}

export const versionName = (v: WorkerDeploymentVersion) => `${v.deploymentName}:${v.buildId}`;

export type VersionStatus = 'current' | 'ramping' | 'draining' | 'drained' | 'inactive' | 'unknown';

export interface VersionFacts {
  buildId: string;
  status: VersionStatus;
  createdAt?: Date;
  /** The last time it was current (now, for the current one); undefined for a version never current. */
  lastCurrentAt?: Date;
}

export interface DeploymentFacts {
  deploymentName: string;
  /** False before any worker of the deployment polled. */
  exists: boolean;
  /** Build id of the current version; undefined when new runs go to unversioned workers. */
  current?: string;
  ramping?: { buildId: string; percent: number };
  /** Whether a current version was ever set (an operator's "unversioned" counts). */
  routingEverSet: boolean;
  versions: VersionFacts[];
  conflictToken?: Uint8Array;
}

// temporal.api.enums.v1.WorkerDeploymentVersionStatus
const STATUS_NAMES: Record<number, VersionStatus> = {
  1: 'inactive',
  2: 'current',
  3: 'ramping',
  4: 'draining',
  5: 'drained',
};
const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;
const GRPC_ABORTED = 10;

type Timestamp = { seconds?: number | { toString(): string } | null; nanos?: number | null } | null | undefined;
const dateOf = (t: Timestamp): Date | undefined =>
  t?.seconds == null ? undefined : new Date(Number(t.seconds.toString()) * 1000 + Math.floor((t.nanos ?? 0) / 1e6));

const grpcCode = (e: unknown) => (e as { code?: unknown } | null)?.code;

export async function describeDeployment(
  connection: ConnectionLike,
  namespace: string,
  deploymentName: string,
): Promise<DeploymentFacts> {
  let r;
  try {
    r = await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName });
  } catch (e) {
    if (grpcCode(e) === GRPC_NOT_FOUND) return { deploymentName, exists: false, routingEverSet: false, versions: [] };
    throw e;
  }
  const info = r.workerDeploymentInfo ?? {};
  const routing = info.routingConfig ?? {};
  const ramping = routing.rampingDeploymentVersion?.buildId;
  return {
    deploymentName,
    exists: true,
    current: routing.currentDeploymentVersion?.buildId ?? undefined,
    ramping: ramping ? { buildId: ramping, percent: routing.rampingVersionPercentage ?? 0 } : undefined,
    routingEverSet: dateOf(routing.currentVersionChangedTime) !== undefined,
    versions: (info.versionSummaries ?? []).map((v) => ({
      buildId: v.deploymentVersion?.buildId ?? '',
      status: STATUS_NAMES[v.status ?? 0] ?? 'unknown',
      createdAt: dateOf(v.createTime),
      lastCurrentAt: dateOf(v.lastCurrentTime),
    })),
    conflictToken: r.conflictToken ?? undefined,
  };
}

/** Makes `buildId` the current version; the conflict token refuses a change made by someone else meanwhile. */
export async function setCurrentVersion(
  connection: ConnectionLike,
  namespace: string,
  facts: DeploymentFacts,
  buildId: string,
): Promise<void> {
  await connection.workflowService.setWorkerDeploymentCurrentVersion({
    namespace,
    deploymentName: facts.deploymentName,
    buildId,
    conflictToken: facts.conflictToken,
    identity: 'episodes',
  });
}

/** Sends `percent` of new runs to `buildId` (0 with no build id: no ramp). */
export async function setRampingVersion(
  connection: ConnectionLike,
  namespace: string,
  facts: DeploymentFacts,
  ramp: { buildId: string; percent: number } | undefined,
): Promise<void> {
  await connection.workflowService.setWorkerDeploymentRampingVersion({
    namespace,
    deploymentName: facts.deploymentName,
    buildId: ramp?.buildId ?? '',
    percentage: ramp?.percent ?? 0,
    conflictToken: facts.conflictToken,
    identity: 'episodes',
  });
}

/** How the worker's start line describes its version's routing, with the command to run when it is not current. */
export function describeRouting(facts: DeploymentFacts, version: WorkerDeploymentVersion): string {
  const name = `deployment version ${versionName(version)}`;
  const promote = `npx episodes deploy promote --build-id ${version.buildId}`;
  if (facts.current === version.buildId) return `${name} (current)`;
  if (!facts.routingEverSet) return `${name} (the deployment's first build: it becomes current once it polls)`;
  const current = facts.current ? `current is ${facts.current}` : 'new runs go to unversioned workers';
  if (facts.ramping?.buildId === version.buildId) {
    return `${name} (ramping, ${facts.ramping.percent}% of new runs; ${current}): to finish, run \`${promote}\``;
  }
  const ramp = `npx episodes deploy ramp ${version.buildId} 10`;
  return `${name} (not current; ${current}): to send it new runs, run \`${promote}\` (or \`${ramp}\` first)`;
}

export type AdoptOutcome = 'adopted' | 'current' | 'not first' | 'stopped' | 'timed out';

/**
 * The first build of a deployment becomes current by itself: once this worker's version is registered (it is, at its
 * first poll), and only while the deployment never had a current version (an operator's choice, even "unversioned",
 * is never overridden; `evenIfNotFirst` does, for the demo's single worker). Several hosts starting the same first
 * build race harmlessly: the conflict token lets one win, and the others find it current.
 */
export async function adoptFirstBuild(
  connection: ConnectionLike,
  namespace: string,
  version: WorkerDeploymentVersion,
  o: { stopped: () => boolean; evenIfNotFirst?: boolean; timeoutMs?: number },
): Promise<AdoptOutcome> {
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  while (Date.now() < deadline) {
    if (o.stopped()) return 'stopped';
    const facts = await describeDeployment(connection, namespace, version.deploymentName);
    if (facts.current === version.buildId) return 'current';
    if (facts.routingEverSet && !o.evenIfNotFirst) return 'not first';
    if (facts.versions.some((v) => v.buildId === version.buildId)) {
      try {
        await setCurrentVersion(connection, namespace, facts, version.buildId);
        return 'adopted';
      } catch (e) {
        // Someone changed the deployment meanwhile (another host adopted, an operator promoted): look again.
        if (grpcCode(e) !== GRPC_FAILED_PRECONDITION && grpcCode(e) !== GRPC_ABORTED) throw e;
      }
    }
    await sleep(250, undefined, { ref: false });
  }
  return 'timed out';
}

const STOPPED_STATES: readonly string[] = ['STOPPING', 'DRAINING', 'DRAINED', 'STOPPED', 'FAILED'];

/**
 * Runs adoptFirstBuild beside a worker, until it is current, not first, or the worker stops; says what happened in
 * one line. Never rejects: a worker that cannot read its deployment still runs (and `episodes deploy status` tells).
 */
export async function adoptBesideWorker(
  worker: { getState(): string },
  connection: ConnectionLike,
  o: { namespace: string; version: WorkerDeploymentVersion; log: (line: string) => void; evenIfNotFirst?: boolean },
): Promise<AdoptOutcome | undefined> {
  try {
    const outcome = await adoptFirstBuild(connection, o.namespace, o.version, {
      stopped: () => STOPPED_STATES.includes(worker.getState()),
      evenIfNotFirst: o.evenIfNotFirst,
    });
    if (outcome === 'adopted') o.log(`worker: deployment version ${versionName(o.version)} is now current`);
    if (outcome === 'timed out') o.log(`worker: ${versionName(o.version)} did not register in time; see deploy status`);
    return outcome;
  } catch (e) {
    if (STOPPED_STATES.includes(worker.getState())) return 'stopped';
    o.log(`worker: cannot read deployment ${o.version.deploymentName}: ${(e as Error).message}`.replace(/\s+/g, ' '));
    return undefined;
  }
}

/** Live pollers of the task queue by build id ('' = unversioned), workflow and activity pollers summed. */
export async function pollersByBuild(
  connection: ConnectionLike,
  namespace: string,
  taskQueue: string,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  // TaskQueueType WORKFLOW, ACTIVITY; TaskQueueKind NORMAL.
  for (const taskQueueType of [1, 2]) {
    const r = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: 1 },
      taskQueueType,
    });
    for (const p of r.pollers ?? []) {
      // A live worker polls at least every ~70 s; an older entry is a worker that stopped.
      if (Date.now() - (dateOf(p.lastAccessTime)?.getTime() ?? 0) > 2 * 60_000) continue;
      const build = p.deploymentOptions?.buildId ?? '';
      counts.set(build, (counts.get(build) ?? 0) + 1);
    }
  }
  return counts;
}

/** Open runs pinned to the version: those that keep it draining (AUTO_UPGRADE runs move on at their next task). */
export async function countPinnedRuns(
  connection: ConnectionLike,
  namespace: string,
  version: WorkerDeploymentVersion,
): Promise<number> {
  const query =
    `TemporalWorkerDeploymentVersion = ${visibilityString(versionName(version))} AND ` +
    `TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`;
  const r = await connection.workflowService.countWorkflowExecutions({ namespace, query });
  return Number(r.count?.toString() ?? 0);
}

/**
 * A string literal of a visibility query: backslashes and quotes escaped. `deploy status` counts runs for each version
 * the server lists, and a worker elsewhere may have registered any build id there.
 */
export function visibilityString(value: string): string {
  return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}
