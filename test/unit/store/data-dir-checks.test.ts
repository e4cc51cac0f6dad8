/**
 * What the file store's locks need from the data dir (src/store/data-dir-checks.ts): owner-only write access, a local
 * filesystem, and lock directories of mode 0700 whatever the umask. Proofs (run by hand): without the mode check the
 * group-writable test allocates; without the statfs check the NFS/FUSE test passes the store; with proper-lockfile's
 * own mkdir (umask mode) the lock directory is 0755.
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  promises as fs,
  statSync,
  symlinkSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';
import { checkDataDir } from '../../../src/store/data-dir-checks';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { PostgresEpisodeStore } from '../../../src/store/postgres-store';

const by = { kind: 'test', note: 'data-dir-checks' } as const;
const W32 = parseWeekId('2026-W32');

describe('the data dir the file store accepts', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'data-dir-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  for (const mode of [0o770, 0o707, 0o777]) {
    it(`refuses mode ${mode.toString(8)} (group or others can write) with one line naming it, and writes nothing`, async () => {
      chmodSync(dir, mode);
      await assert.rejects(
        allocateEpisodeOn(new FileEpisodeStore(dir), { allocationKey: 'k', weekId: W32 }, by),
        (e) =>
          isPipelineError(e) &&
          e.type === ErrorType.StorageFailure &&
          e.message.includes(`mode 0${mode.toString(8)}`) &&
          !e.message.includes('\n'),
      );
      assert.deepEqual(await fs.readdir(dir), []);
    });
  }

  it('accepts 0700 and 0755 (others may read, not write)', async () => {
    chmodSync(dir, 0o755);
    assert.equal(
      (await allocateEpisodeOn(new FileEpisodeStore(dir), { allocationKey: 'k', weekId: W32 }, by)).sequence,
      0,
    );
  });

  it('refuses NFS, SMB, CIFS, FUSE (and so virtiofs) and vboxsf by their statfs type, naming PostgreSQL; accepts this local disk', async () => {
    for (const [type, name] of [
      [0x6969, 'NFS'],
      [0x517b, 'SMB'],
      [0xff534d42, 'CIFS'],
      [0x65735546, 'FUSE'],
      [0x786f4256, 'vboxsf'],
    ] as const) {
      await assert.rejects(
        checkDataDir(dir, () => Promise.resolve({ type })),
        (e) => isPipelineError(e) && e.message.includes(`on ${name}`) && e.message.includes('EPISODES_STORE_URL'),
      );
    }
    await checkDataDir(dir); // the real statfs of the test's own disk
  });

  const refusedAt = (type: ErrorType, folder: string, problem: RegExp) => (e: unknown) =>
    isPipelineError(e, type) &&
    e.message.includes(`: ${folder} `) &&
    problem.test(e.message) &&
    !e.message.includes('\n');

  it('refuses a data dir below a folder others may write (unless sticky, as /tmp), or reached through a symlink', async () => {
    const open = path.join(dir, 'open');
    mkdirSync(path.join(open, 'data'), { recursive: true });
    chmodSync(open, 0o777);
    const store = (d: string) => allocateEpisodeOn(new FileEpisodeStore(d), { allocationKey: 'k', weekId: W32 }, by);
    await assert.rejects(store(path.join(open, 'data')), refusedAt(ErrorType.StorageFailure, open, /chmod go-w/));
    chmodSync(open, 0o1777);
    assert.equal((await store(path.join(open, 'data'))).sequence, 0, 'sticky: others cannot rename what is not theirs');

    const real = path.join(dir, 'real');
    mkdirSync(real);
    symlinkSync(real, path.join(dir, 'link'));
    const viaLink = path.join(dir, 'link', 'data');
    await assert.rejects(store(viaLink), refusedAt(ErrorType.StorageFailure, path.join(dir, 'link'), /is a symlink/));
    assert.equal(existsSync(path.join(real, 'data', 'episodes')), false, 'nothing written through the link');
  });

  it('refuses a data dir below a folder of another user', async function () {
    if (process.geteuid?.() !== 0) return this.skip(); // only root can give a folder away (CI runs as root)
    const theirs = path.join(dir, 'theirs');
    mkdirSync(path.join(theirs, 'data'), { recursive: true });
    chownSync(theirs, 65534, 65534);
    await assert.rejects(
      allocateEpisodeOn(new FileEpisodeStore(path.join(theirs, 'data')), { allocationKey: 'k', weekId: W32 }, by),
      refusedAt(ErrorType.StorageFailure, theirs, /owned by uid 65534/),
    );
  });

  it("the PostgreSQL store's media dir (EPISODES_MEDIA_DIR): the same checks, before any connection", async () => {
    // Nothing listens on port 1: a refusal here comes from the media dir, before the database is reached.
    const url = 'postgres://episodes@127.0.0.1:1/episodes';
    const media = path.join(dir, 'media');
    mkdirSync(media);
    chmodSync(media, 0o777);
    const open = new PostgresEpisodeStore({ url, mediaDir: media });
    await assert.rejects(open.ready(), refusedAt(ErrorType.InvalidState, media, /chmod go-w/));
    await open.close();
    symlinkSync(media, path.join(dir, 'media-link'));
    chmodSync(media, 0o700);
    const linked = new PostgresEpisodeStore({ url, mediaDir: path.join(dir, 'media-link') });
    await assert.rejects(linked.ready(), refusedAt(ErrorType.InvalidState, path.join(dir, 'media-link'), /symlink/));
    await linked.close();
  });

  it('creates lock directories 0700 under umask 000', async () => {
    const store = new FileEpisodeStore(dir);
    await allocateEpisodeOn(store, { allocationKey: 'k', weekId: W32 }, by); // the layout exists
    const old = process.umask(0);
    try {
      const modes = await store.lock.withLock(() => {
        const lock = path.join(dir, 'pipeline.lock');
        return fs
          .readdir(lock)
          .then((entries) => [lock, ...entries.map((e) => path.join(lock, e))].map((p) => statSync(p).mode & 0o777));
      });
      assert.deepEqual(modes, [0o700, 0o700]);
    } finally {
      process.umask(old);
    }
  });
});
