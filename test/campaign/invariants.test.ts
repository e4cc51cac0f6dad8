import assert from 'node:assert/strict';
import { idsOwnedTwice } from '../../campaign/check/invariants';

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
