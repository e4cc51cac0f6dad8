/**
 * Every recorded history (test/histories/, `npm run histories:record`) replays against the current workflow code.
 * A failure here means a deployed worker would break productions already in flight: guard the change with
 * patched(), or make it a new workflow type (docs/architecture.md, "Changing workflow code"). Never re-record to pass.
 */
import assert from 'node:assert/strict';
import { recordedHistories, replayAll, type ReplayOutcome } from '../helpers/replay';
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

  for (const h of histories) {
    it(h.file, () => {
      const outcome = outcomes.find((o) => o.file === h.file);
      assert.ok(outcome, `${h.file} was not replayed`);
      if (outcome.failure !== undefined) assert.fail(outcome.failure);
    });
  }
});
