/**
 * The state gauges' rule (src/process/state-metrics.ts) on built episodes: an episode in production without progress
 * stalls, one waiting for a person is parked instead (reconciliation wins over approval), a failed one is neither,
 * a completed one counts nowhere, and the budget gauge is the smallest share left. The worker's own gauges are checked
 * end to end in worker-telemetry.test.ts.
 */
import assert from 'node:assert/strict';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import { initialState, type EpisodeState } from '../../../src/domain/episode-state';
import { stateGauges } from '../../../src/process/state-metrics';
import { succeededStep } from '../../../testkit/episode-builders';

const T0 = '2026-08-03T09:00:00.000Z';
const hoursAfter = (h: number) => new Date(Date.parse(T0) + h * 3_600_000);

function episode(id: string, status: EpisodeState['status'], fields: Partial<EpisodeState> = {}): EpisodeState {
  const identity = parseEpisodeId(id);
  return { ...initialState(identity, `key-${id}`, { kind: 'test', note: 'state gauges' }, T0), status, ...fields };
}

describe('state gauges: stalled, parked, budget left', () => {
  it('nothing unfinished: zeros, and the whole budget left', () => {
    const g = stateGauges([episode('2026-W32-0', 'completed')], hoursAfter(5), 20_000);
    assert.deepEqual(g, {
      unfinished: { allocated: 0, in_production: 0, awaiting_approval: 0, failed: 0 },
      stalledSeconds: 0,
      parkedSeconds: { needs_reconciliation: 0, awaiting_approval: 0 },
      budgetLeftRatio: 1,
    });
  });

  it('stalled counts from the last progress; parked and failed episodes do not stall', () => {
    const id = parseEpisodeId('2026-W32-1').episodeId;
    const step = succeededStep(id, 'video', 0, hoursAfter(2).toISOString());
    const moving = episode('2026-W32-1', 'in_production', { steps: { 'video-r0': step } });
    const unknown = { ...succeededStep(id, 'cover', 0, T0), status: 'needs_reconciliation' as const };
    const reconcile = episode('2026-W32-2', 'in_production', { steps: { 'cover-r0': unknown } });
    const approval = episode('2026-W32-3', 'awaiting_approval');
    const failed = episode('2026-W32-4', 'failed');
    const g = stateGauges([moving, reconcile, approval, failed], hoursAfter(5), 20_000);
    assert.equal(g.stalledSeconds, 3 * 3600, 'the moving one, three hours after its step');
    assert.deepEqual(g.parkedSeconds, { needs_reconciliation: 5 * 3600, awaiting_approval: 5 * 3600 });
    assert.deepEqual(g.unfinished, { allocated: 0, in_production: 2, awaiting_approval: 1, failed: 1 });
  });

  it('budget left: the smallest share over unfinished episodes', () => {
    const entry = (cents: number) => ({
      step: 'video' as const,
      round: 0,
      remote_job_id: 'j',
      amount_cents: cents,
      currency: 'USD',
      recorded_at: T0,
    });
    const a = episode('2026-W32-0', 'awaiting_approval', { ledger: [entry(5_000)] });
    const b = episode('2026-W32-1', 'in_production', { ledger: [entry(18_000)] });
    const done = episode('2026-W32-2', 'completed', { ledger: [entry(19_900)] });
    assert.equal(stateGauges([a, b, done], hoursAfter(1), 20_000).budgetLeftRatio, 0.1);
  });
});
