import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { episodeStateSchema } from '../../src/domain/episode-state';
import type { MigrationReport } from '../../src/legacy-migration/migrate';
import { weekIndexSchema } from '../../src/store/file-store';
import type { VerifyReport } from '../../src/verify/verify-store';
import { LEGACY_WEEKS, writeLegacyFixture } from '../../testkit/legacy-fixture';
import { readJson, runCli, runCliJson, snapshotTree, tempDir } from '../../testkit/legacy-harness';

/** Every failpoint of the migration, once per week for the per-week steps (`@n`: the n-th time it is reached). */
const ALL_POINTS: string[] = [
  'migration.preflight-passed',
  'migration.journal-written',
  'migration.history-evidence-written',
  ...['state-evidence-written', 'directory-moved', 'state-written', 'history-written', 'index-written'].flatMap(
    (step) => LEGACY_WEEKS.map((_, i) => `migration.${step}@${i + 1}`),
  ),
  'migration.legacy-history-removed',
];
/** `npm test`: the first week's commit point and the end; `npm run test:faults`: every point. */
const KILL_POINTS =
  process.env.EPISODES_FAULTS === 'full'
    ? ALL_POINTS
    : ['migration.journal-written', 'migration.state-written@1', 'migration.legacy-history-removed'];

describe('episodes migrate-legacy: killed at each step, then run again', () => {
  const dirs: string[] = [];
  let reference: Record<string, string>;

  const freshLegacyDir = async () => {
    const dir = await tempDir();
    dirs.push(dir);
    await writeLegacyFixture(dir);
    return dir;
  };

  before(async () => {
    const dir = await freshLegacyDir();
    const run = await runCli(['--data-dir', dir, 'migrate-legacy']);
    assert.equal(run.code, 0, run.stderr);
    reference = await snapshotTree(dir, { normalizeTimes: true });
  });
  after(async () => {
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
  });

  for (const point of KILL_POINTS) {
    it(`killed at ${point}: the re-run completes, nothing lost or duplicated`, async () => {
      const dir = await freshLegacyDir();
      const [name, hit] = point.split('@');
      const killed = await runCli(['--data-dir', dir, 'migrate-legacy'], {
        env: { EPISODES_FAILPOINTS: `${name}=kill${hit ? `@${hit}` : ''}` },
      });
      assert.equal(killed.signal, 'SIGKILL', `the failpoint was not reached: ${killed.stdout}${killed.stderr}`);

      const rerun = await runCliJson<MigrationReport>(['--data-dir', dir, 'migrate-legacy']);
      assert.equal(rerun.code, 0, rerun.stderr);
      if (point === 'migration.legacy-history-removed') {
        assert.equal(rerun.json.status, 'nothing-to-migrate');
      } else {
        assert.equal(rerun.json.status, 'migrated');
        // Killed after the journal was written: the re-run continues that migration (same plan, same migrated_at).
        assert.equal(rerun.json.resumed, point !== 'migration.preflight-passed');
      }

      // The same tree as an uninterrupted migration: no file lost, none duplicated, no leftover (lock, temp files).
      const tree = await snapshotTree(dir, { normalizeTimes: true });
      if (point === 'migration.legacy-history-removed') {
        // Killed after its last step, the run left its lock behind; a re-run with nothing to do takes no lock (so
        // it changes nothing) and the next locking command takes the stale lock over, as after any killed holder.
        assert.ok(tree['pipeline.lock']);
        // The lock directory and the holder's name in it (pipeline.lock/holder-...).
        for (const rel of Object.keys(tree)) if (rel.split(path.sep)[0] === 'pipeline.lock') delete tree[rel];
      }
      assert.deepEqual(tree, reference);
      for (const week of LEGACY_WEEKS) {
        const index = weekIndexSchema.parse(await readJson(path.join(dir, 'index', 'weeks', `${week}.json`)));
        assert.deepEqual(
          index.episodes.map((e) => e.episode_id),
          [`${week}-0`],
        );
        const state = episodeStateSchema.parse(await readJson(path.join(dir, 'episodes', `${week}-0`, 'state.json')));
        assert.equal(state.ledger.length, 2);
      }
      const third = await runCliJson<MigrationReport>(['--data-dir', dir, 'migrate-legacy']);
      assert.equal(third.json.status, 'nothing-to-migrate');
      const verify = await runCliJson<VerifyReport>(['--data-dir', dir, 'verify']);
      assert.equal(verify.code, 0, verify.stdout);
    });
  }
});
