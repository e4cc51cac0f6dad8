/**
 * The cluster gauges' rule (src/process/cluster-metrics.ts) on given facts: the current build's pollers, pinned runs
 * and draining time of draining builds only, the schedule active only when it exists unpaused. The worker's own
 * gauges, read from a real dev server, are checked in worker-telemetry.test.ts.
 */
import assert from 'node:assert/strict';
import { clusterGauges, type ClusterFacts } from '../../../src/process/cluster-metrics';

const NOW = new Date('2026-08-10T09:00:00Z');
const daysAgo = (d: number) => new Date(NOW.getTime() - d * 86_400_000);

function facts(fields: Partial<ClusterFacts> = {}): ClusterFacts {
  return {
    deployment: {
      deploymentName: 'weekly-media',
      exists: true,
      current: 'b2',
      routingEverSet: true,
      versions: [
        { buildId: 'b1', status: 'draining', lastCurrentAt: daysAgo(2) },
        { buildId: 'b2', status: 'current', lastCurrentAt: NOW },
        { buildId: 'b0', status: 'drained', lastCurrentAt: daysAgo(9) },
      ],
    },
    pollers: new Map([
      ['b1', 2],
      ['b2', 3],
    ]),
    pinned: new Map([['b1', 4]]),
    schedule: { exists: true, paused: false, missedSlots: 1 },
    ...fields,
  };
}

describe('cluster gauges: current build pollers, draining builds, the schedule', () => {
  it('pollers of the current build; pinned runs and drain time of the draining one only', () => {
    const g = clusterGauges(facts(), NOW);
    assert.equal(g.currentBuildPollers, 3);
    assert.deepEqual(g.draining, [
      { buildId: 'b1', pinnedRuns: 4, seconds: 2 * 86_400 },
      { buildId: 'b2', pinnedRuns: 0, seconds: 0 },
      { buildId: 'b0', pinnedRuns: 0, seconds: 0 },
    ]);
    assert.equal(g.scheduleActive, true);
    assert.equal(g.scheduleMissedSlots, 1);
  });

  it('no current build: the unversioned pollers; a paused or missing schedule is inactive', () => {
    const base = facts();
    const unversioned = facts({
      deployment: { ...base.deployment, current: undefined },
      pollers: new Map([['', 1]]),
    });
    assert.equal(clusterGauges(unversioned, NOW).currentBuildPollers, 1);
    assert.equal(clusterGauges(facts({ pollers: new Map([['b1', 2]]) }), NOW).currentBuildPollers, 0);
    const paused = facts({ schedule: { exists: true, paused: true, missedSlots: 0 } });
    assert.equal(clusterGauges(paused, NOW).scheduleActive, false);
    const missing = facts({ schedule: { exists: false, paused: false, missedSlots: 0 } });
    assert.equal(clusterGauges(missing, NOW).scheduleActive, false);
  });
});
