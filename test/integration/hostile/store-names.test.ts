/**
 * Hostile names inside the data dir: a file in index/weeks whose name is not a week (a stray copy, a hand edit) must
 * be reported as StoreCorrupt naming it, like any other corrupt file, not escape as a raw validation error.
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { runCli } from '../../../testkit/legacy-harness';
import { pathLike } from '../../../testkit/arbitraries';

const by = { kind: 'test', note: 'store-names' } as const;

describe('hostile names in the data dir', function () {
  this.timeout(60_000);
  let dataDir: string;
  let store: FileEpisodeStore;
  beforeEach(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'store-names-'));
    store = new FileEpisodeStore(dataDir);
    await allocateEpisodeOn(store, { allocationKey: 'a', weekId: '2026-W32' }, by);
  });
  afterEach(() => fs.rm(dataDir, { recursive: true, force: true }));

  it('a file in index/weeks named like no week: list is StoreCorrupt naming it (CLI: exit 1, one typed line)', async () => {
    const stray = path.join(dataDir, 'index', 'weeks', '2026-W54.json');
    await fs.writeFile(stray, '{}');
    await assert.rejects(
      store.listEpisodes(),
      (e) => isPipelineError(e, ErrorType.StoreCorrupt) && e.details.file === stray,
    );
    const cli = await runCli(['--data-dir', dataDir, 'list']);
    assert.equal(cli.code, 1, cli.stdout + cli.stderr);
    assert.match(cli.stderr, /^episodes: StoreCorrupt: [^\n]*2026-W54\.json[^\n]*\n$/);
  });

  it('any such name: StoreCorrupt, or listed when it is a real week (fast-check)', async () => {
    const weeks = path.join(dataDir, 'index', 'weeks');
    await fc.assert(
      fc.asyncProperty(
        // Names a directory can hold (no separator, NUL or lone surrogate), other than the real week's.
        pathLike.filter(
          (n) =>
            n.length > 0 &&
            n.length < 200 &&
            n.isWellFormed() &&
            !/[/\0]/.test(n) &&
            !['.', '..', '2026-W32'].includes(n),
        ),
        async (name) => {
          const file = path.join(weeks, `${name}.json`);
          await fs.writeFile(file, JSON.stringify({ schema: 'week-index/v1', week_id: name, episodes: [] }));
          let listed: string[];
          try {
            listed = await store.listWeeks();
          } catch (e) {
            assert.ok(isPipelineError(e, ErrorType.StoreCorrupt) && e.details.file === file, String(e));
            return;
          } finally {
            await fs.rm(file);
          }
          assert.equal(parseWeekId(name), name, `listed a week named ${JSON.stringify(name)}`);
          assert.ok(listed.includes(name));
        },
      ),
      { numRuns: 100 },
    );
  });
});
