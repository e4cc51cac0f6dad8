/**
 * Every recorded history (test/histories/, `npm run histories:record`) replays against the current workflow code.
 * A failure here means a deployed worker would break productions already in flight: guard the change with
 * patched(), or make it a new workflow type (docs/architecture.md, "Changing workflow code"). Never re-record to pass.
 */
import assert from 'node:assert/strict';
import { recordedHistories, replayAll, type ReplayOutcome } from '../helpers/replay';
import { EPISODE_RUNS_TAGGED_PATCH, REVIEW_NOTICE_PATCH } from '../../src/domain/names';
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

  it('holds both branches of the review-notice patch: the sets before it without it, the review-notice set with it', () => {
    const marker = Buffer.from(JSON.stringify(REVIEW_NOTICE_PATCH)).toString('base64');
    const patched = (h: (typeof histories)[number]) =>
      h.json.events.some((e) => e.eventType.includes('MARKER_RECORDED') && JSON.stringify(e).includes(marker));
    const setOf = (h: (typeof histories)[number]) => h.file.split('/')[0]!.split('.')[1];
    const productions = (set: string | undefined) =>
      histories.filter(
        (h) => setOf(h) === set && JSON.stringify(h.json.events[0]).includes('episodeProductionWorkflow'),
      );
    const later = productions('review-notice');
    assert.ok(later.length >= 7, 'the review-notice set holds the productions');
    assert.equal(later.filter(patched).length, later.length, 'every production of the later set took the patch');
    const sends = (h: (typeof histories)[number]) => JSON.stringify(h.json).includes('"sendReviewNotice"');
    assert.equal(later.filter(sends).length, later.length, 'and sent its notice');
    assert.ok(
      later.some((h) => h.json.events.some((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED')),
      'a notice cancelled when its round closed is among them',
    );
    for (const set of [undefined, 'tagged']) {
      assert.ok(productions(set).length >= 5);
      assert.equal(productions(set).filter(patched).length, 0, `set ${set ?? 'first'} predates the patch`);
    }
  });

  for (const h of histories) {
    it(h.file, () => {
      const outcome = outcomes.find((o) => o.file === h.file);
      assert.ok(outcome, `${h.file} was not replayed`);
      if (outcome.failure !== undefined) assert.fail(outcome.failure);
    });
  }
});
