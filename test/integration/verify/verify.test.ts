import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { EXIT_USAGE, exitCodeFor } from '../../../src/cli';
import { verifyReportLines, verifySourceFor } from '../../../src/cli/verify-commands';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import { episodeStateSchema, historyEntrySchema } from '../../../src/domain/episode-state';
import { migrateLegacyStore } from '../../../src/legacy-migration/migrate';
import { cliAllocatedBy, FileEpisodeStore, weekIndexSchema } from '../../../src/store/file-store';
import { openStore } from '../../../src/store/open-store';
import { ProblemCode, type Problem } from '../../../src/domain/problem';
import { verifyStore, type VerifyReport } from '../../../src/verify/verify-store';
import { collect } from '../../../testkit/processes';
import { legacyDirPerTest, runCli, runCliJson, snapshotTree, tempDir } from '../../../testkit/legacy-harness';

const NOBODY = 65534;

const has = (problems: Problem[], code: ProblemCode, file?: string) =>
  problems.some((p) => p.code === code && (file === undefined || p.file === file));

/** Parses a stored file with its schema, changes it, writes it back (behind the store's back). */
async function edit<S extends z.ZodType>(file: string, schema: S, change: (value: z.output<S>) => void): Promise<void> {
  const value = schema.parse(JSON.parse(await fs.readFile(file, 'utf8')));
  change(value);
  await fs.writeFile(file, JSON.stringify(value, null, 2));
}

/**
 * In process, what `episodes --data-dir <dir> verify [ids...]` runs: the same store, source and verifyStore. Its
 * exit code is the report's `ok` (0 when true, 1 when false) or, for bad usage, exitCodeFor of what it throws.
 */
async function verify(dataDir: string, ids: string[] = []): Promise<VerifyReport> {
  const episodeIds = ids.map((raw) => parseEpisodeId(raw).episodeId);
  const store = openStore({ dataDir });
  try {
    return await verifyStore(verifySourceFor(store, dataDir), { episodeIds });
  } finally {
    await store.close();
  }
}

/** The text form's lines, as the CLI test splits its stdout. */
const textLines = (report: VerifyReport) => verifyReportLines(report).join('\n').trim().split('\n');

/** A migrated store with two more episodes allocated the normal way, as `episodes plan` does (keyed, so key files exist too). */
async function migratedStore(dataDir: string): Promise<void> {
  const report = await migrateLegacyStore(new FileEpisodeStore(dataDir));
  assert.equal(report.status, 'migrated');
  const store = openStore({ dataDir });
  try {
    for (const [key, week] of [
      ['weekly-media-2026-08-03', '2026-W32'],
      ['weekly-media-2026-07-27-extra', '2026-W31'],
    ]) {
      await allocateEpisodeOn(store, { allocationKey: key!, weekId: week! }, cliAllocatedBy());
    }
  } finally {
    await store.close();
  }
}

describe('episodes verify', () => {
  const given = legacyDirPerTest();
  const paths = () => {
    const d = given.dataDir;
    return {
      state: (id: string) => path.join(d, 'episodes', id, 'state.json'),
      history: (id: string) => path.join(d, 'history', `${id}.json`),
      media: (id: string, rel: string) => path.join(d, 'episodes', id, rel),
      index: (week: string) => path.join(d, 'index', 'weeks', `${week}.json`),
      evidenceState: (week: string) => path.join(d, 'migration-evidence', 'week-v1', 'episodes', week, 'state.json'),
    };
  };

  // The one case that runs the real CLI (a child process each run): its wiring of options, output and exit codes.
  // The other cases call what it calls, in process.
  it('as the CLI: exit 0 and one line when clean, the report as --json and exit 1 on a problem, exit 2 on bad usage, no trace', async () => {
    await migratedStore(given.dataDir);
    await fs.truncate(paths().media('2026-W31-0', 'media/cover.jpg'), 10);
    const before = await snapshotTree(given.dataDir, { mtimes: true });
    const clean = await runCli(['--data-dir', given.dataDir, 'verify', '2026-W30-0']);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    assert.equal(clean.stdout.trim().split('\n').length, 1);
    const json = await runCliJson<VerifyReport>(['--data-dir', given.dataDir, 'verify']);
    assert.equal(json.code, 1, json.stderr);
    assert.deepEqual(json.json, await verify(given.dataDir));
    const text = await runCli(['--data-dir', given.dataDir, 'verify']);
    assert.equal(text.code, 1, text.stderr);
    assert.deepEqual(text.stdout.trim().split('\n'), textLines(json.json));
    const usage = await runCli(['--data-dir', given.dataDir, 'verify', '--fix']);
    assert.equal(usage.code, 2, usage.stderr);
    assert.deepEqual(await snapshotTree(given.dataDir, { mtimes: true }), before);
  });

  it('is clean on a migrated store with newly allocated episodes, and says so in one line', async () => {
    await migratedStore(given.dataDir);
    const report = await verify(given.dataDir);
    assert.equal(report.ok, true, JSON.stringify(report.problems, null, 2));
    assert.deepEqual(report.problems, []);
    assert.equal(report.episodes_checked, 4);
    assert.equal(textLines(report).length, 1);
  });

  it('leaves no trace: content, modes and mtimes identical after checking all episodes and given ones', async () => {
    await migratedStore(given.dataDir);
    await fs.truncate(paths().media('2026-W31-0', 'media/cover.jpg'), 10); // so that it also runs into a problem
    const before = await snapshotTree(given.dataDir, { mtimes: true });
    for (const ids of [[], ['2026-W30-0', '2026-W31-0']]) {
      assert.equal((await verify(given.dataDir, ids)).ok, false, ids.join(' '));
      assert.deepEqual(await snapshotTree(given.dataDir, { mtimes: true }), before, ids.join(' '));
    }
  });

  // Spawns the CLI: as root, only another user's process (NOBODY) meets the permissions; root in process ignores them.
  it('works on a read-only copy (owned by another user, no write permission anywhere)', async function () {
    await migratedStore(given.dataDir);
    const parent = await tempDir('verify-ro-');
    try {
      await fs.chmod(parent, 0o755);
      const copy = path.join(parent, 'data');
      await fs.cp(given.dataDir, copy, { recursive: true });
      await fs.truncate(path.join(copy, 'episodes', '2026-W30-0', 'media', 'final.mp4'), 10);
      const root = process.getuid?.() === 0;
      if (root) await chownTree(copy, NOBODY);
      await chmodTree(copy);
      const as = root ? { uid: NOBODY, gid: NOBODY } : {};

      // The copy really is read-only for the user verify runs as.
      const probe = spawn(
        process.execPath,
        ['-e', `require('fs').writeFileSync(${JSON.stringify(copy)} + '/probe', 'x')`],
        {
          ...as,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      assert.notEqual((await collect(probe)).code, 0, 'the read-only copy accepted a write');

      const before = await snapshotTree(copy, { mtimes: true });
      const run = await runCli(['--data-dir', copy, 'verify', '--json'], { spawn: as });
      assert.equal(run.code, 1, run.stderr);
      const report = JSON.parse(run.stdout) as VerifyReport;
      assert.deepEqual(report.problems.map((p) => p.code).sort(), [
        ProblemCode.MediaHashMismatch,
        ProblemCode.MediaSizeMismatch,
      ]);
      const clean = await runCli(['--data-dir', copy, 'verify', '2026-W31-0'], { spawn: as });
      assert.equal(clean.code, 0, clean.stdout + clean.stderr);
      assert.deepEqual(await snapshotTree(copy, { mtimes: true }), before);
    } finally {
      await chmodTree(parent, true);
      await fs.rm(parent, { recursive: true, force: true });
    }
  });

  describe('reports each problem of a migrated store, naming the file', () => {
    const cases: { title: string; code: ProblemCode; damage: (p: ReturnType<typeof paths>) => Promise<string> }[] = [
      {
        title: 'a media file changed',
        code: ProblemCode.MediaHashMismatch,
        async damage(p) {
          const file = p.media('2026-W30-0', 'media/final.mp4');
          const handle = await fs.open(file, 'r+');
          await handle.write(Buffer.from([0x00, 0x01]), 0, 2, 100);
          await handle.close();
          return file;
        },
      },
      {
        title: 'a media file missing',
        code: ProblemCode.MediaMissing,
        async damage(p) {
          const file = p.media('2026-W31-0', 'media/cover.jpg');
          await fs.rm(file);
          return file;
        },
      },
      {
        title: 'a state that does not match the schema',
        code: ProblemCode.StateSchema,
        async damage(p) {
          await edit(p.state('2026-W31-0'), z.looseObject({}), (s) => (s.status = 'done'));
          return p.state('2026-W31-0');
        },
      },
      {
        title: 'a history entry whose charges do not sum to its total',
        code: ProblemCode.LedgerTotalMismatch,
        async damage(p) {
          await edit(p.history('2026-W30-0'), historyEntrySchema, (h) => (h.total_cost_cents = 1));
          return p.history('2026-W30-0');
        },
      },
      {
        title: 'a history entry that disagrees with its state',
        code: ProblemCode.HistoryStateMismatch,
        async damage(p) {
          await edit(p.history('2026-W30-0'), historyEntrySchema, (h) => (h.completed_at = '2026-07-24T08:00:00Z'));
          return p.history('2026-W30-0');
        },
      },
      {
        title: 'a charge naming an unknown remote job',
        code: ProblemCode.LedgerUnknownJob,
        async damage(p) {
          await edit(p.state('2026-W31-0'), episodeStateSchema, (s) => (s.ledger[0]!.remote_job_id = 'job_unknown'));
          return p.state('2026-W31-0');
        },
      },
      {
        title: 'a charged step without a remote job reference',
        code: ProblemCode.ChargeWithoutRemoteJob,
        async damage(p) {
          await edit(p.state('2026-W30-0'), episodeStateSchema, (s) => (s.steps['video-r0']!.remote_job_id = null));
          return p.state('2026-W30-0');
        },
      },
      {
        title: 'a migrated state edited after the migration (evidence no longer matches)',
        code: ProblemCode.EvidenceMismatch,
        async damage(p) {
          await edit(p.state('2026-W31-0'), episodeStateSchema, (s) => (s.approval!.by = 'someone-else@example.com'));
          return p.state('2026-W31-0');
        },
      },
      {
        title: 'the legacy evidence itself changed',
        code: ProblemCode.EvidenceMismatch,
        async damage(p) {
          await fs.appendFile(p.evidenceState('2026-W30'), ' ');
          return p.evidenceState('2026-W30');
        },
      },
      {
        title: 'an id that is not week + sequence',
        code: ProblemCode.IdMismatch,
        async damage(p) {
          await edit(p.history('2026-W31-0'), historyEntrySchema, (h) => (h.sequence = 3));
          return p.history('2026-W31-0');
        },
      },
      {
        title: 'an episode directory missing from the week index',
        code: ProblemCode.DirectoryNotIndexed,
        async damage(p) {
          await edit(p.index('2026-W30'), weekIndexSchema, (i) => (i.episodes = []));
          return p.state('2026-W30-0');
        },
      },
      {
        title: 'an indexed episode whose directory is gone',
        code: ProblemCode.IndexedWithoutState,
        async damage(p) {
          await fs.rm(path.dirname(p.state('2026-W32-0')), { recursive: true });
          return p.index('2026-W32');
        },
      },
      {
        title: 'one allocation key on two episodes',
        code: ProblemCode.DuplicateAllocationKey,
        async damage(p) {
          const key = 'weekly-media-2026-08-03';
          await edit(p.state('2026-W31-1'), episodeStateSchema, (s) => (s.allocation_key = key));
          await edit(p.index('2026-W31'), weekIndexSchema, (i) => (i.episodes[1]!.allocation_key = key));
          return p.state('2026-W31-1');
        },
      },
      {
        title: 'two episodes claiming one week and sequence',
        code: ProblemCode.DuplicateSequence,
        async damage(p) {
          await edit(p.index('2026-W31'), weekIndexSchema, (i) => (i.episodes[1]!.sequence = 0));
          return p.index('2026-W31');
        },
      },
    ];

    for (const c of cases) {
      it(c.title, async () => {
        await migratedStore(given.dataDir);
        const file = await c.damage(paths());
        const report = await verify(given.dataDir);
        assert.equal(report.ok, false);
        assert.ok(has(report.problems, c.code, file), JSON.stringify(report.problems, null, 2));
        assert.equal(textLines(report).length, report.problems.length, 'one line per problem');
      });
    }
  });

  it('checks only the given episodes, and reports an unknown one', async () => {
    await migratedStore(given.dataDir);
    await fs.truncate(paths().media('2026-W31-0', 'media/final.mp4'), 5);
    assert.equal((await verify(given.dataDir, ['2026-W30-0'])).ok, true);
    const bad = await verify(given.dataDir, ['2026-W31-0']);
    assert.equal(bad.ok, false);
    assert.ok(bad.problems.every((p) => p.episode_id === '2026-W31-0'));
    const unknown = await verify(given.dataDir, ['2026-W40-3']);
    assert.equal(unknown.ok, false);
    assert.ok(has(unknown.problems, ProblemCode.EpisodeNotFound));
  });

  it('reports legacy data still waiting for migrate', async () => {
    const report = await verify(given.dataDir);
    assert.equal(report.ok, false);
    assert.ok(has(report.problems, ProblemCode.LegacyUnmigrated, path.join(given.dataDir, 'history.json')));
    assert.ok(has(report.problems, ProblemCode.LegacyUnmigrated, path.join(given.dataDir, 'episodes', '2026-W30')));
  });

  // An unknown option (`verify --fix`) is the parser's alone: the CLI case runs it.
  it('exits 2 on bad usage: an invalid id, a data dir that does not exist', async () => {
    for (const [dataDir, ids] of [
      [given.dataDir, ['2026-W30']],
      [path.join(given.dataDir, 'nope'), []],
    ] as const) {
      await assert.rejects(
        verify(dataDir, [...ids]),
        (e) => exitCodeFor(e) === EXIT_USAGE,
        `${dataDir} ${ids.join(' ')}`,
      );
    }
  });
});

async function chownTree(root: string, id: number): Promise<void> {
  await fs.chown(root, id, id);
  for (const entry of await fs.readdir(root, { recursive: true })) await fs.lchown(path.join(root, entry), id, id);
}

/** Read-only (a-w) or, with `writable`, owner-writable again so the test can clean up. */
async function chmodTree(root: string, writable = false): Promise<void> {
  const entries = [root, ...(await fs.readdir(root, { recursive: true })).map((e) => path.join(root, e))];
  for (const p of entries) {
    const st = await fs.lstat(p);
    if (st.isSymbolicLink()) continue;
    const mode = st.isDirectory() ? 0o555 : 0o444;
    await fs.chmod(p, writable ? mode | 0o200 : mode);
  }
}
