/**
 * Every recorded history (test/histories/, `npm run histories:record`) replays against the current workflow code.
 * A failure here means a deployed worker would break productions already in flight: guard the change with
 * patched(), or make it a new workflow type (docs/architecture.md, "Changing workflow code"). Never re-record to pass.
 */
import assert from 'node:assert/strict';
import { recordedHistories, replayAll, type ReplayOutcome } from '../../../testkit/replay';
import { DECISION_CHANNELS_PATCH, EPISODE_RUNS_TAGGED_PATCH, REVIEW_NOTICE_PATCH } from '../../../src/domain/names';
import { workflowBundle } from '../../../testkit/temporal';

/** The JSON values of the payloads at `path` in a history event (`…/payloads[].data`, base64). */
function payloadsAt(event: unknown, ...path: string[]): unknown[] {
  let at: unknown = event;
  for (const key of path) at = (at as Record<string, unknown> | undefined)?.[key];
  const payloads = (at as { payloads?: { data: string }[] } | undefined)?.payloads ?? [];
  return payloads.map((p) => JSON.parse(Buffer.from(p.data, 'base64').toString('utf8')) as unknown);
}

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

  it('holds both branches of the decision-channels patch: the sets before it without it, its own set with it', () => {
    // Decoded, not searched as base64: the id's bytes need not fall on a base64 boundary.
    const patched = (h: (typeof histories)[number]) =>
      h.json.events.some((e) =>
        payloadsAt(e, 'markerRecordedEventAttributes', 'details', 'patch-data').some(
          (d) => (d as { id?: string }).id === DECISION_CHANNELS_PATCH,
        ),
      );
    const setOf = (h: (typeof histories)[number]) => h.file.split('/')[0]!.split('.')[1];
    const decided = (set: string | undefined) =>
      histories.filter(
        (h) =>
          setOf(h) === set &&
          JSON.stringify(h.json.events[0]).includes('episodeProductionWorkflow') &&
          !h.file.startsWith('approval-expired'),
      );
    const later = decided('decision-channels');
    assert.ok(later.length >= 7, 'the decision-channels set holds the productions that took a decision');
    assert.equal(later.filter(patched).length, later.length, 'each of them asked the patch at its decision');
    // decisions-by-channel: an empty-name signal (dropped), then the desk's rework and the CLI's approval.
    const byChannel = later.find((h) => h.file.startsWith('decisions-by-channel'));
    assert.ok(byChannel, 'the decisions-by-channel scenario is recorded');
    const { events } = byChannel.json;
    const signals = events.flatMap((e) => payloadsAt(e, 'workflowExecutionSignaledEventAttributes', 'input'));
    assert.deepEqual(signals, [{ by: '', round: 0 }]);
    const updates = events.flatMap((e) =>
      payloadsAt(e, 'workflowExecutionUpdateCompletedEventAttributes', 'outcome', 'success'),
    );
    assert.deepEqual(
      updates.map((u) => [(u as { kind: string }).kind, (u as { channel: string }).channel]),
      [
        ['rework', 'desk'],
        ['approve', 'cli'],
      ],
    );
    for (const set of [undefined, 'tagged', 'review-notice']) {
      assert.ok(decided(set).length >= 4);
      assert.equal(decided(set).filter(patched).length, 0, `set ${set ?? 'first'} predates the patch`);
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
