/**
 * The campaign's store hosts.
 * - PostgreSQL: a restore right after its backup, with nothing written between, recovers. The backup's LSN then sits
 *   on a WAL segment boundary, and recovery to it needs the next segment in the archive. Found by the PostgreSQL year
 *   at seed 7120426 (fault f084-store-restore: "recovery ended before configured recovery target was reached").
 * - File: a copy taken while lock directories come and go succeeds. Found by CI's smoke at seed 1344881401 (fault
 *   f004-store-restore: "ENOENT ... lstat '.../episodes/2020-W52-0/episode.lock'").
 */
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FileStoreHost, PostgresStoreHost } from '../../../campaign/store-host';

describe('campaign store host (PostgreSQL)', function () {
  this.timeout(180_000);

  it('restores a backup taken just before, with no WAL written since', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'store-host-'));
    const host = await PostgresStoreHost.start(dir, `host-${process.pid}`);
    try {
      const backup = await host.backup('at-once');
      assert.match(backup.lsn ?? '', /^[0-9A-F]+\/[0-9A-F]+$/);
      await host.restore(backup);
      const target = host.target();
      assert.equal(target.kind, 'postgres');
    } finally {
      await host.stop();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('campaign store host (file)', function () {
  this.timeout(120_000);

  it('backs up while lock directories come and go: every copy succeeds and holds no lock', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'store-host-file-'));
    const host = await FileStoreHost.start(path.join(dir, 'data'), path.join(dir, 'backups'));
    const episodes = Array.from({ length: 20 }, (_, i) => path.join(host.dataDir, 'episodes', `2020-W52-${i}`));
    for (const e of episodes) {
      await fs.mkdir(e, { recursive: true });
      await fs.writeFile(path.join(e, 'state.json'), '{}');
    }
    // Workers taking and letting go of episode locks (a directory with an owner file), as fast as they can.
    let churning = true;
    const churn = Promise.all(
      episodes.map(async (e) => {
        const lock = path.join(e, 'episode.lock');
        while (churning) {
          await fs.mkdir(lock);
          await fs.writeFile(path.join(lock, 'owner'), 'x');
          await fs.rm(lock, { recursive: true });
        }
      }),
    );
    try {
      for (let i = 0; i < 30; i++) {
        const { dir: copy } = await host.backup(`b${i}`);
        const names = await fs.readdir(copy, { recursive: true });
        assert.equal(names.filter((n) => n.endsWith('state.json')).length, episodes.length);
        assert.deepEqual(
          names.filter((n) => n.includes('.lock')),
          [],
        );
      }
    } finally {
      churning = false;
      await churn;
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
