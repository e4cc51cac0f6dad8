/**
 * No variable tells a production worker or CLI to skip a protection: the proofs that a protection matters build their
 * unsafe stores in test code (testkit/unsafe-stores.ts), never behind a switch in src/. Failpoints (which make a
 * process die or stall) stop the worker and the desk at start outside a test run.
 */
import assert from 'node:assert/strict';
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { openStore } from '../../../src/store/open-store';
import { collect, spawnNode } from '../../../testkit/processes';
import { sourceFiles } from '../../../testkit/source-files';
import { REPO_ROOT } from '../../../testkit/temporal';

/** The test-only switches src/ once read, set as a mistaken production environment would. */
const FORMER_SWITCHES = {
  EPISODES_UNSAFE_DISABLE_LOCK_FOR_TESTS: '1',
  EPISODES_UNSAFE_LOCK_FOR_TESTS: 'stale-only',
  EPISODES_UNSAFE_SPLIT_ALLOCATION_FOR_TESTS: '1',
  EPISODES_UNSAFE_IGNORE_MIGRATION_PREFLIGHT_FOR_TESTS: '1',
};

describe('no production switch turns a protection off', () => {
  it('src/ names no test-only switch (UNSAFE, ForTests, FOR_TESTS)', () => {
    const hits = sourceFiles(path.join(REPO_ROOT, 'src')).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${path.relative(REPO_ROOT, file)}:${i + 1}` }))
        .filter(({ line }) => /UNSAFE|ForTests|FOR_TESTS/.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    assert.deepEqual(hits, []);
  });

  it('the file store opened with the former switches set still takes its pipeline lock', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'no-switch-'));
    const saved = { ...process.env };
    Object.assign(process.env, FORMER_SWITCHES, { EPISODES_STORE_URL: '' });
    try {
      const store = openStore({ dataDir: dir });
      assert.ok(store instanceof FileEpisodeStore);
      const held = await store.lock.withLock(() => Promise.resolve(existsSync(path.join(dir, 'pipeline.lock'))));
      assert.equal(held, true, 'the critical section ran without the lock directory');
      await store.close();
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('EPISODES_FAILPOINTS outside a test run stops the worker and the desk at start', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'no-switch-'));
    // As a production host would start them: no test runner's marker.
    const env = {
      EPISODES_FAILPOINTS: 'submission.accepted=kill',
      EPISODES_TEST_PROCESS: '',
      EPISODES_DATA_DIR: dir,
      EPISODES_STORE_URL: '',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      EPISODES_CONNECT_TIMEOUT_MS: '1000',
    };
    try {
      for (const args of [['src/worker.js'], ['src/cli.js', 'review', 'serve', '--listen', '127.0.0.1:0']] as const) {
        const child = spawnNode(args[0], args.slice(1), env);
        const done = collect(child);
        // Should it start after all, it is stopped and the test fails below.
        child.stdout?.on('data', (d: Buffer) => d.toString().includes('review desk on') && child.kill('SIGTERM'));
        const r = await done;
        assert.notEqual(r.code, 0, `${args[0]} started`);
        assert.match(r.stderr, /EPISODES_FAILPOINTS is set: .* for test runs only/, r.stderr);
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
