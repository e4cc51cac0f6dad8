/** The review-session store contract on both stores (testkit/review-session-contract.ts). */
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { openReviewSessions } from '../../../src/store/open-store';
import { PostgresEpisodeStore } from '../../../src/store/postgres-store';
import { freshDatabase } from '../../../testkit/postgres';
import { describeReviewSessionContract } from '../../../testkit/review-session-contract';

describeReviewSessionContract('file store', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'review-sessions-'));
  return Promise.resolve({
    sessions: openReviewSessions(new FileEpisodeStore(dir)),
    reopen: () => openReviewSessions(new FileEpisodeStore(dir)),
    cleanup: () => fs.rm(dir, { recursive: true, force: true }),
  });
});

describeReviewSessionContract('postgres store', async () => {
  const url = await freshDatabase('sessions');
  const stores: PostgresEpisodeStore[] = [];
  const open = () => {
    const store = new PostgresEpisodeStore({ url, mediaDir: os.tmpdir() });
    stores.push(store);
    return openReviewSessions(store);
  };
  return {
    sessions: open(),
    reopen: open,
    cleanup: async () => {
      await Promise.all(stores.map((s) => s.close()));
    },
  };
});
