import assert from 'node:assert/strict';
import { parseAllocationKey } from '../../src/domain/allocation-key';
import { parseEpisodeId } from '../../src/domain/episode-id';
import { isPipelineError, PipelineError } from '../../src/domain/errors';
import { parseWeekId } from '../../src/domain/week-id';
import { ErrorType } from '../../src/shared';
import {
  allocatedReply,
  allocationDelegation,
  readDelegatedRequest,
  refusedReply,
} from '../../src/store/allocation-delegation';
import type { AllocationRequest } from '../../src/store/episode-store';

describe('allocation delegation: what a waiter sends its lock holder, and what comes back', () => {
  const request: AllocationRequest = {
    allocationKey: parseAllocationKey('weekly-2026-08-03T09:00:00Z'),
    weekId: parseWeekId('2026-W32'),
    allocatedBy: { kind: 'test', note: 'delegation' },
  };
  const delegation = allocationDelegation(request);
  const result = {
    episodeId: parseEpisodeId('2026-W32-1').episodeId,
    weekId: request.weekId,
    sequence: 1,
    created: true,
  };

  it('the holder reads back exactly the request, and the waiter exactly the result', () => {
    assert.deepEqual(readDelegatedRequest(delegation.request), request);
    assert.deepEqual(delegation.accept(allocatedReply(result)), { value: result });
  });

  it('a refusal is rethrown as the same non-retryable error, details included', () => {
    const refusal = new PipelineError(ErrorType.AllocationKeyCrossesWeek, 'owns 2026-W31-0', {
      episodes: ['2026-W31-0'],
    });
    assert.throws(
      () => delegation.accept(refusedReply(refusal)),
      (e) =>
        isPipelineError(e, ErrorType.AllocationKeyCrossesWeek) &&
        e.message === 'owns 2026-W31-0' &&
        !e.retryable &&
        JSON.stringify(e.details) === '{"episodes":["2026-W31-0"]}',
    );
  });

  it('an answer it cannot use is dropped (the waiter allocates itself): garbage, another version, another week, inconsistent', () => {
    for (const reply of [
      'not json',
      JSON.stringify({ v: 2, outcome: { kind: 'allocated', ...result } }),
      allocatedReply({ ...result, episodeId: parseEpisodeId('2026-W33-1').episodeId, weekId: parseWeekId('2026-W33') }),
      allocatedReply({ ...result, sequence: -1 }),
      allocatedReply({ ...result, sequence: 2 }),
    ]) {
      assert.equal(delegation.accept(reply), undefined, reply);
    }
  });

  it('a request the holder cannot read is declined, never guessed at: garbage, another version, a bad key or week', () => {
    const sent = JSON.parse(delegation.request) as Record<string, unknown>;
    for (const text of [
      '{',
      JSON.stringify({ ...sent, v: 2 }),
      JSON.stringify({ ...sent, allocationKey: 'a\u0000b' }),
      JSON.stringify({ ...sent, weekId: '2026-W54' }),
      JSON.stringify({ ...sent, extra: true }),
    ]) {
      assert.equal(readDelegatedRequest(text), undefined, text);
    }
  });
});
