import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import { parseWeekId } from '../../../src/domain/week-id';
import { migrateLegacyStore } from '../../../src/legacy-migration/migrate';
import { ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { ledgerTotals } from '../../../src/store/postgres-copy';
import { PostgresEpisodeStore } from '../../../src/store/postgres-store';
import { fileStoreSource } from '../../../src/verify/file-store-source';
import { ProblemCode } from '../../../src/domain/problem';
import { verifyStore, type VerifyReport } from '../../../src/verify/verify-store';
import { writeLegacyFixture } from '../../../testkit/legacy-fixture';
import { freshDatabase } from '../../../testkit/postgres';
import { runCli } from '../../../testkit/processes';

const by = { kind: 'test', note: 'store-copy' } as const;

/**
 * A URL as an operator gives it on the command line: without its password, which goes in PGPASSWORD (the CLI refuses
 * a password in `--to` / `--store-url`, where `ps` shows it).
 */
function commandLineUrl(url: string): { url: string; env: { PGPASSWORD: string } } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password);
  u.password = '';
  return { url: u.toString(), env: { PGPASSWORD: password } };
}
const tempDir = (prefix: string) => mkdtempSync(path.join(os.tmpdir(), prefix));
const counts = (r: VerifyReport) => ({
  ok: r.ok,
  episodes: r.episodes_checked,
  history: r.history_checked,
  media: r.media_checked,
});

describe('episodes store copy: a file store moved into PostgreSQL', function () {
  this.timeout(120_000);
  let dataDir: string;
  let mediaRoot: string;
  let url: string;
  let source: FileEpisodeStore;
  let target: PostgresEpisodeStore;
  const copy = (to: string, media: string) => {
    const target = commandLineUrl(to);
    return runCli(['store', 'copy', '--from', dataDir, '--to', target.url, '--media-dir', media, '--json'], target.env);
  };

  const verifyCli = async (store: string[], env: Record<string, string> = {}) => {
    const run = await runCli([...store, 'verify', '--json'], { EPISODES_MEDIA_DIR: mediaRoot, ...env });
    return { code: run.code, report: JSON.parse(run.stdout) as VerifyReport, stdout: run.stdout, stderr: run.stderr };
  };

  before(async () => {
    // A realistic store: two migrated legacy weeks (media, extra files, remote jobs, charges, history, evidence)
    // plus live episodes allocated since.
    dataDir = tempDir('copy-src-');
    mediaRoot = tempDir('copy-media-');
    await writeLegacyFixture(dataDir);
    source = new FileEpisodeStore(dataDir);
    assert.equal((await migrateLegacyStore(source)).status, 'migrated');
    for (const key of ['run-a', 'run-b']) {
      await allocateEpisodeOn(source, { allocationKey: key, weekId: '2026-W32' }, by);
    }
    url = await freshDatabase('copy');
    target = new PostgresEpisodeStore({ url, mediaDir: mediaRoot });
  });
  after(async () => {
    await target?.close();
    for (const dir of [dataDir, mediaRoot]) if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('copies every episode, history entry, charge and file; verify reports the same on the new store', async () => {
    const before = await verifyStore(fileStoreSource(dataDir));
    assert.ok(before.ok, JSON.stringify(before.problems));
    const episodes = await source.listEpisodes();
    const history = await source.listHistory();
    const totals = ledgerTotals(episodes);
    assert.ok(totals.charges > 0 && history.length > 0 && before.media_checked > 0, 'a fixture with something to lose');

    const run = await copy(url, mediaRoot);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout);
    assert.deepEqual(
      [report.episodes_written, report.history_written, report.ledger_cents, report.charges],
      [episodes.length, history.length, totals.ledger_cents, totals.charges],
    );

    assert.deepEqual(await target.listEpisodes(), episodes);
    assert.deepEqual(await target.listHistory(), history);
    assert.deepEqual(ledgerTotals(await target.listEpisodes()), totals);
    // `episodes verify`, as an operator runs it, on both stores.
    const verifyFile = await verifyCli(['--data-dir', dataDir]);
    const pg = commandLineUrl(url);
    const verifyPg = await verifyCli(['--store-url', pg.url], pg.env);
    assert.equal(verifyPg.code, 0, verifyPg.stdout + verifyPg.stderr);
    assert.match(verifyPg.report.store, /^postgres store at /);
    assert.deepEqual(counts(verifyPg.report), counts(verifyFile.report));
    assert.deepEqual(counts(verifyPg.report), counts(before));
  });

  it('carries the allocation keys over: a retried run gets its episode, a new run the next sequence', async () => {
    const alloc = (key: string) => allocateEpisodeOn(target, { allocationKey: key, weekId: '2026-W32' }, by);
    assert.deepEqual(await alloc('run-b'), {
      episodeId: '2026-W32-1',
      weekId: '2026-W32',
      sequence: 1,
      created: false,
    });
    assert.equal((await alloc('run-c')).episodeId, '2026-W32-2');
  });

  it('is safe to re-run: what is already there is left alone', async () => {
    const run = await copy(url, mediaRoot);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout);
    assert.deepEqual(
      [report.episodes_written, report.history_written, report.files_copied],
      [0, 0, 0],
      JSON.stringify(report),
    );
    assert.equal(report.episodes_unchanged, (await source.listEpisodes()).length);
    assert.ok(report.files_unchanged > 0);
  });

  it('refuses a target that holds different data, and copies nothing (one transaction)', async () => {
    const otherUrl = await freshDatabase('copy_conflict');
    const other = new PostgresEpisodeStore({ url: otherUrl, mediaDir: tempDir('copy-media-') });
    try {
      // Someone else's 2026-W32-0 (another key) is already there.
      await allocateEpisodeOn(other, { allocationKey: 'someone-else', weekId: parseWeekId('2026-W32') }, by);
      const run = await copy(otherUrl, other.mediaRoot);
      assert.equal(run.code, 1);
      assert.match(run.stderr, new RegExp(`^episodes: ${ErrorType.StoreCorrupt}: `));
      assert.deepEqual(
        (await other.listEpisodes()).map((e) => e.allocation_key),
        ['someone-else'],
      );
    } finally {
      await other.close();
      await fs.rm(other.mediaRoot, { recursive: true, force: true });
    }
  });

  it('refuses a source that is not a file store, as bad input', async () => {
    const target = commandLineUrl(url);
    const run = await runCli(['store', 'copy', '--from', path.join(dataDir, 'nope'), '--to', target.url], target.env);
    assert.equal(run.code, 2, run.stderr);
  });

  it('verify on the new store can fail: a media file changed after the copy is reported', async () => {
    const migrated = (await target.listEpisodes()).find((e) => Object.keys(e.media).length > 0);
    assert.ok(migrated);
    const [name, recorded] = Object.entries(migrated.media)[0]!;
    const file = path.join(target.mediaDir(parseEpisodeId(migrated.episode_id).episodeId), recorded.path);
    await fs.appendFile(file, 'tampered');
    const pg = commandLineUrl(url);
    const { code, report } = await verifyCli(['--store-url', pg.url], pg.env);
    assert.equal(code, 1);
    assert.equal(report.ok, false, name);
    assert.ok(
      report.problems.some(
        (p) =>
          p.episode_id === migrated.episode_id &&
          (p.code === ProblemCode.MediaSizeMismatch || p.code === ProblemCode.MediaHashMismatch),
      ),
      JSON.stringify(report.problems),
    );
  });
});
