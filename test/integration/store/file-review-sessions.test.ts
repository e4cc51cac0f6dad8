/**
 * A revoked session stays revoked: a desk process frozen (SIGSTOP) half-way through refreshing a session, past the
 * lock's stale time, cannot bring it back once it resumes, because its write was staged in its lock's fence.
 */
import assert from 'node:assert/strict';
import { promises as fs, existsSync, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ErrorType } from '../../../src/domain/errors';
import { FileReviewSessions } from '../../../src/store/file-review-sessions';
import { collect, freezeAtFailpoint, spawnNode } from '../../../testkit/processes';
import { sessionRecord } from '../../../testkit/review-session-contract';

const STALE_MS = 2_000;

describe('file store review sessions: a frozen touch', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'frozen-touch-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it('a desk frozen inside touch past the stale time cannot bring back the session revoked meanwhile', async () => {
    const sessionsDir = path.join(dir, 'sessions');
    const sessions = new FileReviewSessions(sessionsDir, { timeoutMs: 30_000, staleMs: STALE_MS });
    const s = sessionRecord('token:alice', 5);
    await sessions.create(s, { maxSessions: 10, maxPerIdentity: 10, now: new Date(), idleCutoff: new Date(0) });
    const frozen = spawnNode('testkit/session-toucher.js', [sessionsDir, s.id_sha256], {
      EPISODES_LOCK_STALE_MS: String(STALE_MS),
      EPISODES_FAILPOINTS: 'fs.write=delay:500@1',
    });
    const result = collect(frozen);
    await freezeAtFailpoint(frozen, 'fs.write');
    // `review sessions --revoke`: waits for the frozen holder's lock to go stale, takes it over, deletes.
    assert.equal(await sessions.delete(s.id_sha256), true);
    frozen.kill('SIGCONT');
    const r = await result;
    assert.equal(r.stdout, ErrorType.LockCompromised, `the frozen touch: ${r.stdout} ${r.stderr}`);
    assert.equal(await sessions.get(s.id_sha256), undefined, 'the revoked session came back');
    assert.equal(existsSync(path.join(sessionsDir, `${s.id_sha256}.json`)), false);
  });
});
