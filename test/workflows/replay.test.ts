/**
 * Every recorded history (test/histories/, `npm run histories:record`) replays against the current workflow code.
 * A failure here means a deployed worker would break productions already in flight: guard the change with
 * patched(), or make it a new workflow type (docs/architecture.md, "Changing workflow code"). Never re-record to pass.
 */
import assert from 'node:assert/strict';
import { recordedHistories, replayAll, type ReplayOutcome } from '../helpers/replay';
import { EPISODE_RUNS_TAGGED_PATCH } from '../../src/domain/names';
import { workflowBundle } from '../helpers/temporal';

describe('recorded histories replay against the current workflow code', function () {
  this.timeout(120_000);
  const histories = recordedHistories();
  let outcomes: ReplayOutcome[];

  before(async () => {
    outcomes = await replayAll(await workflowBundle(), histories);
  });

  it('covers every scenario the issue asks for', () => {
    const scenarios = new Set(histories.map((h) => h.file.split('/')[0]));
    for (const s of [
      'scheduled-weekly-run',
      'happy-path',
      'rework-round',
      'reconciliation',
      'approval-expired',
      'reassembly',
      'reset-weekly-run',
      'parked-at-approval',
    ]) {
      assert.ok(scenarios.has(s), `no recorded history for ${s}`);
    }
    assert.equal(outcomes.length, histories.length, 'every file was replayed');
  });

  it('holds both branches of the episode-runs-tagged patch: the first recording without it, the later one with it', () => {
    const marker = Buffer.from(JSON.stringify(EPISODE_RUNS_TAGGED_PATCH)).toString('base64');
    const patched = (h: (typeof histories)[number]) =>
      h.json.events.some((e) => e.eventType.includes('MARKER_RECORDED') && JSON.stringify(e).includes(marker));
    const setOf = (h: (typeof histories)[number]) => h.file.split('/')[0]!.split('.')[1];
    const later = histories.filter((h) => setOf(h) === 'tagged');
    const first = histories.filter((h) => setOf(h) === undefined);
    assert.ok(first.length >= 14, 'the first recording is there');
    assert.ok(later.filter(patched).length >= 8, 'the later recording took the patched branch');
    assert.equal(first.filter(patched).length, 0, 'the first recording predates the patch');
  });

  for (const h of histories) {
    it(h.file, () => {
      const outcome = outcomes.find((o) => o.file === h.file);
      assert.ok(outcome, `${h.file} was not replayed`);
      if (outcome.failure !== undefined) assert.fail(outcome.failure);
    });
  }
});
