/**
 * Owner-only permissions: every file the store, the CLI, the migration, the paid steps (media) and the vendor simulator
 * (its state file) create is 0600 and every directory 0700, even under a permissive umask (000), because the modes
 * are set explicitly rather than left to the umask.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { historyEntryOf } from '../../../src/activities/episode-lifecycle';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import { migrateLegacyStore } from '../../../src/legacy-migration/migrate';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { writeLegacyFixture } from '../../../testkit/legacy-fixture';
import { CLI } from '../../../testkit/legacy-harness';
import { startTestVendor } from '../../../testkit/deps';
import { collect } from '../../../testkit/processes';
import { coverStep } from '../../../testkit/paid-step';
import { listTree, type TreeEntry } from '../../../testkit/store-files';

const W32 = '2026-W32';
const by = { kind: 'test', note: 'permissions' } as const;
/** Literal, not the constants of durable-fs: a change there must fail here. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** Every entry (and `root` itself) is owner-only; returns how many were checked. */
async function assertOwnerOnly(root: string, entries?: TreeEntry[]): Promise<number> {
  const list = entries ?? (await listTree(root));
  const rootMode = (await fs.stat(root)).mode & 0o7777;
  assert.equal(rootMode.toString(8), DIR_MODE.toString(8), `${root} itself`);
  for (const e of list) {
    assert.notEqual(e.kind, 'symlink', e.rel);
    const want = e.kind === 'dir' ? DIR_MODE : FILE_MODE;
    assert.equal(e.mode.toString(8), want.toString(8), `${e.rel} (${e.kind})`);
  }
  return list.length;
}

/** Runs `fn` with umask 000, so that only explicit modes can make the result owner-only. */
async function underUmask0<T>(fn: () => Promise<T>): Promise<T> {
  const previous = process.umask(0);
  try {
    return await fn();
  } finally {
    process.umask(previous);
  }
}

describe('owner-only permissions of everything created', function () {
  this.timeout(60_000);
  let root: string;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'perms-'));
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('the store: data dir, indexes, states (allocated, updated, rolled forward), history', async () => {
    const dataDir = path.join(root, 'fresh', 'data');
    const store = new FileEpisodeStore(dataDir);
    await underUmask0(async () => {
      for (const key of ['a', 'b']) await allocateEpisodeOn(store, { allocationKey: key, weekId: W32 }, by);
      const id = parseEpisodeId(`${W32}-0`).episodeId;
      const done = await store.updateEpisode(id, (s) => ({
        ...s,
        status: 'completed',
        completed_at: new Date().toISOString(),
      }));
      await store.appendHistory(historyEntryOf(done));
      // A committed episode whose state was lost is rolled forward by the next allocation.
      await fs.rm(store.statePath(parseEpisodeId(`${W32}-1`).episodeId));
      await allocateEpisodeOn(store, { allocationKey: 'c', weekId: W32 }, by);
    });
    const entries = await listTree(dataDir);
    for (const expected of ['history/2026-W32-0.json', 'index/keys', 'episodes/2026-W32-1/state.json']) {
      assert.ok(
        entries.some((e) => e.rel === expected),
        expected,
      );
    }
    assert.ok((await assertOwnerOnly(dataDir, entries)) >= 12);
    // The parent the store had to create on the way is owner-only too.
    assert.equal(((await fs.stat(path.dirname(dataDir))).mode & 0o777).toString(8), '700');
  });

  it('the CLI binary under umask 000: `plan` creates only owner-only files and directories', async () => {
    const dataDir = path.join(root, 'cli-data');
    const child = spawn(
      'sh',
      [
        '-c',
        'umask 000 && exec "$0" "$@"',
        process.execPath,
        CLI,
        '--data-dir',
        dataDir,
        'plan',
        '--key',
        'k',
        '--week',
        W32,
      ],
      { env: { ...process.env, EPISODES_STORE_URL: '', EPISODES_FAILPOINTS: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const r = await collect(child);
    assert.equal(r.code, 0, r.stderr);
    // The umask really was 000 for that process: a plain file it would create is world-writable.
    const probe = await collect(
      spawn('sh', ['-c', `umask 000 && touch "$0"`, path.join(root, 'probe')], { stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    assert.equal(probe.code, 0);
    assert.equal(((await fs.stat(path.join(root, 'probe'))).mode & 0o777).toString(8), '666');
    assert.ok((await assertOwnerOnly(dataDir)) >= 8);
  });

  it('the migration: state, history, index, evidence and journal files it writes', async () => {
    const dataDir = path.join(root, 'legacy');
    await fs.mkdir(dataDir);
    await writeLegacyFixture(dataDir);
    const report = await underUmask0(() => migrateLegacyStore(new FileEpisodeStore(dataDir)));
    assert.equal(report.status, 'migrated');
    const written = (await listTree(dataDir)).filter(
      (e) =>
        e.rel === 'index' ||
        e.rel === 'history' ||
        e.rel === 'migration-evidence' ||
        ['index', 'history', 'migration-evidence'].includes(e.rel.split(path.sep)[0]!) ||
        e.rel.endsWith(`${path.sep}state.json`),
    );
    assert.ok(written.some((e) => e.rel.endsWith('journal.json')));
    assert.ok(written.filter((e) => e.rel.endsWith('state.json')).length >= 2);
    for (const e of written) {
      const want = e.kind === 'dir' ? DIR_MODE : FILE_MODE;
      assert.equal(e.mode.toString(8), want.toString(8), e.rel);
    }
  });

  it('paid steps: the media file and its directory; the vendor simulator: its state file and directory', async () => {
    const dataDir = path.join(root, 'data');
    const simDir = path.join(root, 'sim');
    const vendor = await underUmask0(() => startTestVendor({ stateFile: path.join(simDir, 'state.json') }));
    try {
      const store = new FileEpisodeStore(dataDir);
      await allocateEpisodeOn(store, { allocationKey: 'a', weekId: W32 }, by);
      const cover = coverStep(store, vendor, `${W32}-0`);
      const done = await underUmask0(async () => {
        await cover.submit();
        return cover.complete();
      });
      const media = path.join(dataDir, 'episodes', `${W32}-0`, done.artifact.path);
      assert.equal(((await fs.stat(media)).mode & 0o777).toString(8), '600');
      assert.equal(((await fs.stat(path.dirname(media))).mode & 0o777).toString(8), '700');
      assert.ok((await assertOwnerOnly(dataDir)) >= 8);
    } finally {
      await vendor.close();
    }
    assert.equal(await assertOwnerOnly(simDir), 1, 'the simulator state file');
  });
});
