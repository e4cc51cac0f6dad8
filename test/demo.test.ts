/**
 * The demo's review desk (`--interactive`): the listen rule of `review serve`, and a reviewer of its own in a
 * temporary reviewers file, gone when the demo ends, so the environment's reviewers file never gains a reviewer.
 */
import assert from 'node:assert/strict';
import { existsSync, promises as fs, readdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runNode } from './helpers/processes';

describe('demo --interactive: its review desk', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'demo-desk-'));
    await fs.mkdir(path.join(dir, 'tmp'));
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  const demo = (listen: string) =>
    runNode('src/demo.js', ['--interactive'], {
      EPISODES_DATA_DIR: path.join(dir, 'data'),
      EPISODES_STORE_URL: '',
      EPISODES_REVIEWERS_FILE: path.join(dir, 'reviewers.json'),
      EPISODES_REVIEW_LISTEN: listen,
      EPISODES_REVIEW_PUBLIC_URL: '',
      EPISODES_DEMO_VENDOR_PORT: '0',
      // Nothing listens there: the demo serves its desk, then fails to reach Temporal and ends.
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      EPISODES_CONNECT_TIMEOUT_MS: '1000',
      TMPDIR: path.join(dir, 'tmp'),
    });

  it('refuses plain HTTP on a non-loopback address, as review serve does', async () => {
    const r = await demo('0.0.0.0:0');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /plain HTTP.*--insecure/);
  });

  it('keeps its reviewer in a temporary reviewers file, removed at exit; the environment’s file is untouched', async () => {
    const r = await demo('127.0.0.1:0');
    assert.equal(r.code, 1, 'no Temporal here');
    assert.match(r.stderr, /demo failed: .*127\.0\.0\.1:1/);
    assert.equal(existsSync(path.join(dir, 'reviewers.json')), false, 'EPISODES_REVIEWERS_FILE was written');
    assert.deepEqual(readdirSync(path.join(dir, 'tmp')), [], 'the temporary reviewers file is gone');
  });
});
