/**
 * The campaign's PostgreSQL store host: a restore right after its backup, with nothing written between, recovers.
 * The backup's LSN then sits on a WAL segment boundary, and recovery to it needs the next segment in the archive.
 * Found by the PostgreSQL year at seed 7120426 (fault f084-store-restore: "recovery ended before configured recovery
 * target was reached").
 */
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PostgresStoreHost } from '../../../campaign/store-host';

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
