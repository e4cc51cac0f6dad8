/**
 * A PostgreSQL password on the command line is visible to every local user in `ps`: `--store-url` and
 * `store copy --to` refuse a URL that carries one (InvalidInput, exit 2 or more), before connecting, and say where the
 * password goes instead. Proof (run by hand): without the check, the CLI goes on to connect (and fails differently).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isPipelineError } from '../../../src/domain/errors';
import { ErrorType } from '../../../src/domain/errors';
import { refusePasswordOnCommandLine } from '../../../src/store/postgres-url';
import { runCli } from '../../../testkit/processes';

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

  // Every form the driver (pg-connection-string) reads a password from, not only the WHATWG userinfo.
  for (const url of [
    'postgres://episodes@127.0.0.1:5432/episodes?password=s3cret-pw',
    'postgresql://episodes@127.0.0.1/episodes?sslmode=require&password=s3cret-pw',
    'postgres:///episodes?host=/var/run/postgresql&password=s3cret-pw',
    'socket:/var/run/postgresql?db=episodes&password=s3cret-pw',
    'postgres://127.0.0.1/episodes?sslpassword=s3cret-pw',
    'postgres://episodes:s3cret-pw@[::1/episodes',
  ]) {
    it(`refuses ${url.replace('s3cret-pw', '…')}`, () => {
      assert.throws(
        () => refusePasswordOnCommandLine(url, '--store-url'),
        (e) => isPipelineError(e, ErrorType.InvalidInput) && !e.message.includes('s3cret-pw'),
      );
    });
  }

  it('lets URLs without a password through', () => {
    for (const url of ['postgres://episodes@127.0.0.1/episodes?sslmode=require', 'postgres:///episodes?host=/tmp']) {
      assert.equal(refusePasswordOnCommandLine(url, '--store-url'), url);
    }
  });
});
