import assert from 'node:assert/strict';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import { formatEpisodeId, parseEpisodeId } from '../../../src/domain/episode-id';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';

describe('episode ids and allocation keys', () => {
  it('round-trips episode ids', () => {
    const id = parseEpisodeId('2026-W32-1');
    assert.deepEqual(id, { episodeId: '2026-W32-1', weekId: '2026-W32', sequence: 1 });
    assert.equal(formatEpisodeId(parseWeekId('2026-W32'), 0), '2026-W32-0');
  });

  it('rejects leading zeros, path tricks and NUL', () => {
    for (const bad of [
      '2026-W32-01',
      '2026-W32--1',
      '2026-W32-1/..',
      '../2026-W32-1',
      '2026-W32-1\0',
      '2026-W32/1',
      '..',
      '2025-W53-0',
      '2026-W32-1 ',
      '2026-W32-1234567',
    ]) {
      assert.throws(
        () => parseEpisodeId(bad),
        (e) => isPipelineError(e, ErrorType.InvalidInput),
        JSON.stringify(bad),
      );
    }
  });

  it('rejects empty, over-long and control-character keys', () => {
    assert.equal(parseAllocationKey('weekly-media-2026-08-03T09:00:00Z'), 'weekly-media-2026-08-03T09:00:00Z');
    assert.equal(parseAllocationKey('k'.repeat(256)).length, 256);
    for (const bad of ['', '   ', 'k'.repeat(257), 'a\nb', 'a\0b', 'a\u001bb', 'a\u2028b', 'a\ud800b']) {
      assert.throws(
        () => parseAllocationKey(bad),
        (e) => isPipelineError(e, ErrorType.InvalidAllocationRequest),
        JSON.stringify(bad),
      );
    }
  });
});
