import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decideAllocation, type StoredEpisodeRef } from '../../../src/domain/allocation';
import { parseAllocationKey, type AllocationKey } from '../../../src/domain/allocation-key';
import { formatEpisodeId, type EpisodeId } from '../../../src/domain/episode-id';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { parseWeekId, type WeekId } from '../../../src/domain/week-id';

const W32 = parseWeekId('2026-W32');
const W33 = parseWeekId('2026-W33');
const key = (k: string) => parseAllocationKey(k);
const ref = (weekId: WeekId, sequence: number, allocationKey: string | null): StoredEpisodeRef => ({
  episodeId: formatEpisodeId(weekId, sequence),
  weekId,
  sequence,
  allocationKey,
});

describe('decideAllocation (pure)', () => {
  it('starts a new week at 0 and continues at max+1, counting completed and keyless (migrated) episodes', () => {
    assert.deepEqual(decideAllocation({ key: key('a'), weekId: W32, keyMatches: [], weekEpisodes: [] }), {
      kind: 'new',
      episodeId: '2026-W32-0',
      weekId: W32,
      sequence: 0,
    });
    const week = [ref(W32, 0, null), ref(W32, 1, 'x'), ref(W32, 4, 'y')];
    const d = decideAllocation({ key: key('a'), weekId: W32, keyMatches: [], weekEpisodes: week });
    assert.equal(d.kind === 'new' && d.sequence, 5);
  });

  it('returns the unique match of the key in the target week', () => {
    const mine = ref(W32, 1, 'a');
    const d = decideAllocation({
      key: key('a'),
      weekId: W32,
      keyMatches: [mine],
      weekEpisodes: [ref(W32, 0, 'z'), mine],
    });
    assert.deepEqual(d, { kind: 'existing', episode: mine });
  });

  it('refuses a key that owns an episode in another week', () => {
    assert.throws(
      () => decideAllocation({ key: key('a'), weekId: W33, keyMatches: [ref(W32, 0, 'a')], weekEpisodes: [] }),
      (e) =>
        isPipelineError(e, ErrorType.AllocationKeyCrossesWeek) && (e.details.episodes as string[])[0] === '2026-W32-0',
    );
  });

  it('refuses a key that matches several episodes', () => {
    assert.throws(
      () =>
        decideAllocation({
          key: key('a'),
          weekId: W32,
          keyMatches: [ref(W32, 0, 'a')],
          weekEpisodes: [ref(W32, 0, 'a'), ref(W32, 1, 'a')],
        }),
      (e) => isPipelineError(e, ErrorType.AmbiguousAllocationKey) && (e.details.episodes as string[]).length === 2,
    );
  });

  it('refuses a store where two episodes claim one week+sequence', () => {
    const twin = { ...ref(W32, 0, 'b'), episodeId: formatEpisodeId(W32, 1) };
    assert.throws(
      () => decideAllocation({ key: key('a'), weekId: W32, keyMatches: [], weekEpisodes: [ref(W32, 1, 'x'), twin] }),
      (e) => isPipelineError(e, ErrorType.StoreCorrupt),
    );
  });

  it('goes above the ids Temporal records as handed out, and refuses a recorded id of another week', () => {
    const week = [ref(W32, 0, 'x')];
    const recorded = [formatEpisodeId(W32, 1), formatEpisodeId(W32, 3)];
    const d = decideAllocation({ key: key('a'), weekId: W32, keyMatches: [], weekEpisodes: week, recorded });
    assert.equal(d.kind === 'new' && d.episodeId, '2026-W32-4');
    const mine = ref(W32, 0, 'a');
    const again = decideAllocation({ key: key('a'), weekId: W32, keyMatches: [mine], weekEpisodes: [mine], recorded });
    assert.deepEqual(again, { kind: 'existing', episode: mine }, 'the key still gets its own episode back');
    assert.throws(
      () =>
        decideAllocation({
          key: key('a'),
          weekId: W32,
          keyMatches: [],
          weekEpisodes: [],
          recorded: [formatEpisodeId(W33, 0)],
        }),
      (e) => isPipelineError(e, ErrorType.InvalidAllocationRequest),
    );
  });

  it('never hands out an id twice across restores, given what Temporal recorded (model check)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant('restore' as const)), { maxLength: 40 }),
        fc.nat(),
        (steps, seed) => {
          let stored: StoredEpisodeRef[] = [];
          const handed = new Map<EpisodeId, string>(); // Temporal's record: id → key, never forgotten
          for (const step of steps) {
            if (step === 'restore') {
              stored = stored.slice(0, seed % (stored.length + 1)); // back to an earlier backup
              continue;
            }
            const allocationKey = key(`run-${step}`);
            const d = decideAllocation({
              key: allocationKey,
              weekId: W32,
              keyMatches: stored.filter((e) => e.allocationKey === allocationKey),
              weekEpisodes: stored,
              recorded: [...handed.keys()],
            });
            if (d.kind === 'existing') continue;
            const owner = handed.get(d.episodeId);
            assert.ok(owner === undefined, `${d.episodeId} handed to ${owner} and again to ${allocationKey}`);
            handed.set(d.episodeId, allocationKey);
            stored.push(ref(W32, d.sequence, allocationKey));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps the invariants under random interleavings of requests (model check)', () => {
    const weeks = [W32, W33];
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 1 })), { maxLength: 60 }),
        (requests) => {
          const stored: StoredEpisodeRef[] = [];
          const firstAnswer = new Map<string, string>();
          for (const [k, w] of requests) {
            const allocationKey: AllocationKey = key(`run-${k}`);
            const weekId = weeks[w]!;
            try {
              const d = decideAllocation({
                key: allocationKey,
                weekId,
                keyMatches: stored.filter((s) => s.allocationKey === allocationKey),
                weekEpisodes: stored.filter((s) => s.weekId === weekId),
              });
              const id = d.kind === 'existing' ? d.episode.episodeId : d.episodeId;
              if (d.kind === 'new') stored.push(ref(weekId, d.sequence, allocationKey));
              const first = firstAnswer.get(allocationKey);
              if (first !== undefined) assert.equal(id, first, 'a retry got a different episode');
              firstAnswer.set(allocationKey, id);
            } catch (e) {
              // The only allowed refusal: the key already lives in the other week.
              assert.ok(isPipelineError(e, ErrorType.AllocationKeyCrossesWeek), String(e));
              assert.ok(firstAnswer.has(allocationKey));
            }
          }
          for (const weekId of weeks) {
            const seqs = stored.filter((s) => s.weekId === weekId).map((s) => s.sequence);
            assert.deepEqual(seqs, [...seqs.keys()], 'sequences contiguous from 0 in allocation order');
          }
          assert.equal(new Set(stored.map((s) => s.allocationKey)).size, stored.length, 'one episode per key');
        },
      ),
      { numRuns: 300 },
    );
  });
});
