import assert from 'node:assert/strict';
import { decisionChannel, decisionInputProblem, MAX_NOTES } from '../../../src/domain/decision';
import { decisionUpdateId, deskDecisionUpdateId } from '../../../src/domain/names';

describe('decision channels and checks', () => {
  const d = { episodeId: '2026-W32-1', round: 2, kind: 'approve', by: 'ana' } as const;

  it('reads the channel from the handler kind and the exact update ID of the desk or the CLI', () => {
    assert.equal(decisionChannel(d, undefined), 'signal');
    assert.equal(decisionChannel(d, deskDecisionUpdateId(d.episodeId, 2, 'approve', 'ana')), 'desk');
    assert.equal(decisionChannel(d, decisionUpdateId(d.episodeId, 2, 'approve', 'ana')), 'cli');
    assert.equal(decisionChannel(d, 'ui-2026-W32-1-r2-approve-ana'), 'update');
    assert.equal(decisionChannel(d, '0b6f0e5e-6c1f-4f0a-9a43-6a1f1d7e3f10'), 'update');
    // An ID built for another round, kind or approver is not the desk's or the CLI's for this decision.
    assert.equal(decisionChannel(d, deskDecisionUpdateId(d.episodeId, 1, 'approve', 'ana')), 'update');
    assert.equal(decisionChannel(d, decisionUpdateId(d.episodeId, 2, 'rework', 'ana')), 'update');
    assert.equal(decisionChannel(d, decisionUpdateId(d.episodeId, 2, 'approve', 'bob')), 'update');
  });

  it('checks a decision whatever it came through: the approver, and a rework’s notes', () => {
    assert.equal(decisionInputProblem('approve', { by: 'ana' }), undefined);
    assert.equal(decisionInputProblem('approve', { by: '' }), 'the approver name must not be empty');
    assert.equal(decisionInputProblem('approve', { by: 7 }), 'the approver name must not be empty');
    assert.equal(decisionInputProblem('approve', { by: 'ana', notes: '' }), undefined, 'approve takes no notes');
    assert.equal(decisionInputProblem('rework', { by: 'ana', notes: 'warmer' }), undefined);
    assert.equal(decisionInputProblem('rework', { by: 'ana' }), 'rework notes must not be empty');
    assert.match(decisionInputProblem('rework', { by: 'ana', notes: 'x'.repeat(MAX_NOTES + 1) }) ?? '', /1-4000/);
    assert.match(decisionInputProblem('rework', { by: 'ana', notes: 'a\u0000b' }) ?? '', /printable/);
  });
});
