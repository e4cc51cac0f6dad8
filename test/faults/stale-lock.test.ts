/**
 * The takeover of a dead holder's lock, by many contenders at the same instant: what the soak does when it SIGKILLs
 * a lock holder while other processes queue for the lock, reduced to its core and repeated. Each round plants the lock
 * a SIGKILLed holder leaves (a `pipeline.lock` directory whose heartbeat stopped long ago), then starts several
 * allocating processes at once. Exactly one may hold the lock at a time, so the week gets 0..n-1, once each.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../../src/activities/allocation';
import { PaidStepCall } from '../../src/activities/paid-step-call';
import { charged } from '../../src/activities/paid-step-settle';
import { parseEpisodeId } from '../../src/domain/episode-id';
import { ErrorType } from '../../src/domain/errors';
import { FileEpisodeStore } from '../../src/store/file-store';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import type { AllocOutcome } from '../../testkit/alloc-client';
import { startTestVendor } from '../../testkit/deps';
import { bookkeepingDeps, jobOf, stepRefOf } from '../../testkit/frozen-writer';
import { collect, freezeAtFailpoint, runNode, spawnNode } from '../../testkit/processes';
import { assertInvariants, formatTable, reportTable } from '../../testkit/reliability';

const CONTENDERS = 6;
const ROUNDS = 3;
const STALE_MS = 2_000;

describe("a dead holder's lock taken over by several processes at once", function () {
  this.timeout(5 * 60_000);
  let vendor: VendorSimulator;
  const dirs: string[] = [];
  const rows: Record<string, string | number>[] = [];

  before(async () => {
    vendor = await startTestVendor(); // no charges: the invariants' money side must simply stay empty
  });
  after(async () => {
    await vendor?.close();
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
    if (rows.length) await reportTable('stale lock takeover', rows);
  });

  it('a contender delayed between judging the lock stale and removing it does not remove the next holder', async () => {
    // B judges the dead holder's lock stale, then stalls 1.5 s before removing it. Meanwhile A judges it stale too,
    // takes the lock and stays in its critical section (decided, not committed) for 1.5 s. B's late removal must not
    // take A's lock away: without protection both hold it, both decide sequence 0, and one commit overwrites the other.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'stale-lock-'));
    dirs.push(dir);
    await plantDeadHoldersLock(dir);
    const startAt = Date.now() + 2_500;
    const contender = (key: string, at: number, env: NodeJS.ProcessEnv) =>
      runNode('testkit/alloc-client.js', [String(at), JSON.stringify([{ key, week: '2026-W32' }])], {
        EPISODES_DATA_DIR: dir,
        EPISODES_STORE_URL: '',
        EPISODES_LOCK_STALE_MS: String(STALE_MS),
        ...env,
      });
    const runs = await Promise.all([
      contender('slow-remover', startAt, {
        NODE_OPTIONS: `--require "${path.join(__dirname, 'slow-lock-removal-preload.js')}"`,
        RELIABILITY_SLOW_LOCK_RMDIR_MS: '1500',
      }),
      contender('slow-committer', startAt + 300, { EPISODES_FAILPOINTS: 'allocation.decided=delay:1500' }),
    ]);
    assert.match(runs[0].stderr, /slow-lock-removal: delaying/, 'the slow contender really judged the lock stale');
    const ids = runs.flatMap((r) => {
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as AllocOutcome[]).map((o) => ('episodeId' in o ? o.episodeId : `error ${o.error}`));
    });
    rows.push({
      round: 'delayed removal',
      contenders: 2,
      'distinct episodes': new Set(ids).size,
      answers: ids.join(' '),
    });
    assert.deepEqual(ids.sort(), ['2026-W32-0', '2026-W32-1'], 'each contender got its own episode');
    await assertInvariants(dir, vendor, { keys: ['slow-remover', 'slow-committer'] });
  });

  for (let round = 1; round <= ROUNDS; round++) {
    it(`round ${round}: ${CONTENDERS} contenders, one holder at a time, sequences 0..${CONTENDERS - 1}`, async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'stale-lock-'));
      dirs.push(dir);
      await plantDeadHoldersLock(dir);

      // Separate processes, released at the same instant once all have started.
      const startAt = Date.now() + 2_500;
      const runs = await Promise.all(
        Array.from({ length: CONTENDERS }, (_, i) =>
          runNode('testkit/alloc-client.js', [String(startAt), JSON.stringify([{ key: `k${i}`, week: '2026-W32' }])], {
            EPISODES_DATA_DIR: dir,
            EPISODES_STORE_URL: '',
            EPISODES_LOCK_STALE_MS: String(STALE_MS),
          }),
        ),
      );
      const outcomes = runs.flatMap((r) => {
        assert.equal(r.code, 0, r.stderr);
        return JSON.parse(r.stdout) as AllocOutcome[];
      });
      const ids = outcomes.map((o) => ('episodeId' in o ? o.episodeId : `error ${o.error}`));
      rows.push({
        round,
        contenders: CONTENDERS,
        'distinct episodes': new Set(ids).size,
        answers: ids.sort().join(' '),
      });
      assert.deepEqual(
        ids.sort(),
        Array.from({ length: CONTENDERS }, (_, i) => `2026-W32-${i}`).sort(),
        'each contender got its own episode',
      );
      await assertInvariants(dir, vendor, { keys: Array.from({ length: CONTENDERS }, (_, i) => `k${i}`) });
    });
  }
});

describe('a holder frozen (SIGSTOP) past the stale time, then resumed: the lock moved, its commit is refused', function () {
  this.timeout(3 * 60_000);
  const WEEK = '2026-W32';
  const by = { kind: 'test', note: 'frozen holder' } as const;
  let vendor: VendorSimulator;
  const dirs: string[] = [];
  const rows: Record<string, string | number>[] = [];
  const childEnv = (dir: string, failpoints: string) => ({
    EPISODES_DATA_DIR: dir,
    EPISODES_STORE_URL: '',
    EPISODES_LOCK_STALE_MS: String(STALE_MS),
    EPISODES_FAILPOINTS: failpoints,
  });
  /** The process that finds the frozen holder's heartbeat stale and takes the lock over. */
  const newHolder = (dir: string) => new FileEpisodeStore(dir, { timeoutMs: 30_000, staleMs: STALE_MS });

  before(async () => {
    vendor = await startTestVendor();
  });
  after(async () => {
    await vendor?.close();
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
    if (rows.length) console.log(`\nfrozen lock holders\n${formatTable(rows)}\n`);
  });

  // The pipeline lock: frozen inside an allocation, before its commit point (decided, key written) or after it.
  for (const point of ['allocation.decided', 'allocation.key-written', 'allocation.index-written']) {
    it(`pipeline lock, frozen at ${point}: after SIGCONT its write is refused, the new holder's allocation stands`, async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'frozen-holder-'));
      dirs.push(dir);
      const frozen = spawnNode('testkit/alloc-client.js', ['0', JSON.stringify([{ key: 'frozen', week: WEEK }])], {
        ...childEnv(dir, `${point}=delay:500`),
      });
      const result = collect(frozen);
      await freezeAtFailpoint(frozen, point);
      const store = newHolder(dir);
      const theirs = await allocateEpisodeOn(store, { allocationKey: 'new-holder', weekId: WEEK }, by);
      frozen.kill('SIGCONT');
      const r = await result;
      assert.equal(r.code, 0, r.stderr);
      const [outcome] = JSON.parse(r.stdout) as AllocOutcome[];
      rows.push({
        lock: 'pipeline',
        'frozen at': point,
        'frozen outcome': 'error' in outcome! ? outcome.error : `wrote ${outcome!.episodeId}`,
        'what stands': (await store.listEpisodes()).map((e) => `${e.episode_id} ${e.allocation_key}`).join(', '),
      });
      assert.deepEqual(
        outcome,
        { key: 'frozen', week: WEEK, error: ErrorType.LockCompromised },
        'the frozen write refused',
      );
      // Committed before it froze (index-written): the allocation stays its own, and the new holder got the next one.
      const committed = point === 'allocation.index-written';
      assert.equal(theirs.episodeId, committed ? '2026-W32-1' : '2026-W32-0');
      const episodes = await store.listEpisodes();
      assert.deepEqual(
        episodes.map((e) => `${e.episode_id} ${e.allocation_key}`),
        committed ? ['2026-W32-0 frozen', '2026-W32-1 new-holder'] : ['2026-W32-0 new-holder'],
        "the new holder's allocation stands",
      );
      await assertInvariants(dir, vendor, { keys: committed ? ['frozen', 'new-holder'] : ['new-holder'] });
    });
  }

  // The episode lock: frozen half-way through writing the state file (after every check the holder makes).
  for (const kind of ['step', 'charge'] as const) {
    const what = kind === 'step' ? 'a step record' : 'a charge';
    it(`episode lock, frozen mid-write of ${what}: after SIGCONT its rename is refused, the new holder's write stands`, async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'frozen-holder-'));
      dirs.push(dir);
      const store = newHolder(dir);
      const { episodeId } = await allocateEpisodeOn(store, { allocationKey: 'run', weekId: WEEK }, by);
      const frozen = spawnNode('testkit/frozen-writer.js', [episodeId, kind, 'video-r0'], {
        ...childEnv(dir, 'fs.write=delay:500@1'),
      });
      const result = collect(frozen);
      await freezeAtFailpoint(frozen, 'fs.write');
      // The new holder writes the same kind of record, for another step.
      const cover = stepRefOf(episodeId, 'cover-r0');
      const call = new PaidStepCall(bookkeepingDeps(store), cover, undefined);
      if (kind === 'step') await call.save(() => call.bareRecord({}));
      else {
        const job = jobOf(cover, 'job-new-holder');
        await store.updateEpisode(cover.id, (s) =>
          charged(s, { call, job, cost: job.cost, vouched: true }, null, 'failed'),
        );
      }
      frozen.kill('SIGCONT');
      const r = await result;
      assert.equal(r.code, 0, r.stderr);
      const state = await store.getEpisode(parseEpisodeId(episodeId).episodeId);
      rows.push({
        lock: 'episode',
        'frozen at': `fs.write (${what})`,
        'frozen outcome': r.stdout,
        'what stands': `steps ${Object.keys(state!.steps).join(' ')}`,
      });
      assert.equal(r.stdout, ErrorType.LockCompromised, 'the frozen write refused');
      assert.deepEqual(
        Object.keys(state!.steps),
        ['cover-r0'],
        "the new holder's write stands, the frozen one is not in",
      );
      assert.deepEqual(
        state!.ledger.map((l) => l.remote_job_id),
        kind === 'charge' ? ['job-new-holder'] : [],
      );
      await assert.rejects(fs.stat(path.join(dir, 'episodes', episodeId, 'episode.lock')), { code: 'ENOENT' });
    });
  }
});

/** What a SIGKILLed holder leaves: the lock directory, its heartbeat (mtime) stopped a minute ago. */
async function plantDeadHoldersLock(dir: string): Promise<void> {
  const lock = path.join(dir, 'pipeline.lock');
  await fs.mkdir(lock);
  const longAgo = new Date(Date.now() - 60_000);
  await fs.utimes(lock, longAgo, longAgo);
}
