/** The names are a format: running productions are found by them, so the spelling is pinned here once. */
import assert from 'node:assert/strict';
import {
  decisionUpdateId,
  episodeIdOfWorkflowId,
  idempotencyKey,
  paidStepWorkflowId,
  productionWorkflowId,
  reassemblyWorkflowId,
  stepKey,
} from '../../../src/domain/names';

describe('deterministic names', () => {
  it('spells every workflow ID, step key, idempotency key and update ID as deployed runs know them', () => {
    assert.equal(productionWorkflowId('2026-W32-1'), 'episode-2026-W32-1');
    assert.equal(stepKey('cover', 0), 'cover-r0');
    assert.equal(paidStepWorkflowId('2026-W32-1', 'video', 0), 'episode-2026-W32-1-video-r0');
    assert.equal(paidStepWorkflowId('2026-W32-1', 'rework', 2), 'episode-2026-W32-1-rework-r2');
    assert.equal(reassemblyWorkflowId('2026-W32-1', 1), 'episode-2026-W32-1-reassembly-r1');
    assert.equal(idempotencyKey('2026-W32-1', 'assembly', 0), '2026-W32-1:assembly:r0');
    assert.equal(decisionUpdateId('2026-W32-1', 0, 'approve', 'ana'), 'decision-2026-W32-1-r0-approve-ana');
  });

  it('finds the episode of a production and of its children, and of nothing else', () => {
    assert.equal(episodeIdOfWorkflowId('episode-2026-W32-1'), '2026-W32-1');
    assert.equal(episodeIdOfWorkflowId('episode-2026-W32-1-video-r0'), '2026-W32-1');
    assert.equal(episodeIdOfWorkflowId('weekly-media-2026-08-04T09:00:00Z'), undefined);
  });
});
