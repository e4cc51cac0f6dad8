import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { runNode } from '../../../testkit/processes';
import { snapshotTree } from '../../../testkit/tree';
import { describeStoreContract } from '../../../testkit/store-contract';

function tempDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'episodes-'));
}

describeStoreContract(
  'file store',
  () => {
    const dir = tempDir();
    return Promise.resolve({
      store: new FileEpisodeStore(dir),
      childEnv: { EPISODES_DATA_DIR: dir, EPISODES_STORE_URL: '' },
      cleanup: () => fs.rm(dir, { recursive: true, force: true }),
    });
  },
  { lockSwitchBreaksIt: true },
);

describe('file store specifics', function () {
  this.timeout(60_000);
  const by = { kind: 'test', note: 'file-store' } as const;
  const W32 = parseWeekId('2026-W32');
  let dir: string;
  let store: FileEpisodeStore;
  beforeEach(() => {
    dir = tempDir();
    store = new FileEpisodeStore(dir, { timeoutMs: 10_000, staleMs: 2_000 });
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));
  const alloc = (key: string, week: string = W32) => allocateEpisodeOn(store, { allocationKey: key, weekId: week }, by);

  it('lays out one directory per episode with its state, and owner-only files', async () => {
    await alloc('run-a');
    const state = path.join(dir, 'episodes', '2026-W32-0', 'state.json');
    const st = await fs.stat(state);
    assert.equal(st.mode & 0o077, 0, 'state.json must not be readable by group/others');
    assert.equal(JSON.parse(await fs.readFile(state, 'utf8')).episode_id, '2026-W32-0');
    assert.equal(await fs.readdir(path.join(dir)).then((n) => n.includes('pipeline.lock')), false, 'lock released');
  });

  it('does not recreate a layout that vanished under a running store (an unmounted volume): no sequence 0 again', async () => {
    assert.equal((await alloc('run-a')).episodeId, '2026-W32-0');
    // The volume goes away: the mount point is left, empty.
    await fs.rename(dir, `${dir}.volume`);
    await fs.mkdir(dir);
    await assert.rejects(alloc('run-b'), (e) => {
      assert.ok(isPipelineError(e, ErrorType.StorageFailure), String(e));
      assert.match(e.message, /has disappeared/);
      return true;
    });
    assert.deepEqual(await fs.readdir(dir), [], 'nothing created in the empty mount point');
    // The volume comes back: the same store goes on where it was.
    await fs.rmdir(dir);
    await fs.rename(`${dir}.volume`, dir);
    assert.equal((await alloc('run-b')).episodeId, '2026-W32-1');
  });

  it('refuses an ambiguous key (two episodes carry it) and writes nothing', async () => {
    await alloc('run-a');
    await alloc('run-b');
    // Damage the store the way a bad manual edit would: both episodes now claim key run-a.
    const indexFile = store.weekIndexPath(W32);
    const index = JSON.parse(await fs.readFile(indexFile, 'utf8'));
    index.episodes[1].allocation_key = 'run-a';
    await fs.writeFile(indexFile, JSON.stringify(index));
    const statePath = path.join(dir, 'episodes', '2026-W32-1', 'state.json');
    const state = JSON.parse(await fs.readFile(statePath, 'utf8'));
    await fs.writeFile(statePath, JSON.stringify({ ...state, allocation_key: 'run-a' }));
    const before = await snapshotTree(dir);
    await assert.rejects(alloc('run-a'), (e) => {
      assert.ok(isPipelineError(e, ErrorType.AmbiguousAllocationKey));
      assert.deepEqual((e.details.episodes as string[]).sort(), ['2026-W32-0', '2026-W32-1']);
      return true;
    });
    assert.deepEqual(await snapshotTree(dir), before);
  });

  it('refuses a cross-week key with nothing written (content and mtimes)', async () => {
    await alloc('run-a');
    const before = await snapshotTree(dir);
    await assert.rejects(alloc('run-a', '2026-W33'), (e) => isPipelineError(e, ErrorType.AllocationKeyCrossesWeek));
    assert.deepEqual(await snapshotTree(dir), before);
  });

  it('reports a corrupt or unknown file by name and overwrites nothing', async () => {
    await alloc('run-a');
    const indexFile = store.weekIndexPath(W32);
    await fs.writeFile(indexFile, '{"schema":"week-index/v9"}');
    const before = await snapshotTree(dir);
    await assert.rejects(alloc('run-b'), (e) => {
      assert.ok(isPipelineError(e, ErrorType.StoreCorrupt));
      assert.equal(e.details.file, indexFile);
      return true;
    });
    assert.deepEqual(await snapshotTree(dir), before);
  });

  it('refuses two episodes claiming one week+sequence as StoreCorrupt', async () => {
    await alloc('run-a');
    const indexFile = store.weekIndexPath(W32);
    const index = JSON.parse(await fs.readFile(indexFile, 'utf8'));
    const original = index.episodes[0];
    for (const twin of [original, { ...original, episode_id: '2026-W32-7', allocation_key: 'run-z' }]) {
      index.episodes = [original, twin];
      await fs.writeFile(indexFile, JSON.stringify(index));
      const before = await snapshotTree(dir);
      await assert.rejects(alloc('run-b'), (e) => isPipelineError(e, ErrorType.StoreCorrupt));
      assert.deepEqual(await snapshotTree(dir), before);
    }
  });

  it('an episode lock has its own failpoint: allocation.lock-taken fires for the pipeline lock only', async () => {
    const { episodeId } = await alloc('run-a');
    const update = (points: string) =>
      runNode('testkit/episode-update-client.js', [episodeId], {
        EPISODES_DATA_DIR: dir,
        EPISODES_FAILPOINTS: points,
      });
    assert.equal((await update('allocation.lock-taken=throw')).stdout, 'ok');
    assert.match((await update('episode.lock-taken=throw')).stdout, /injected failure at failpoint episode.lock-taken/);
  });

  describe('a process killed at each durable step of an allocation', () => {
    const childEnv = () => ({ EPISODES_DATA_DIR: dir, EPISODES_STORE_URL: '', EPISODES_LOCK_STALE_MS: '2000' });
    const killAt = async (point: string, key: string, week: string = W32) => {
      const r = await runNode('testkit/alloc-client.js', ['0', JSON.stringify([{ key, week }])], {
        ...childEnv(),
        EPISODES_FAILPOINTS: `${point}=kill`,
      });
      assert.equal(r.signal, 'SIGKILL', `expected the child to die at ${point}: ${r.stderr}`);
    };

    it('lock taken: the lock is left behind, and taken over at once, the kernel showing its holder gone', async () => {
      await killAt('allocation.lock-taken', 'run-a');
      assert.ok(await fs.stat(path.join(dir, 'pipeline.lock')), 'the dead holder left its lock');
      // Stale only after a minute, and a 10 s timeout: only the proof of the holder's death lets this one in.
      const patient = new FileEpisodeStore(dir, { timeoutMs: 10_000, staleMs: 60_000 });
      const r = await allocateEpisodeOn(patient, { allocationKey: 'run-a', weekId: W32 }, by);
      assert.equal(r.episodeId, '2026-W32-0');
      await assert.rejects(fs.stat(path.join(dir, 'pipeline.lock')));
    });

    it('lock taken, with the death proof switched off: taken over only once stale', async () => {
      await killAt('allocation.lock-taken', 'run-a');
      const staleOnly = new FileEpisodeStore(dir, { timeoutMs: 10_000, staleMs: 2_000, holderProvenDead: () => false });
      const t0 = Date.now();
      assert.equal(
        (await allocateEpisodeOn(staleOnly, { allocationKey: 'run-a', weekId: W32 }, by)).episodeId,
        '2026-W32-0',
      );
      assert.ok(Date.now() - t0 >= 1000, 'waited for the stale lock rather than ignoring it');
    });

    for (const point of ['allocation.decided', 'allocation.key-written']) {
      it(`${point} (before the commit): the run never got an answer; its retry, and others, proceed cleanly`, async () => {
        await killAt(point, 'run-a');
        assert.equal((await alloc('run-b')).episodeId, '2026-W32-0');
        // The uncommitted leftover does not pin run-a to a week it never got.
        assert.equal((await alloc('run-a', '2026-W33')).episodeId, '2026-W33-0');
        assert.equal((await store.listEpisodes()).length, 2);
      });
    }

    it('the temp files a killed allocation leaves (in its lock) go with its lock; those of an older version are swept', async () => {
      await killAt('allocation.key-written', 'run-a');
      const inLock = async () =>
        (await fs.readdir(path.join(dir, 'pipeline.lock'), { recursive: true })).filter((n) => n.endsWith('.tmp'));
      assert.equal((await inLock()).length, 2, "the week index and the state were staged in the holder's fence");
      const weeks = path.join(dir, 'index', 'weeks');
      // An earlier version staged beside the target: such a leftover is swept by the next allocation.
      await fs.writeFile(path.join(weeks, '2026-W32.json.123-abc.tmp'), '{');
      assert.equal((await alloc('run-b')).episodeId, '2026-W32-0');
      await assert.rejects(fs.stat(path.join(dir, 'pipeline.lock')), { code: 'ENOENT' });
      assert.deepEqual(
        (await fs.readdir(weeks)).filter((n) => n.endsWith('.tmp')),
        [],
      );
    });

    for (const point of ['allocation.index-written', 'allocation.state-written']) {
      it(`${point} (after the commit): the retry gets the same episode, exactly one stored`, async () => {
        await killAt(point, 'run-a');
        const again = await alloc('run-a');
        assert.deepEqual(again, { episodeId: '2026-W32-0', weekId: W32, sequence: 0, created: false });
        assert.equal((await alloc('run-b')).episodeId, '2026-W32-1');
        await assert.rejects(alloc('run-a', '2026-W33'), (e) => isPipelineError(e, ErrorType.AllocationKeyCrossesWeek));
        const states = await store.listEpisodes();
        assert.deepEqual(
          states.map((s) => s.episode_id),
          ['2026-W32-0', '2026-W32-1'],
        );
        await fs.stat(path.join(dir, 'episodes', '2026-W32-0', 'state.json'));
      });
    }
  });
});
