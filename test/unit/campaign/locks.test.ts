import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
});
