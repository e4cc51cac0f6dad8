/**
 * Storage faults: a disk that fails (injected ENOSPC / EIO at every durable step of an allocation), a disk that is
 * really full (a small tmpfs), and a data dir that cannot be written (another user, a read-only mount). Each must be a
 * one-line, retryable `StorageFailure`, never a half-written file or a temp file left behind, and the retry must
 * succeed with the allocation invariants intact.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { allocateEpisodeOn } from '../../src/activities/allocation';
import { toApplicationFailure } from '../../src/activities/failures';
import { isPipelineError, PipelineError, ErrorType } from '../../src/domain/errors';
import { parseEpisodeId } from '../../src/domain/episode-id';
import { FileEpisodeStore } from '../../src/store/file-store';
import { runCli, snapshotTree } from '../../testkit/legacy-harness';
import { startTestVendor } from '../../testkit/deps';
import { collect } from '../../testkit/processes';
import { coverStep } from '../../testkit/paid-step';
import { assertAllocationInvariants, assertOnlyWholeStoreFiles, listTree } from '../../testkit/store-files';

const NOBODY = 65534;
const W32 = '2026-W32';
const by = { kind: 'test', note: 'storage-faults' } as const;

const isRoot = process.getuid?.() === 0;

function oneLineOfType(stderr: string, type: ErrorType): void {
  const lines = stderr.split('\n').filter((l) => l.length > 0);
  assert.equal(lines.length, 1, `one line on stderr: ${stderr}`);
  assert.ok(lines[0]!.startsWith(`episodes: ${type}: `), stderr);
}

async function plan(dataDir: string, key: string, env: NodeJS.ProcessEnv = {}) {
  return runCli(['--data-dir', dataDir, 'plan', '--key', key, '--week', W32, '--json'], { env });
}

/** Runs `mount` with these arguments; false when this machine does not allow it (not root, no CAP_SYS_ADMIN). */
function tryMount(args: string[]): boolean {
  try {
    execFileSync('mount', args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function unmount(dir: string): void {
  execFileSync('umount', [dir], { stdio: 'ignore' });
}

describe('storage faults', function () {
  this.timeout(120_000);
  let root: string;
  let dataDir: string;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'storage-faults-'));
    dataDir = path.join(root, 'data');
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('StorageFailure is retryable: the activity failure keeps its type and lets Temporal retry', () => {
    const failure = toApplicationFailure(new PipelineError(ErrorType.StorageFailure, 'disk full', { code: 'ENOSPC' }));
    assert.equal((failure as { type: string }).type, ErrorType.StorageFailure);
    assert.equal((failure as { nonRetryable: boolean }).nonRetryable, false);
  });

  describe('injected ENOSPC / EIO at each durable step of an allocation (`episodes plan`, a real process)', () => {
    // fs.write@n fails the n-th durable write half-way through its temp file: 1 = key index, 2 = week index (the
    // commit point), 3 = the episode's state. All three are staged and flushed before the commit, so a failure in
    // any of them commits nothing. The allocation.* points sit between the commits.
    const cases: { point: string; committed: boolean }[] = [
      { point: 'allocation.lock-taken=enospc', committed: false },
      { point: 'fs.write=enospc@1', committed: false },
      { point: 'allocation.decided=eio', committed: false },
      { point: 'allocation.key-written=enospc', committed: false },
      { point: 'fs.write=eio@2', committed: false },
      { point: 'allocation.index-written=enospc', committed: true },
      { point: 'fs.write=enospc@3', committed: false },
      { point: 'allocation.state-written=eio', committed: true },
    ];

    it('each is one line of StorageFailure (exit 1), leaves only whole files, and the retry gets the right episode', async () => {
      const first = await plan(dataDir, 'first');
      assert.equal(first.code, 0, first.stderr);
      for (const [i, { point, committed }] of cases.entries()) {
        const key = `key-${i}`;
        const expected = `${W32}-${i + 1}`;
        const failed = await plan(dataDir, key, { EPISODES_FAILPOINTS: point });
        assert.equal(failed.code, 1, `${point}: ${failed.stdout}${failed.stderr}`);
        oneLineOfType(failed.stderr, ErrorType.StorageFailure);
        assert.equal(failed.stdout, '', `${point}: no answer printed`);
        await assertOnlyWholeStoreFiles(dataDir);
        const listed = (await assertAllocationInvariants(dataDir)).map((e) => e.id);
        assert.equal(listed.includes(expected), committed, `${point}: committed? ${listed.join(',')}`);
        assert.equal(listed.length, committed ? i + 2 : i + 1, point);

        const retry = await plan(dataDir, key);
        assert.equal(retry.code, 0, `${point}: ${retry.stderr}`);
        assert.deepEqual(JSON.parse(retry.stdout), {
          episode_id: expected,
          week_id: W32,
          sequence: i + 1,
          created: !committed,
        });
        await assertOnlyWholeStoreFiles(dataDir);
        await fs.access(path.join(dataDir, 'episodes', expected, 'state.json')); // rolled forward
      }
      const all = await assertAllocationInvariants(dataDir);
      assert.deepEqual(
        all.map((e) => e.key),
        ['first', ...cases.map((_c, i) => `key-${i}`)],
      );
    });
  });

  describe('a really full disk (a 1 MiB tmpfs; needs mount, skipped where it is not allowed)', () => {
    let disk: string;
    let mounted = false;
    beforeEach(async function () {
      disk = path.join(root, 'disk');
      await fs.mkdir(disk);
      mounted = tryMount(['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', disk]);
      if (!mounted) this.skip();
      dataDir = path.join(disk, 'data');
    });
    afterEach(() => {
      if (mounted) unmount(disk);
      mounted = false;
    });

    /** Fills the disk with page-sized files, then frees `pages` of them. Returns a function that frees the rest. */
    async function fillLeaving(pages: number): Promise<() => Promise<void>> {
      const fill = path.join(disk, 'fill');
      await fs.mkdir(fill);
      const chunk = Buffer.alloc(4096, 1);
      let n = 0;
      for (; n < 1024; n++) {
        try {
          await fs.writeFile(path.join(fill, String(n)), chunk);
        } catch (e) {
          assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC');
          await fs.rm(path.join(fill, String(n)), { force: true });
          break;
        }
      }
      assert.ok(n < 1024 && n > pages, `filled ${n} pages`);
      for (let i = 0; i < pages; i++) await fs.rm(path.join(fill, String(i)));
      return () => fs.rm(fill, { recursive: true, force: true });
    }

    it('a commit-point write that runs out of space mid-file: StorageFailure, old index intact, retry contiguous', async () => {
      const store = new FileEpisodeStore(dataDir);
      // 30 episodes with a long note each: the week index spans several pages, so it cannot fit in what is left.
      const big = { kind: 'test', note: 'n'.repeat(200) } as const;
      for (let i = 0; i < 30; i++) await allocateEpisodeOn(store, { allocationKey: `k${i}`, weekId: W32 }, big);
      const weekFile = store.weekIndexPath(parseEpisodeId(`${W32}-0`).weekId);
      const before = await fs.readFile(weekFile);
      assert.ok(before.length > 3 * 4096, `week index is ${before.length} bytes`);
      const freeAll = await fillLeaving(2);

      await assert.rejects(
        allocateEpisodeOn(store, { allocationKey: 'late', weekId: W32 }, big),
        (e) => isPipelineError(e, ErrorType.StorageFailure) && e.details.code === 'ENOSPC' && e.retryable,
      );
      assert.deepEqual(await fs.readFile(weekFile), before, 'the commit point is untouched');
      await assertOnlyWholeStoreFiles(dataDir);
      assert.equal((await assertAllocationInvariants(dataDir)).length, 30);

      // The operator sees the same, in one line.
      const cli = await plan(dataDir, 'late-cli');
      assert.equal(cli.code, 1, cli.stdout + cli.stderr);
      oneLineOfType(cli.stderr, ErrorType.StorageFailure);
      await assertOnlyWholeStoreFiles(dataDir);

      await freeAll();
      const retry = await allocateEpisodeOn(store, { allocationKey: 'late', weekId: W32 }, big);
      assert.deepEqual(retry, { episodeId: `${W32}-30`, weekId: W32, sequence: 30, created: true });
      await assertOnlyWholeStoreFiles(dataDir);
      assert.equal((await assertAllocationInvariants(dataDir)).length, 31);
    });

    it('a state update that runs out of space: StorageFailure, the previous state intact, the retry lands', async () => {
      const store = new FileEpisodeStore(dataDir);
      const { episodeId } = await allocateEpisodeOn(store, { allocationKey: 'a', weekId: W32 }, by);
      const id = parseEpisodeId(episodeId).episodeId;
      const stateFile = store.statePath(id);
      const before = await fs.readFile(stateFile);
      const notes = 'please change the intro '.repeat(800); // ~19 KiB: more than the pages left
      const update = () =>
        store.updateEpisode(id, (s) => ({
          ...s,
          approval: { status: 'rework_requested', by: 'editor', at: new Date().toISOString(), notes },
        }));
      const freeAll = await fillLeaving(2);
      await assert.rejects(update(), (e) => isPipelineError(e, ErrorType.StorageFailure) && e.retryable);
      assert.deepEqual(await fs.readFile(stateFile), before);
      await assertOnlyWholeStoreFiles(dataDir);
      await freeAll();
      assert.equal((await update()).approval?.notes, notes);
      assert.equal((await store.requireEpisode(id)).approval?.notes, notes);
      await assertOnlyWholeStoreFiles(dataDir);
    });

    it('a paid artifact that does not fit: retryable StorageFailure, no media or charge recorded; the retry pays once', async () => {
      const vendor = await startTestVendor();
      try {
        const store = new FileEpisodeStore(dataDir);
        const { episodeId } = await allocateEpisodeOn(store, { allocationKey: 'a', weekId: W32 }, by);
        const id = parseEpisodeId(episodeId).episodeId;
        const cover = coverStep(store, vendor, id);
        await cover.submit();
        const freeAll = await fillLeaving(0);
        await assert.rejects(
          cover.complete(),
          (e) => e instanceof ApplicationFailure && e.type === ErrorType.StorageFailure && !e.nonRetryable,
        );
        const after = await store.requireEpisode(id);
        assert.deepEqual([after.ledger, after.media], [[], {}], 'nothing recorded for an artifact not saved');
        await assertOnlyWholeStoreFiles(dataDir, { media: true });
        assert.equal(
          (await listTree(dataDir)).some((e) => e.rel.includes('media') && e.kind === 'file'),
          false,
          'no media file, whole or partial',
        );
        await freeAll();
        const done = await cover.complete(); // what Temporal's retry does
        const saved = await fs.readFile(path.join(dataDir, 'episodes', id, done.artifact.path));
        assert.equal(saved.length, done.artifact.bytes);
        assert.equal((await store.requireEpisode(id)).ledger.length, 1);
        assert.equal(vendor.billing().length, 1, 'the vendor charged once');
        await assertOnlyWholeStoreFiles(dataDir, { media: true });
      } finally {
        await vendor.close();
      }
    });
  });

  describe('a data dir that cannot be written: plan refuses in one line, list and show still work', () => {
    async function seeded(dir: string): Promise<void> {
      for (const key of ['a', 'b']) {
        const r = await plan(dir, key);
        assert.equal(r.code, 0, r.stderr);
      }
    }

    async function readOnlyChecks(dir: string, spawnAs: { uid?: number; gid?: number }): Promise<void> {
      const before = await snapshotTree(dir, { mtimes: true });
      const run = (args: string[]) => runCli(['--data-dir', dir, ...args], { spawn: spawnAs });
      const refused = await run(['plan', '--key', 'c', '--week', W32]);
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      oneLineOfType(refused.stderr, ErrorType.StorageFailure);
      // A key that already has its episode needs no write, but still takes the lock, which is a write: refused too.
      const existing = await run(['plan', '--key', 'a', '--week', W32]);
      assert.equal(existing.code, 1, existing.stdout + existing.stderr);
      oneLineOfType(existing.stderr, ErrorType.StorageFailure);

      const list = await run(['list', '--json']);
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual(
        (JSON.parse(list.stdout) as { episode_id: string }[]).map((e) => e.episode_id),
        [`${W32}-0`, `${W32}-1`],
      );
      const show = await run(['show', `${W32}-1`, '--json']);
      assert.equal(show.code, 0, show.stderr);
      assert.equal((JSON.parse(show.stdout) as { allocation_key: string }).allocation_key, 'b');
      const missing = await run(['show', `${W32}-2`]);
      assert.equal(missing.code, 1);
      oneLineOfType(missing.stderr, ErrorType.EpisodeNotFound);
      assert.deepEqual(await snapshotTree(dir, { mtimes: true }), before, 'nothing written');
    }

    it('owned by another user without write permission (root ignores permission bits, so the CLI runs as nobody)', async () => {
      await seeded(dataDir);
      await fs.chmod(root, 0o755);
      const entries = await listTree(dataDir);
      const spawnAs = isRoot ? { uid: NOBODY, gid: NOBODY } : {};
      for (const p of [dataDir, ...entries.map((e) => path.join(dataDir, e.rel))]) {
        if (isRoot) await fs.lchown(p, NOBODY, NOBODY);
      }
      for (const e of entries.reverse()) await fs.chmod(path.join(dataDir, e.rel), e.kind === 'dir' ? 0o500 : 0o400);
      await fs.chmod(dataDir, 0o500);
      try {
        // The dir really is read-only for that user.
        const probe = spawn(process.execPath, ['-e', `require('fs').mkdirSync(${JSON.stringify(dataDir + '/x')})`], {
          ...spawnAs,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        assert.notEqual((await collect(probe)).code, 0, 'the data dir accepted a write');
        await readOnlyChecks(dataDir, spawnAs);
      } finally {
        for (const p of [dataDir, ...entries.map((e) => path.join(dataDir, e.rel))]) await fs.chmod(p, 0o700);
      }
    });

    it('on a read-only mount (EROFS even for root; needs mount, skipped where it is not allowed)', async function () {
      await seeded(dataDir);
      if (!tryMount(['--bind', dataDir, dataDir])) this.skip();
      try {
        assert.ok(tryMount(['-o', 'remount,ro,bind', dataDir]), 'remount read-only');
        await assert.rejects(fs.mkdir(path.join(dataDir, 'x')), (e) => (e as NodeJS.ErrnoException).code === 'EROFS');
        await readOnlyChecks(dataDir, {});
      } finally {
        unmount(dataDir);
      }
    });
  });
});
