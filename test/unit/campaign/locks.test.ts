import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FileLockReader, holderPid, workerSessionPid } from '../../../campaign/locks';

describe('campaign: who holds a store lock, from what anyone can check', () => {
  it('reads the holder pid of a file lock entry and of a worker session', () => {
    assert.equal(holderPid('holder-4242-123456-4026531836-0b1c2d3e-0000-4000-8000-000000000000'), 4242);
    assert.equal(holderPid('something-else'), undefined);
    assert.equal(workerSessionPid('episodes-worker-host-1-77'), 77);
    assert.equal(workerSessionPid('episodes-cli-verify-77'), undefined);
  });

  it('lists the pipeline lock and each episode lock of a file store with their holders', async () => {
    const data = mkdtempSync(path.join(os.tmpdir(), 'campaign-locks-'));
    try {
      const reader = new FileLockReader(() => data);
      assert.deepEqual(await reader.held(), []);
      mkdirSync(path.join(data, 'pipeline.lock', 'holder-11-1-2-0b1c2d3e-0000-4000-8000-000000000000'), {
        recursive: true,
      });
      mkdirSync(path.join(data, 'episodes', '2020-W01-0', 'episode.lock', 'holder-12-1-2-x'), { recursive: true });
      mkdirSync(path.join(data, 'episodes', '2020-W01-1'), { recursive: true });
      assert.deepEqual(await reader.held(), [
        { lock: 'pipeline', pid: 11 },
        { lock: 'episode 2020-W01-0', pid: 12 },
      ]);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  it("sees a holder at an allocation's commit point: key file committed, week index staged (fenced or not)", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'campaign-staged-'));
    try {
      const data = path.join(root, 'store');
      const reader = new FileLockReader(() => data);
      const fence = path.join(data, 'pipeline.lock', 'holder-11-1-2-x', 'c-0a1b');
      mkdirSync(fence, { recursive: true });
      const holder = { lock: 'pipeline', pid: 11 };
      const key = path.join(fence, `${'a'.repeat(64)}.json.11-0a1b2c.tmp`);
      writeFileSync(key, '');
      writeFileSync(path.join(fence, '2020-W51.json.11-0a1b2d.tmp'), '');
      assert.equal(reader.stagedCommit(holder), false, 'its key file not committed yet');
      rmSync(key);
      assert.equal(reader.stagedCommit(holder), true);
      assert.equal(reader.stagedCommit({ lock: 'pipeline', pid: 12 }), false, 'another pid');
      rmSync(path.join(data, 'pipeline.lock'), { recursive: true });
      // The test-only no-fence store stages beside the data dir.
      mkdirSync(`${data}.unsafe-staging`);
      writeFileSync(path.join(`${data}.unsafe-staging`, `_x_store_index_weeks_2020-W51.json.11-0a1b2e.tmp`), '');
      assert.equal(reader.stagedCommit(holder), true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
