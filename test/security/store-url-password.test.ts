/**
 * A PostgreSQL password on the command line is visible to every local user in `ps`: `--store-url` and
 * `store copy --to` refuse a URL that carries one (InvalidInput, exit 2 or more), before connecting, and say where the
 * password goes instead. Proof (run by hand): without the check, the CLI goes on to connect (and fails differently).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../helpers/processes';

const WITH_PASSWORD = 'postgres://episodes:s3cret-pw@127.0.0.1:1/episodes';

describe('a PostgreSQL password on the command line is refused', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'store-url-'))));
  after(() => fs.rm(dir, { recursive: true, force: true }));

  for (const args of [
    ['--store-url', WITH_PASSWORD, 'verify'],
    ['store', 'copy', '--from', '.', '--to', WITH_PASSWORD],
  ]) {
    it(`${args
      .filter((a) => a !== WITH_PASSWORD)
      .slice(0, 2)
      .join(' ')} <url with a password>`, async () => {
      const run = await runCli(args, { EPISODES_DATA_DIR: dir });
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, /carries a password/);
      assert.match(run.stderr, /PGPASSWORD/);
      assert.doesNotMatch(run.stdout + run.stderr, /s3cret-pw/);
    });
  }

  it('the same URL without a password is not refused for that reason', async () => {
    const run = await runCli(['--store-url', 'postgres://episodes@127.0.0.1:1/episodes', 'verify'], {
      EPISODES_DATA_DIR: dir,
    });
    assert.doesNotMatch(run.stderr, /carries a password/);
  });
});
