import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { applyMigration } from '../../../src/legacy-migration/apply';
import type { MigrationReport } from '../../../src/legacy-migration/migrate';
import { planMigration } from '../../../src/legacy-migration/plan';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { ProblemCode, type Problem } from '../../../src/domain/problem';
import type { VerifyReport } from '../../../src/verify/verify-store';
import type { LegacyFixture } from '../../../testkit/legacy-fixture';
import { legacyDirPerTest, runCli, runCliJson, snapshotTree } from '../../../testkit/legacy-harness';

interface Damage {
  title: string;
  /** Damages the fixture; returns the file the report must name. */
  apply(dataDir: string, fixture: LegacyFixture): Promise<string>;
  code: ProblemCode;
}

const DAMAGES: Damage[] = [
  {
    title: 'a tampered media file (same size, one byte flipped)',
    code: ProblemCode.MediaHashMismatch,
    async apply(dataDir, fixture) {
      const file = path.join(dataDir, 'episodes', '2026-W31', fixture.media['2026-W31'].video.path);
      const bytes = Buffer.from(fixture.media['2026-W31'].video.bytes);
      bytes[4096] = (bytes[4096] ?? 0) ^ 0xff;
      await fs.writeFile(file, bytes);
      return file;
    },
  },
  {
    title: 'a truncated media file',
    code: ProblemCode.MediaSizeMismatch,
    async apply(dataDir, fixture) {
      const file = path.join(dataDir, 'episodes', '2026-W30', fixture.media['2026-W30'].cover.path);
      await fs.truncate(file, 1000);
      return file;
    },
  },
  {
    title: 'a history.json that disagrees with a state (total)',
    code: ProblemCode.LegacyHistoryMismatch,
    async apply(dataDir, fixture) {
      const file = path.join(dataDir, 'history.json');
      const history = structuredClone(fixture.history) as Record<string, { total_cost_cents: number }>;
      history['2026-W30']!.total_cost_cents += 100;
      await fs.writeFile(file, JSON.stringify(history, null, '\t'));
      return file;
    },
  },
  {
    title: 'a malformed legacy state (costs is not a list)',
    code: ProblemCode.LegacyStateInvalid,
    async apply(dataDir, fixture) {
      const file = path.join(dataDir, 'episodes', '2026-W31', 'state.json');
      await fs.writeFile(file, JSON.stringify({ ...fixture.states['2026-W31'], costs: 'see invoice' }));
      return file;
    },
  },
  {
    title: 'a legacy state that is not JSON',
    code: ProblemCode.LegacyStateInvalid,
    async apply(dataDir, fixture) {
      const file = path.join(dataDir, 'episodes', '2026-W30', 'state.json');
      await fs.writeFile(file, fixture.stateBytes['2026-W30'].subarray(0, 200));
      return file;
    },
  },
];

const names = (problems: Problem[], code: ProblemCode, file: string) =>
  problems.some((p) => p.code === code && p.file === file);

describe('episodes migrate-legacy: pre-flight refusals change nothing; verify reports the same', () => {
  const given = legacyDirPerTest();

  for (const damage of DAMAGES) {
    it(`${damage.title}: migrate refuses naming the file, tree untouched; verify reports it`, async () => {
      const file = await damage.apply(given.dataDir, given.fixture);
      const before = await snapshotTree(given.dataDir, { mtimes: true });

      for (const args of [['migrate-legacy'], ['migrate-legacy', '--dry-run']]) {
        const run = await runCli(['--data-dir', given.dataDir, ...args, '--json']);
        // First: nothing on disk changed (content, modes, mtimes), whatever the run printed.
        assert.deepEqual(await snapshotTree(given.dataDir, { mtimes: true }), before);
        assert.equal(run.code, 1, run.stderr);
        const report = JSON.parse(run.stdout) as MigrationReport;
        assert.equal(report.status, 'refused');
        assert.ok(names(report.problems, damage.code, file), JSON.stringify(report.problems, null, 2));
      }

      const verify = await runCliJson<VerifyReport>(['--data-dir', given.dataDir, 'verify']);
      assert.equal(verify.code, 1);
      assert.ok(names(verify.json.problems, damage.code, file), JSON.stringify(verify.json.problems, null, 2));
      assert.deepEqual(await snapshotTree(given.dataDir, { mtimes: true }), before);
    });
  }

  it('the untouched-tree check catches a migration that ignores its pre-flight (test-only: plan applied anyway)', async () => {
    await DAMAGES[0]!.apply(given.dataDir, given.fixture);
    const before = await snapshotTree(given.dataDir, { mtimes: true });
    // Without the pre-flight the sound week is migrated before anything notices the tampered one: what
    // migrateLegacyStore does, minus its refusal.
    const store = new FileEpisodeStore(given.dataDir);
    const planned = await planMigration(store, () => new Date());
    assert.ok(planned.kind === 'planned' && planned.problems.length > 0, 'the damage is found');
    await store.lock.withLock((guard) => applyMigration(store, planned.plan, guard)).catch(() => undefined);
    assert.notDeepEqual(await snapshotTree(given.dataDir, { mtimes: true }), before);
  });
});
