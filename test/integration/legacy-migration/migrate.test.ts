import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { episodeStateSchema, historyEntrySchema } from '../../../src/domain/episode-state';
import type { MigrationReport } from '../../../src/legacy-migration/migrate';
import { weekIndexSchema } from '../../../src/store/file-store';
import type { VerifyReport } from '../../../src/verify/verify-store';
import { LEGACY_WEEKS } from '../../../testkit/legacy-fixture';
import { legacyDirPerTest, readJson, runCliJson, sha256, snapshotTree } from '../../../testkit/legacy-harness';

interface LegacyJob {
  step: string;
  remote_job_id: string;
  status: string;
  submitted_at: string;
}
interface LegacyCost {
  step: string;
  remote_job_id: string;
  amount_cents: number;
  currency: string;
  recorded_at: string;
}

describe('episodes migrate-legacy: week-v1 → versioned ids', () => {
  const given = legacyDirPerTest();

  it('moves both weeks to <week>-0 keeping media bytes, every legacy field, jobs and costs; verify is clean', async () => {
    const inodes = new Map<string, number>();
    for (const week of LEGACY_WEEKS) {
      for (const m of Object.values(given.fixture.media[week])) {
        inodes.set(`${week}/${m.path}`, (await fs.stat(path.join(given.dataDir, 'episodes', week, m.path))).ino);
      }
    }

    const run = await runCliJson<MigrationReport>(['--data-dir', given.dataDir, 'migrate-legacy']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.json.status, 'migrated');
    assert.deepEqual(
      run.json.episodes.map((e) => e.episode_id),
      ['2026-W30-0', '2026-W31-0'],
    );

    for (const week of LEGACY_WEEKS) {
      const id = `${week}-0`;
      const dir = path.join(given.dataDir, 'episodes', id);
      const legacy = given.fixture.states[week] as {
        remote_jobs: LegacyJob[];
        costs: LegacyCost[];
        created_at: string;
      };
      await assert.rejects(fs.stat(path.join(given.dataDir, 'episodes', week)), { code: 'ENOENT' });

      // Media moved, never rewritten: same inode, same bytes, same hash.
      for (const m of Object.values(given.fixture.media[week])) {
        const file = path.join(dir, m.path);
        assert.equal((await fs.stat(file)).ino, inodes.get(`${week}/${m.path}`));
        const bytes = await fs.readFile(file);
        assert.ok(bytes.equals(m.bytes), `${file} bytes`);
        assert.equal(sha256(bytes), m.sha256);
      }
      assert.ok(
        (await fs.readFile(path.join(dir, given.fixture.extraFile.path))).equals(given.fixture.extraFile.bytes),
      );

      // The state parses with the current schema and keeps the whole legacy object, unknown fields included.
      const state = episodeStateSchema.parse(await readJson(path.join(dir, 'state.json')));
      assert.equal(state.episode_id, id);
      assert.equal(state.week_id, week);
      assert.equal(state.sequence, 0);
      assert.equal(state.allocation_key, null);
      assert.deepEqual(state.allocated_by, { kind: 'migration', from_id: week });
      assert.equal(state.status, 'completed');
      assert.equal(state.created_at, legacy.created_at);
      assert.deepEqual(state.legacy, given.fixture.states[week]);
      assert.equal(state.migration?.from_id, week);
      assert.equal(state.migration?.from_format, 'week-v1');
      assert.equal(state.migration?.source_state_sha256, sha256(given.fixture.stateBytes[week]));
      assert.equal(state.migration?.source_history_sha256, sha256(given.fixture.historyBytes));
      assert.ok(Number.isFinite(Date.parse(state.migration?.migrated_at ?? '')));
      for (const [name, m] of Object.entries(given.fixture.media[week])) {
        assert.deepEqual(state.media[name], { path: m.path, sha256: m.sha256, bytes: m.bytes.length });
      }

      // Remote jobs and costs: the same in number and content.
      const steps = Object.values(state.steps);
      assert.equal(steps.length, legacy.remote_jobs.length);
      for (const job of legacy.remote_jobs) {
        const record = steps.find((s) => s.remote_job_id === job.remote_job_id);
        assert.ok(record, job.remote_job_id);
        assert.equal(record.step, job.step);
        assert.equal(record.status, job.status);
        assert.equal(record.submitted_at, job.submitted_at);
        assert.equal(
          record.charged,
          legacy.costs.some((c) => c.remote_job_id === job.remote_job_id),
        );
      }
      assert.deepEqual(
        state.ledger.map(({ step, remote_job_id, amount_cents, currency, recorded_at }) => ({
          step,
          remote_job_id,
          amount_cents,
          currency,
          recorded_at,
        })),
        legacy.costs.map(({ step, remote_job_id, amount_cents, currency, recorded_at }) => ({
          step,
          remote_job_id,
          amount_cents,
          currency,
          recorded_at,
        })),
      );

      // History: current format, one entry per episode, with the legacy entry verbatim.
      const history = historyEntrySchema.parse(await readJson(path.join(given.dataDir, 'history', `${id}.json`)));
      const legacyHistory = given.fixture.history[week] as { total_cost_cents: number };
      assert.deepEqual(history.legacy, given.fixture.history[week]);
      assert.equal(history.total_cost_cents, legacyHistory.total_cost_cents);
      assert.deepEqual(history.ledger, state.ledger);
      assert.deepEqual(
        history.remote_jobs.map((j) => j.remote_job_id),
        legacy.remote_jobs.map((j) => j.remote_job_id),
      );

      // Entered in the week index, so that allocation counts it.
      const index = weekIndexSchema.parse(await readJson(path.join(given.dataDir, 'index', 'weeks', `${week}.json`)));
      assert.deepEqual(
        index.episodes.map((e) => [e.episode_id, e.allocation_key]),
        [[id, null]],
      );

      // The original state.json bytes, kept.
      const evidence = path.join(given.dataDir, 'migration-evidence', 'week-v1', 'episodes', week, 'state.json');
      assert.ok((await fs.readFile(evidence)).equals(given.fixture.stateBytes[week]));
    }
    await assert.rejects(fs.stat(path.join(given.dataDir, 'history.json')), { code: 'ENOENT' });
    const keptHistory = await fs.readFile(path.join(given.dataDir, 'migration-evidence', 'week-v1', 'history.json'));
    assert.ok(keptHistory.equals(given.fixture.historyBytes));

    const verify = await runCliJson<VerifyReport>(['--data-dir', given.dataDir, 'verify']);
    assert.equal(verify.code, 0, verify.stdout);
    assert.deepEqual(verify.json.problems, []);
    assert.equal(verify.json.media_checked, 4);
  });

  it('a second run reports nothing to migrate and changes nothing (whole-tree hash and mtimes)', async () => {
    assert.equal((await runCliJson<MigrationReport>(['--data-dir', given.dataDir, 'migrate-legacy'])).code, 0);
    const before = await snapshotTree(given.dataDir, { mtimes: true });
    const again = await runCliJson<MigrationReport>(['--data-dir', given.dataDir, 'migrate-legacy']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.json.status, 'nothing-to-migrate');
    assert.deepEqual(await snapshotTree(given.dataDir, { mtimes: true }), before);
  });

  it('--dry-run plans both weeks and changes nothing', async () => {
    const before = await snapshotTree(given.dataDir, { mtimes: true });
    const dry = await runCliJson<MigrationReport>(['--data-dir', given.dataDir, 'migrate-legacy', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.json.status, 'dry-run');
    assert.deepEqual(
      dry.json.episodes.map((e) => [e.from_id, e.episode_id, e.steps.length]),
      [
        ['2026-W30', '2026-W30-0', 5],
        ['2026-W31', '2026-W31-0', 5],
      ],
    );
    assert.deepEqual(await snapshotTree(given.dataDir, { mtimes: true }), before);
  });

  it('after migration, plan --key K --week 2026-W31 allocates 2026-W31-1', async () => {
    assert.equal((await runCliJson<MigrationReport>(['--data-dir', given.dataDir, 'migrate-legacy'])).code, 0);
    const plan = await runCliJson<{ episode_id: string; created: boolean }>([
      '--data-dir',
      given.dataDir,
      'plan',
      '--key',
      'K',
      '--week',
      '2026-W31',
    ]);
    assert.equal(plan.code, 0, plan.stderr);
    assert.equal(plan.json.episode_id, '2026-W31-1');
    assert.equal(plan.json.created, true);
    const verify = await runCliJson<VerifyReport>(['--data-dir', given.dataDir, 'verify']);
    assert.deepEqual(verify.json.problems, []);
  });
});
