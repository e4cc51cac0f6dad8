/**
 * The demo's review desk (`--interactive`): the listen rule of `review serve`, and a reviewer of its own in a
 * temporary reviewers file, gone when the demo ends, so the environment's reviewers file never gains a reviewer.
 * And `--vendor fal`: the same episode with every kind at fal, against its simulator, on a real dev server.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, promises as fs, readdirSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { FileEpisodeStore } from '../../src/store/file-store';
import { runNode } from '../../testkit/processes';
import { createTestEnv } from '../../testkit/temporal';

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

describe('demo --vendor fal: the same episode at the fal simulator', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  let dir: string;
  before(async () => {
    env = await createTestEnv();
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'demo-fal-'));
  });
  after(async () => {
    await env?.teardown();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('completes the episode; its ledger is the simulator’s journal and its media are real files', async () => {
    const dataDir = path.join(dir, 'data');
    const r = await runNode('src/demo.js', ['--vendor', 'fal'], {
      EPISODES_DATA_DIR: dataDir,
      EPISODES_STORE_URL: '',
      EPISODES_DEMO_VENDOR_PORT: '0',
      EPISODES_METRICS_ADDRESS: '',
      EPISODES_REVIEW_PUBLIC_URL: '',
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: 'default',
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^outcome: +completed$/m);
    const store = new FileEpisodeStore(dataDir);
    const [state] = await store.listEpisodes();
    await store.close();
    assert.ok(state);
    assert.equal(state.status, 'completed');
    assert.ok(
      Object.values(state.steps).every((s) => s.vendor?.startsWith('fal:')),
      'every step went to fal with a model',
    );

    const printed = r.stdout.split(/^fal billing journal \(\d+ charges\):$/m)[1] ?? '';
    const journal = [...printed.matchAll(/^ {2}(\S+) {2}(\d+)\.(\d{2}) USD$/gm)].map(
      (m) => `${m[1]} ${Number(m[2]) * 100 + Number(m[3])}`,
    );
    const ledger = state.ledger.map((l) => `${l.remote_job_id.split('@').at(-1)} ${l.amount_cents}`);
    assert.equal(ledger.length, 3, 'video, cover, assembly');
    assert.deepEqual(ledger.sort(), journal.sort(), 'ledger = fal billing, charge for charge');

    const ffmpeg = spawnSync(process.env.EPISODES_SIM_FFMPEG ?? 'ffmpeg', ['-version']).status === 0;
    for (const [name, m] of Object.entries(state.media)) {
      const bytes: Buffer = readFileSync(path.join(store.mediaDir(state.episode_id), m.path));
      assert.equal(createHash('sha256').update(bytes).digest('hex'), m.sha256, `${name}: the recorded hash`);
      if (!ffmpeg) continue;
      if (name.startsWith('cover')) assert.equal(bytes.subarray(1, 4).toString('latin1'), 'PNG', `${name}: a PNG`);
      else assert.equal(bytes.subarray(4, 8).toString('latin1'), 'ftyp', `${name}: an MP4`);
    }
  });
});
