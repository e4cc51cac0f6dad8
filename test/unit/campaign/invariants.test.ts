import assert from 'node:assert/strict';
import {
  duplicateEpisodes,
  forgottenBeforeRecorded,
  idsOwnedTwice,
  type GapEvidence,
} from '../../../campaign/check/invariants';

describe('campaign checker: one key per episode id in Temporal', () => {
  const weekly = (workflowId: string, episodeId?: string) => ({
    workflowId,
    type: 'weeklyEpisodeWorkflow',
    status: 'COMPLETED',
    episodeId,
  });

  it("counts an id two keys' weekly runs were given, and nothing else", () => {
    const runs = [
      weekly('campaign-2020-08-03T09:00:00Z', '2020-W32-0'),
      weekly('campaign-2020-08-06T15:00:00Z', '2020-W32-0'),
      weekly('campaign-2020-08-10T09:00:00Z', '2020-W33-0'),
      weekly('campaign-2020-08-10T09:00:00Z', '2020-W33-0'), // a reset: the same key's second run
      weekly('campaign-2020-08-13T15:00:00Z'), // not allocated yet
      { ...weekly('episode-2020-W33-0', '2020-W33-0'), type: 'episodeProductionWorkflow' },
    ];
    const found = idsOwnedTwice(runs);
    assert.equal(found.length, 1);
    assert.ok(found[0]!.includes('2020-W32-0'), found[0]);
    assert.ok(found[0]!.includes('campaign-2020-08-03T09:00:00Z') && found[0]!.includes('2020-08-06T15:00:00Z'));
  });
});

describe('campaign checker: sequence gaps', () => {
  const listed = (episode_id: string, allocation_key: string) => {
    const [, week_id, sequence] = /^(\d{4}-W\d\d)-(\d+)$/.exec(episode_id)!;
    return { episode_id, week_id: week_id!, sequence: Number(sequence), allocation_key, status: 'completed' };
  };
  // Campaign seed 12565 (PostgreSQL): 2020-W52-0 was handed to the first slot by an attempt killed before it returned,
  // a restore forgot it, and the slot's retry went above Temporal's record of 2020-W52-1.
  const episodes = [
    listed('2020-W52-1', 'campaign-2020-12-24T15:00:00Z'),
    listed('2020-W52-2', 'campaign-2020-12-21T09:00:00Z'),
  ];
  const runs = [
    {
      workflowId: 'campaign-2020-12-21T09:00:00Z',
      type: 'weeklyEpisodeWorkflow',
      status: 'COMPLETED',
      episodeId: '2020-W52-2',
    },
    {
      workflowId: 'campaign-2020-12-24T15:00:00Z',
      type: 'weeklyEpisodeWorkflow',
      status: 'COMPLETED',
      episodeId: '2020-W52-1',
    },
    { workflowId: 'episode-2020-W52-1', type: 'episodeProductionWorkflow', status: 'COMPLETED' },
    { workflowId: 'episode-2020-W52-2', type: 'episodeProductionWorkflow', status: 'COMPLETED' },
  ];
  const seen = { id: 'f055-vendor-slow', kind: 'vendor-slow', step: 'injected', inFlight: ['2020-W52-0'] };
  const restored = { id: 'f037-store-restore', kind: 'store-restore', step: 'hit' };
  const check = (evidence: Partial<GapEvidence>, listedEpisodes = episodes) =>
    duplicateEpisodes(listedEpisodes, (id) =>
      forgottenBeforeRecorded(id, { runs, billing: [], faults: [seen, restored], ...evidence }),
    );

  it('accounts for an id seen in the store, forgotten by a restore, never recorded by Temporal nor charged', () => {
    const r = check({});
    assert.deepEqual(r.violations, []);
    assert.equal(r.gaps.length, 1);
    assert.match(r.gaps[0]!, /^2020-W52-0: .*f037-store-restore/);
  });

  it('counts the gap when nothing forgot the id after it was seen', () => {
    assert.equal(check({ faults: [restored, seen] }).violations.length, 1);
    assert.equal(check({ faults: [seen, { ...restored, step: 'missed' }] }).violations.length, 1);
    assert.equal(check({ faults: [seen, { ...restored, kind: 'pg-restart' }] }).violations.length, 1);
  });

  it('counts the gap when the store was never seen holding the id', () => {
    assert.equal(check({ faults: [restored] }).violations.length, 1);
  });

  it('counts the gap when Temporal recorded the id (a run that should have re-asserted it) or the vendor charged it', () => {
    const production = { workflowId: 'episode-2020-W52-0', type: 'episodeProductionWorkflow', status: 'COMPLETED' };
    const step = { workflowId: 'episode-2020-W52-0-video-r0', type: 'paidStepWorkflow', status: 'COMPLETED' };
    const answered = { ...runs[0]!, workflowId: 'campaign-2020-12-22T09:00:00Z', episodeId: '2020-W52-0' };
    for (const extra of [production, step, answered]) {
      assert.equal(check({ runs: [...runs, extra] }).violations.length, 1, extra.workflowId);
    }
    const charge = {
      job_id: 'job_1',
      kind: 'video',
      episode_id: '2020-W52-0',
      client_ref: null,
      amount_cents: 4200,
      currency: 'USD',
    };
    assert.equal(check({ billing: [charge] as GapEvidence['billing'] }).violations.length, 1);
  });

  it('still counts a sequence held twice, and a key owning two episodes', () => {
    const twice = [
      ...episodes,
      { ...listed('2020-W52-2', 'campaign-2020-12-21T09:00:00Z'), episode_id: '2020-W52-2b' },
    ];
    assert.ok(check({}, twice).violations.some((v) => v.includes('sequences 1,2,2')));
    assert.ok(check({}, twice).violations.some((v) => v.includes('owns 2 episodes')));
  });
});
