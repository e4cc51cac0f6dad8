/**
 * Paths cannot leave the data dir, symlinks included. Ids only ever become paths after parsing (the hostile-input
 * tests cover that); here the data dir itself is booby-trapped: a directory or file inside it is a symlink to a place
 * outside. The store must refuse (StoreCorrupt, naming the path) and write nothing there, and a data dir that is
 * itself a symlink must keep working.
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { historyEntryOf } from '../../../src/activities/episode-lifecycle';
import { parseEpisodeId, type EpisodeId } from '../../../src/domain/episode-id';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { runCli, snapshotTree } from '../../../testkit/legacy-harness';
import { startTestVendor } from '../../../testkit/deps';
import { coverStep } from '../../../testkit/paid-step';

const W32 = '2026-W32';
const by = { kind: 'test', note: 'path-safety' } as const;
const corrupt = (e: unknown) => isPipelineError(e, ErrorType.StoreCorrupt);

describe('path safety: symlinks planted in the data dir', function () {
  this.timeout(60_000);
  let root: string;
  let dataDir: string;
  let outside: string;
  let store: FileEpisodeStore;
  let outsideBefore: Record<string, string>;

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'path-safety-'));
    dataDir = path.join(root, 'data');
    outside = path.join(root, 'outside');
    await fs.mkdir(outside);
    store = new FileEpisodeStore(dataDir, { timeoutMs: 5_000, staleMs: 2_000 });
    for (const key of ['a', 'b']) await allocateEpisodeOn(store, { allocationKey: key, weekId: W32 }, by);
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  const id = (raw: string): EpisodeId => parseEpisodeId(raw).episodeId;
  const alloc = (key: string) => allocateEpisodeOn(store, { allocationKey: key, weekId: W32 }, by);

  /** Moves `rel` (inside the data dir) to `outside/<name>` and leaves a symlink to it in its place. */
  async function divert(rel: string, name = path.basename(rel)): Promise<string> {
    const target = path.join(outside, name);
    await fs.rename(path.join(dataDir, rel), target);
    await fs.symlink(target, path.join(dataDir, rel));
    outsideBefore = await snapshotTree(outside, { mtimes: true });
    return target;
  }

  async function assertOutsideUntouched(): Promise<void> {
    assert.deepEqual(await snapshotTree(outside, { mtimes: true }), outsideBefore, 'something was written outside');
  }

  it('index/weeks → outside: allocation, list and the CLI refuse as StoreCorrupt, nothing written there', async () => {
    await divert('index/weeks');
    await assert.rejects(alloc('c'), corrupt);
    await assert.rejects(store.listEpisodes(), corrupt);
    const cli = await runCli(['--data-dir', dataDir, 'plan', '--key', 'd', '--week', W32]);
    assert.equal(cli.code, 1, cli.stderr);
    assert.match(cli.stderr, /^episodes: StoreCorrupt: [^\n]*\n$/);
    await assertOutsideUntouched();
  });

  it('index/keys → outside: a new key is refused before its key file is written there', async () => {
    await divert('index/keys');
    await assert.rejects(alloc('c'), corrupt);
    await assertOutsideUntouched();
  });

  it('index → outside, episodes → outside, history → outside: refused, nothing written there', async () => {
    for (const rel of ['index', 'episodes', 'history']) {
      await divert(rel);
      await assert.rejects(alloc(`c-${rel}`), corrupt, rel);
      await assertOutsideUntouched();
      await fs.rm(path.join(dataDir, rel));
      await fs.rename(path.join(outside, rel), path.join(dataDir, rel));
    }
  });

  it('episodes/<id> → outside: show, update and the roll-forward of a lost state refuse; nothing written there', async () => {
    const target = await divert(`episodes/${W32}-1`, 'ep');
    await assert.rejects(store.getEpisode(id(`${W32}-1`)), corrupt);
    await assert.rejects(
      store.updateEpisode(id(`${W32}-1`), (s) => ({ ...s, status: 'in_production' })),
      corrupt,
    );
    const show = await runCli(['--data-dir', dataDir, 'show', `${W32}-1`]);
    assert.equal(show.code, 1);
    assert.match(show.stderr, /^episodes: StoreCorrupt: /);
    // The newest episode's state is gone: the next allocation would roll it forward, into the symlink.
    await fs.rm(path.join(target, 'state.json'));
    outsideBefore = await snapshotTree(outside, { mtimes: true });
    await assert.rejects(alloc('c'), corrupt);
    await assertOutsideUntouched();
  });

  it('a dangling episodes/<id> symlink (target missing) is refused too; nothing is created at its target', async () => {
    await fs.rm(path.join(dataDir, 'episodes', `${W32}-1`), { recursive: true });
    await fs.symlink(path.join(outside, 'missing'), path.join(dataDir, 'episodes', `${W32}-1`));
    outsideBefore = await snapshotTree(outside, { mtimes: true });
    await assert.rejects(alloc('c'), corrupt); // rolls W32-1 forward
    await assertOutsideUntouched();
  });

  it('episodes/<id>/state.json → a file outside: the update refuses and the outside file is unchanged', async () => {
    await divert(`episodes/${W32}-0/state.json`, 'state.json');
    await assert.rejects(
      store.updateEpisode(id(`${W32}-0`), (s) => ({ ...s, status: 'in_production' })),
      corrupt,
    );
    await assertOutsideUntouched();
  });

  it('history → outside: appending a history entry refuses', async () => {
    await fs.mkdir(path.join(outside, 'history'));
    await fs.rm(path.join(dataDir, 'history'), { recursive: true });
    await fs.symlink(path.join(outside, 'history'), path.join(dataDir, 'history'));
    outsideBefore = await snapshotTree(outside, { mtimes: true });
    const state = await store.requireEpisode(id(`${W32}-0`));
    const entry = historyEntryOf({ ...state, status: 'completed', completed_at: new Date().toISOString() });
    await assert.rejects(store.appendHistory(entry), corrupt);
    await assert.rejects(store.listHistory(), corrupt);
    await assertOutsideUntouched();
  });

  it('a data dir that is itself a symlink is refused, naming the real path (data-dir-checks.ts)', async () => {
    const link = path.join(root, 'link-to-data');
    await fs.symlink(dataDir, link);
    await assert.rejects(
      allocateEpisodeOn(new FileEpisodeStore(link), { allocationKey: 'c', weekId: W32 }, by),
      (e) => isPipelineError(e, ErrorType.StorageFailure) && e.message.includes(`is a symlink (give the real path`),
    );
    assert.equal((await store.listEpisodes()).length, 2, 'nothing allocated through the link');
  });

  describe('media written by a paid step', () => {
    let vendor: VendorSimulator;
    beforeEach(async () => {
      vendor = await startTestVendor();
    });
    afterEach(() => vendor.close());

    it('episodes/<id>/media → outside: the artifact is not written there (StoreCorrupt); without the link it lands', async () => {
      const cover = coverStep(store, vendor, `${W32}-0`);
      await cover.submit();
      await fs.mkdir(path.join(outside, 'media'));
      await fs.symlink(path.join(outside, 'media'), path.join(dataDir, 'episodes', `${W32}-0`, 'media'));
      outsideBefore = await snapshotTree(outside, { mtimes: true });
      await assert.rejects(
        cover.complete(),
        (e) => e instanceof ApplicationFailure && e.type === ErrorType.StoreCorrupt,
      );
      await assertOutsideUntouched();
      await fs.rm(path.join(dataDir, 'episodes', `${W32}-0`, 'media'));
      const done = await cover.complete();
      const file = path.join(dataDir, 'episodes', `${W32}-0`, done.artifact.path);
      assert.equal((await fs.lstat(file)).isFile(), true);
    });
  });
});
