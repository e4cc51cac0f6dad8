/**
 * The allocation invariants on the REAL file store under random interleavings (fast-check): several concurrent async
 * callers in one process, each with its own store instance on one data dir, send random (key, week) requests. The
 * cross-process race is covered by the store contract tests; this explores many more orderings, cheaply.
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { snapshotTree } from '../../../testkit/tree';
import { assertAllocationInvariants, assertOnlyWholeStoreFiles } from '../../../testkit/store-files';
import { UnlockedFileStore } from '../../../testkit/unsafe-stores';
import { sleep } from '../../../testkit/wait';

const WEEKS = ['2026-W32', '2026-W33'];
const by = { kind: 'test', note: 'interleavings' } as const;

interface Request {
  key: number;
  week: number;
  /** A pause before the request, so that callers overlap differently from run to run. */
  pauseMs: number;
}

type Outcome = { key: string; week: string } & ({ id: string; created: boolean } | { error: string });

const request = fc.record({
  key: fc.integer({ min: 0, max: 7 }),
  week: fc.integer({ min: 0, max: 1 }),
  pauseMs: fc.integer({ min: 0, max: 3 }),
});
/** 2..4 callers with up to 8 requests each. */
const callers = fc.array(fc.array(request, { minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: 4 });

async function runInterleaving(plan: Request[][], makeStore: (dir: string) => FileEpisodeStore): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'interleave-'));
  try {
    const outcomes: Outcome[] = [];
    await Promise.all(
      plan.map(async (requests) => {
        const store = makeStore(dir);
        for (const r of requests) {
          await sleep(r.pauseMs);
          const key = `run-${r.key}`;
          const week = WEEKS[r.week]!;
          try {
            const a = await allocateEpisodeOn(store, { allocationKey: key, weekId: week }, by);
            assert.equal(a.weekId, week);
            outcomes.push({ key, week, id: a.episodeId, created: a.created });
          } catch (e) {
            outcomes.push({ key, week, error: isPipelineError(e) ? e.type : String(e) });
          }
        }
      }),
    );
    await checkOutcomes(dir, outcomes);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function checkOutcomes(dir: string, outcomes: Outcome[]): Promise<void> {
  // The store itself: whole files, contiguous sequences per week from 0, at most one episode per key.
  await assertOnlyWholeStoreFiles(dir);
  const stored = new Map((await assertAllocationInvariants(dir)).map((e) => [e.key!, e.id]));

  const created = new Set<string>();
  for (const o of outcomes) {
    const owned = stored.get(o.key);
    if ('error' in o) {
      // The only refusal: the key already owns an episode in the other week.
      assert.equal(o.error, ErrorType.AllocationKeyCrossesWeek, JSON.stringify(o));
      assert.ok(owned !== undefined && !owned.startsWith(`${o.week}-`), JSON.stringify(o));
      continue;
    }
    // Every answer of a key is the one episode the store holds for it: a retry gets its first answer.
    assert.equal(o.id, owned, `${o.key} was answered ${o.id}, the store holds ${owned}`);
    if (o.created) {
      assert.ok(!created.has(o.id), `${o.id} was created twice`);
      created.add(o.id);
    }
  }
  assert.deepEqual([...created].sort(), [...stored.values()].sort(), 'every stored episode was created exactly once');

  // Afterwards, a cross-week request of every key is refused with nothing written (content and mtimes).
  const store = new FileEpisodeStore(dir);
  const before = await snapshotTree(dir);
  for (const [key, id] of stored) {
    const other = WEEKS.find((w) => !id.startsWith(`${w}-`))!;
    await assert.rejects(allocateEpisodeOn(store, { allocationKey: key, weekId: other }, by), (e) =>
      isPipelineError(e, ErrorType.AllocationKeyCrossesWeek),
    );
  }
  assert.deepEqual(await snapshotTree(dir), before, 'a refused request wrote something');
}

describe('hostile input: random interleavings of allocation requests on the real file store (fast-check)', function () {
  this.timeout(300_000);

  it('keeps the invariants: contiguous sequences, one episode per key, first answer on retry, cross-week refused', async () => {
    await fc.assert(
      fc.asyncProperty(callers, (plan) => runInterleaving(plan, (dir) => new FileEpisodeStore(dir))),
      { numRuns: 60 },
    );
  });

  it('the same property fails without the pipeline lock (so a pass above means something)', async () => {
    // Four callers, one week: contention in every run. Stop at the first violation (no shrinking needed here).
    const contended = fc.array(
      fc.array(
        request.map((r) => ({ ...r, week: 0 })),
        { minLength: 4, maxLength: 8 },
      ),
      {
        minLength: 4,
        maxLength: 4,
      },
    );
    const result = await fc.check(
      fc.asyncProperty(contended, (plan) => runInterleaving(plan, (dir) => new UnlockedFileStore(dir))),
      { numRuns: 30, endOnFailure: true },
    );
    assert.equal(result.failed, true, 'no violation found without the lock');
  });
});
