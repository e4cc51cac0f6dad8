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
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import type { AllocOutcome } from '../helpers/alloc-client';
import { startTestVendor } from '../helpers/deps';
import { runNode } from '../helpers/processes';
import { assertInvariants, reportTable } from '../helpers/reliability';

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
      runNode('test/helpers/alloc-client.js', [String(at), JSON.stringify([{ key, week: '2026-W32' }])], {
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
          runNode(
            'test/helpers/alloc-client.js',
            [String(startAt), JSON.stringify([{ key: `k${i}`, week: '2026-W32' }])],
            {
              EPISODES_DATA_DIR: dir,
              EPISODES_STORE_URL: '',
              EPISODES_LOCK_STALE_MS: String(STALE_MS),
            },
          ),
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

/** What a SIGKILLed holder leaves: the lock directory, its heartbeat (mtime) stopped a minute ago. */
async function plantDeadHoldersLock(dir: string): Promise<void> {
  const lock = path.join(dir, 'pipeline.lock');
  await fs.mkdir(lock);
  const longAgo = new Date(Date.now() - 60_000);
  await fs.utimes(lock, longAgo, longAgo);
}
