/**
 * The EpisodeStore contract: one parametrised suite that every store implementation must pass.
 * `makeStore` returns a fresh, empty store plus the environment that points a child process at the same store.
 */
import assert from 'node:assert/strict';
import { allocateEpisodeOn } from '../src/activities/allocation';
import { parseAllocationKey } from '../src/domain/allocation-key';
import { parseEpisodeId } from '../src/domain/episode-id';
import type { EpisodeState, HistoryEntry } from '../src/domain/episode-state';
import { isPipelineError, ErrorType } from '../src/domain/errors';
import { parseWeekId } from '../src/domain/week-id';
import type { EpisodeStore } from '../src/store/episode-store';
import type { AllocOutcome } from './alloc-client';
import { runNode } from './processes';
import type { UnsafeVariant } from './unsafe-stores';

export interface StoreUnderTest {
  store: EpisodeStore;
  /** Environment for a child process to open the same store. */
  childEnv: NodeJS.ProcessEnv;
  cleanup(): Promise<void>;
}

export interface ContractOptions {
  /** Whether the store without its pipeline lock (unsafe-stores.ts, `no-lock`) has no other protection against races. */
  lockSwitchBreaksIt: boolean;
}

const by = { kind: 'test', note: 'contract' } as const;
const W32 = parseWeekId('2026-W32');
const W33 = parseWeekId('2026-W33');

export function describeStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
  options: ContractOptions,
): void {
  describe(`EpisodeStore contract: ${name}`, function () {
    let t: StoreUnderTest;
    beforeEach(async () => {
      t = await makeStore();
    });
    afterEach(async () => {
      await t.cleanup();
    });

    const alloc = (key: string, week: string) => allocateEpisodeOn(t.store, { allocationKey: key, weekId: week }, by);

    it('numbers episodes 0, 1, 2 within a week and restarts at 0 in the next week', async () => {
      assert.equal((await alloc('run-a', W32)).episodeId, '2026-W32-0');
      assert.equal((await alloc('run-b', W32)).episodeId, '2026-W32-1');
      assert.equal((await alloc('run-c', W32)).episodeId, '2026-W32-2');
      assert.equal((await alloc('run-d', W33)).episodeId, '2026-W33-0');
      const listed = await t.store.listEpisodes({ weekId: W32 });
      assert.deepEqual(
        listed.map((e) => [e.episode_id, e.allocation_key]),
        [
          ['2026-W32-0', 'run-a'],
          ['2026-W32-1', 'run-b'],
          ['2026-W32-2', 'run-c'],
        ],
      );
    });

    it('gives a retried key its first episode back, and records who allocated it', async () => {
      const first = await alloc('run-a', W32);
      await alloc('run-b', W32);
      const again = await alloc('run-a', W32);
      assert.deepEqual({ ...again, created: true }, first);
      assert.equal(again.created, false);
      const state = await t.store.requireEpisode(parseEpisodeId(first.episodeId).episodeId);
      assert.equal(state.allocation_key, 'run-a');
      assert.deepEqual(state.allocated_by, by);
      assert.ok(Date.parse(state.created_at) > 0);
      assert.equal((await t.store.listEpisodes()).length, 2);
    });

    it('refuses a key reused for another week, and writes nothing', async () => {
      await alloc('run-a', W32);
      const before = JSON.stringify(await t.store.listEpisodes());
      await assert.rejects(alloc('run-a', W33), (e) => isPipelineError(e, ErrorType.AllocationKeyCrossesWeek));
      assert.equal(JSON.stringify(await t.store.listEpisodes()), before);
    });

    it('counts completed episodes in history for max+1, several per week', async () => {
      for (const key of ['run-a', 'run-b']) {
        const r = await alloc(key, W32);
        const id = parseEpisodeId(r.episodeId).episodeId;
        await t.store.updateEpisode(id, (s) => ({
          ...s,
          status: 'completed',
          completed_at: '2026-08-07T10:00:00.000Z',
        }));
        await t.store.appendHistory(historyEntry(id, key));
      }
      assert.deepEqual(
        (await t.store.listHistory({ weekId: W32 })).map((h) => h.episode_id),
        ['2026-W32-0', '2026-W32-1'],
      );
      assert.equal((await alloc('run-c', W32)).episodeId, '2026-W32-2');
    });

    it('lists unfinished episodes by status: completed ones left out, in history yet or not', async () => {
      const ids = [];
      for (const [key, week] of [
        ['run-a', W32],
        ['run-b', W32],
        ['run-c', W33],
        ['run-d', W33],
      ] as const) {
        ids.push(parseEpisodeId((await alloc(key, week)).episodeId).episodeId);
      }
      const complete = (s: EpisodeState): EpisodeState => ({
        ...s,
        status: 'completed',
        completed_at: '2026-08-07T10:00:00.000Z',
      });
      await t.store.updateEpisode(ids[0]!, complete);
      await t.store.appendHistory(historyEntry(ids[0]!, 'run-a'));
      // Completed in its state, its history not written yet (a crash between completion's two writes).
      await t.store.updateEpisode(ids[2]!, complete);
      await t.store.updateEpisode(ids[3]!, (s) => ({ ...s, status: 'awaiting_approval' }));
      const unfinished = await t.store.listUnfinishedEpisodes();
      assert.deepEqual(
        unfinished.map((s) => [s.episode_id, s.status]),
        [
          ['2026-W32-1', 'allocated'],
          ['2026-W33-1', 'awaiting_approval'],
        ],
      );
      const all = await t.store.listEpisodes();
      assert.deepEqual(
        unfinished,
        all.filter((s) => s.status !== 'completed'),
      );
    });

    it('keeps history append-only', async () => {
      const id = parseEpisodeId((await alloc('run-a', W32)).episodeId).episodeId;
      await t.store.appendHistory(historyEntry(id, 'run-a'));
      await t.store.appendHistory(historyEntry(id, 'run-a')); // same entry again: a no-op
      await assert.rejects(t.store.appendHistory({ ...historyEntry(id, 'run-a'), total_cost_cents: 1 }), (e) =>
        isPipelineError(e, ErrorType.InvalidState),
      );
      assert.equal((await t.store.listHistory()).length, 1);
    });

    it('guards paid work: an unknown episode is EpisodeNotFound; identity cannot be rewritten', async () => {
      await assert.rejects(t.store.requireEpisode(parseEpisodeId('2026-W32-0').episodeId), (e) =>
        isPipelineError(e, ErrorType.EpisodeNotFound),
      );
      const id = parseEpisodeId((await alloc('run-a', W32)).episodeId).episodeId;
      await assert.rejects(
        t.store.updateEpisode(id, (s) => ({ ...s, allocation_key: 'other' })),
        (e) => isPipelineError(e, ErrorType.InvalidState),
      );
      assert.equal((await t.store.requireEpisode(id)).allocation_key, 'run-a');
    });

    it('refuses invalid requests before touching the store', async () => {
      for (const [key, week] of [
        ['', W32],
        ['k'.repeat(257), W32],
        ['a\u0007b', W32],
        ['ok', '2025-W53'],
        ['ok', '2026-W32/../x'],
      ] as const) {
        await assert.rejects(alloc(key, week), (e) => isPipelineError(e, ErrorType.InvalidAllocationRequest));
      }
      assert.equal((await t.store.listEpisodes()).length, 0);
    });

    describe('re-asserting an allocation the store forgot (a restore, a failover)', () => {
      const claim = (key: string, id: string) => ({
        allocationKey: parseAllocationKey(key),
        episodeId: parseEpisodeId(id).episodeId,
        allocatedBy: { kind: 'workflow', workflow_id: key, run_id: 'r1', namespace: 'default' } as const,
        createdAt: '2026-08-03T09:00:00.000Z',
      });
      const listed = async () => (await t.store.listEpisodes()).map((e) => `${e.episode_id} ${e.allocation_key}`);

      it('writes a free id back with its key and its record; again, and the key allocating, get it back', async () => {
        await alloc('run-a', W32);
        const back = await t.store.reassertAllocation(claim('run-b', '2026-W32-1'));
        assert.deepEqual(back, { episodeId: '2026-W32-1', weekId: W32, sequence: 1, created: true });
        assert.equal((await t.store.reassertAllocation(claim('run-b', '2026-W32-1'))).created, false);
        assert.deepEqual({ ...(await alloc('run-b', W32)), created: true }, back);
        const state = await t.store.requireEpisode(parseEpisodeId('2026-W32-1').episodeId);
        assert.deepEqual(
          [state.allocation_key, state.created_at, state.allocated_by],
          ['run-b', '2026-08-03T09:00:00.000Z', claim('run-b', '2026-W32-1').allocatedBy],
        );
        assert.equal((await alloc('run-c', W32)).episodeId, '2026-W32-2');
      });

      it("above the week's next sequence: the ids between stay free for their own runs, never for a new one", async () => {
        await alloc('run-a', W32);
        await t.store.reassertAllocation(claim('run-c', '2026-W32-2'));
        assert.equal((await alloc('run-d', W32)).episodeId, '2026-W32-3', 'a new run never gets a forgotten id');
        await t.store.reassertAllocation(claim('run-b', '2026-W32-1'));
        assert.deepEqual(await listed(), [
          '2026-W32-0 run-a',
          '2026-W32-1 run-b',
          '2026-W32-2 run-c',
          '2026-W32-3 run-d',
        ]);
      });

      it('refuses (AllocationConflict, nothing written) an id another key took meanwhile, or a key that holds another', async () => {
        await alloc('run-a', W32);
        await alloc('intruder', W32); // took 2026-W32-1, which the store had given run-b before it forgot
        const before = JSON.stringify(await t.store.listEpisodes());
        const conflict = (e: unknown) => isPipelineError(e, ErrorType.AllocationConflict) && !e.retryable;
        await assert.rejects(t.store.reassertAllocation(claim('run-b', '2026-W32-1')), conflict);
        await assert.rejects(t.store.reassertAllocation(claim('run-a', '2026-W32-2')), conflict);
        assert.equal(JSON.stringify(await t.store.listEpisodes()), before);
      });
    });

    describe('concurrency across OS processes', function () {
      this.timeout(120_000);
      // 4 processes x 6 requests: 12 distinct keys, each asked twice by two different processes.
      const plan = (): { key: string; week: string }[][] => {
        const procs: { key: string; week: string }[][] = [[], [], [], []];
        for (let k = 0; k < 12; k++) {
          procs[k % 4]!.push({ key: `run-${k}`, week: W32 });
          procs[(k + 1) % 4]!.push({ key: `run-${k}`, week: W32 });
        }
        return procs;
      };

      async function race(unsafe?: UnsafeVariant): Promise<string[]> {
        const startAt = Date.now() + 1500;
        const runs = plan().map((requests) =>
          runNode('testkit/alloc-client.js', [String(startAt), JSON.stringify(requests), ...(unsafe ? [unsafe] : [])], {
            ...t.childEnv,
            // Widen the read-decide-write window so that a missing lock shows reliably.
            EPISODES_FAILPOINTS: 'allocation.decided=delay:40',
          }),
        );
        const outcomes = (await Promise.all(runs)).flatMap((r) => {
          assert.equal(r.code, 0, r.stderr);
          return JSON.parse(r.stdout) as AllocOutcome[];
        });
        return allocationViolations(outcomes, await t.store.listEpisodes({ weekId: W32 }));
      }

      it('serialises 24 allocations from 4 processes: sequences exactly 0..11, repeats get their first answer', async () => {
        assert.deepEqual(await race(), []);
      });

      if (options.lockSwitchBreaksIt) {
        it('breaks without the pipeline lock (shows the test above can fail)', async () => {
          const violations = await race('no-lock');
          assert.ok(violations.length > 0, 'expected a duplicate or lost allocation without the lock');
        });
      }
    });
  });
}

/** Everything that would make the concurrency outcome wrong; empty means correct. */
export function allocationViolations(
  outcomes: AllocOutcome[],
  stored: { episode_id: string; sequence: number; allocation_key: string | null }[],
): string[] {
  const violations: string[] = [];
  const answers = new Map<string, Set<string>>();
  for (const o of outcomes) {
    if ('error' in o) {
      violations.push(`${o.key}: lost (${o.error})`);
      continue;
    }
    answers.set(o.key, (answers.get(o.key) ?? new Set()).add(o.episodeId));
  }
  const owners = new Map<string, string[]>();
  for (const [key, ids] of answers) {
    if (ids.size > 1) violations.push(`${key}: got different episodes ${[...ids].join(', ')}`);
    for (const id of ids) owners.set(id, [...(owners.get(id) ?? []), key]);
  }
  for (const [id, keys] of owners)
    if (keys.length > 1) violations.push(`${id}: handed to several keys ${keys.join(', ')}`);
  const seqs = stored.map((s) => s.sequence).sort((a, b) => a - b);
  const keys = new Set(outcomes.map((o) => o.key));
  if (JSON.stringify(seqs) !== JSON.stringify([...Array(keys.size).keys()])) {
    violations.push(`stored sequences ${seqs.join(',')} are not exactly 0..${keys.size - 1}`);
  }
  for (const s of stored) {
    const handed = answers.get(s.allocation_key ?? '');
    if (!handed?.has(s.episode_id))
      violations.push(`${s.episode_id}: stored for ${s.allocation_key} but never handed out`);
  }
  return violations;
}

function historyEntry(id: ReturnType<typeof parseEpisodeId>['episodeId'], key: string): HistoryEntry {
  const { weekId, sequence } = parseEpisodeId(id);
  return {
    schema: 'history-entry/v1',
    episode_id: id,
    week_id: weekId,
    sequence,
    allocation_key: parseAllocationKey(key),
    completed_at: '2026-08-07T10:00:00.000Z',
    remote_jobs: [],
    ledger: [],
    total_cost_cents: 0,
    currency: 'USD',
    approval: null,
    media: {},
  };
}
