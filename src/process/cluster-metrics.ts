/**
 * Gauges of what Temporal knows about the pipeline, set beside the state gauges (src/process/state-metrics.ts): the
 * live pollers of the current build, the open runs pinned to each draining build and how long it has drained, and
 * whether the weekly schedule is active and how many slots it missed. Read with the worker's own connection.
 */
import { Client, ScheduleNotFoundError, type ConnectionLike } from '@temporalio/client';
import type { MetricMeter } from '@temporalio/common';
import { countPinnedRuns, describeDeployment, pollersByBuild, type DeploymentFacts } from './worker-deployment';

export const ClusterGaugeName = {
  currentBuildPollers: 'episodes_current_build_pollers',
  drainingPinnedRuns: 'episodes_draining_pinned_runs',
  drainingSeconds: 'episodes_draining_seconds',
  scheduleActive: 'episodes_schedule_active',
  scheduleMissedSlots: 'episodes_schedule_missed_slots',
} as const;

export interface ClusterFacts {
  deployment: DeploymentFacts;
  /** Live pollers of the task queue by build id ('' = unversioned). */
  pollers: ReadonlyMap<string, number>;
  /** Open pinned runs of each draining build. */
  pinned: ReadonlyMap<string, number>;
  schedule: { exists: boolean; paused: boolean; missedSlots: number };
}

export interface ClusterGauges {
  /** Pollers of the build new runs go to (unversioned workers when no build is current). */
  currentBuildPollers: number;
  /** Per build id: pinned open runs and seconds since it stopped being current (0 for a build that is not draining). */
  draining: { buildId: string; pinnedRuns: number; seconds: number }[];
  scheduleActive: boolean;
  scheduleMissedSlots: number;
}

export function clusterGauges(f: ClusterFacts, now: Date): ClusterGauges {
  const draining = f.deployment.versions.map((v) => {
    const isDraining = v.status === 'draining';
    const since = v.lastCurrentAt?.getTime() ?? now.getTime();
    return {
      buildId: v.buildId,
      pinnedRuns: isDraining ? (f.pinned.get(v.buildId) ?? 0) : 0,
      seconds: isDraining ? Math.max(0, (now.getTime() - since) / 1000) : 0,
    };
  });
  return {
    currentBuildPollers: f.pollers.get(f.deployment.current ?? '') ?? 0,
    draining,
    scheduleActive: f.schedule.exists && !f.schedule.paused,
    scheduleMissedSlots: f.schedule.missedSlots,
  };
}

export interface ClusterScope {
  namespace: string;
  taskQueue: string;
  deploymentName: string;
  scheduleId: string;
}

export async function readClusterFacts(connection: ConnectionLike, scope: ClusterScope): Promise<ClusterFacts> {
  const { namespace, taskQueue, deploymentName } = scope;
  const deployment = await describeDeployment(connection, namespace, deploymentName);
  const pinned = new Map<string, number>();
  for (const v of deployment.versions.filter((x) => x.status === 'draining')) {
    pinned.set(v.buildId, await countPinnedRuns(connection, namespace, { deploymentName, buildId: v.buildId }));
  }
  return {
    deployment,
    pollers: await pollersByBuild(connection, namespace, taskQueue),
    pinned,
    schedule: await scheduleFacts(new Client({ connection, namespace }), scope.scheduleId),
  };
}

async function scheduleFacts(client: Client, scheduleId: string): Promise<ClusterFacts['schedule']> {
  try {
    const d = await client.schedule.getHandle(scheduleId).describe();
    return { exists: true, paused: d.state.paused, missedSlots: d.info.numActionsMissedCatchupWindow };
  } catch (e) {
    if (e instanceof ScheduleNotFoundError) return { exists: false, paused: false, missedSlots: 0 };
    throw e;
  }
}

export function setClusterGauges(meter: MetricMeter, g: ClusterGauges): void {
  const gauge = (name: string, description: string) => meter.createGauge(name, 'float', undefined, description);
  gauge(ClusterGaugeName.currentBuildPollers, 'live pollers of the current build').set(g.currentBuildPollers);
  const pinned = gauge(ClusterGaugeName.drainingPinnedRuns, 'open runs pinned to a draining build');
  const since = gauge(ClusterGaugeName.drainingSeconds, 'seconds since a draining build stopped being current');
  for (const d of g.draining) {
    pinned.set(d.pinnedRuns, { build_id: d.buildId });
    since.set(d.seconds, { build_id: d.buildId });
  }
  gauge(ClusterGaugeName.scheduleActive, '1 when the weekly schedule exists and is not paused').set(
    g.scheduleActive ? 1 : 0,
  );
  gauge(ClusterGaugeName.scheduleMissedSlots, 'slots the schedule missed (catchup window passed)').set(
    g.scheduleMissedSlots,
  );
}
