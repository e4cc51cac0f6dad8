/**
 * The review-session store contract (src/store/review-sessions.ts), one suite run against the file store and
 * PostgreSQL: what the desk relies on for sessions that survive its restart, end when revoked, and stay bounded.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { ReviewSession, ReviewSessionStore, SessionBounds } from '../src/store/review-sessions';

export interface SessionStoreUnderTest {
  sessions: ReviewSessionStore;
  /** A second instance on the same storage, as a restarted desk (or the CLI) opens it. */
  reopen(): ReviewSessionStore;
  cleanup(): Promise<void>;
}

const T0 = new Date('2026-08-03T09:00:00.000Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

export function sessionRecord(identity: string, lastSeenMinutes = 0, over: Partial<ReviewSession> = {}): ReviewSession {
  return {
    schema: 'review-session/v1',
    id_sha256: createHash('sha256').update(randomBytes(32)).digest('hex'),
    reviewer: identity.replace(/^\w+:/, ''),
    method: 'token',
    identity,
    email: null,
    groups: [],
    client_ip: '127.0.0.1',
    user_agent: 'contract',
    created_at: at(lastSeenMinutes).toISOString(),
    last_seen_at: at(lastSeenMinutes).toISOString(),
    expires_at: at(lastSeenMinutes + 12 * 60).toISOString(),
    ...over,
  };
}

export function describeReviewSessionContract(name: string, make: () => Promise<SessionStoreUnderTest>): void {
  describe(`review session store contract: ${name}`, function () {
    this.timeout(60_000);
    let t: SessionStoreUnderTest;
    beforeEach(async () => (t = await make()));
    afterEach(() => t.cleanup());
    const bounds = (now: number, over: Partial<SessionBounds> = {}): SessionBounds => ({
      maxSessions: 100,
      maxPerIdentity: 10,
      now: at(now),
      idleCutoff: at(now - 30),
      ...over,
    });

    it('keeps a session across a reopen (a restarted desk), and forgets it once deleted', async () => {
      const s = sessionRecord('token:alice');
      await t.sessions.create(s, bounds(0));
      const reopened = t.reopen();
      assert.deepEqual(await reopened.get(s.id_sha256), s);
      assert.deepEqual(
        (await reopened.list()).map((x) => x.id_sha256),
        [s.id_sha256],
      );
      assert.equal(await reopened.delete(s.id_sha256), true);
      assert.equal(await t.sessions.get(s.id_sha256), undefined);
      assert.equal(await t.sessions.delete(s.id_sha256), false);
      assert.equal(await t.sessions.get('../../state'), undefined, 'a malformed digest is no session');
    });

    it('touch moves last_seen_at forward, and never brings a deleted session back', async () => {
      const s = sessionRecord('token:alice');
      await t.sessions.create(s, bounds(0));
      await t.sessions.touch(s.id_sha256, at(5));
      assert.equal((await t.reopen().get(s.id_sha256))?.last_seen_at, at(5).toISOString());
      await t.reopen().delete(s.id_sha256);
      await t.sessions.touch(s.id_sha256, at(6));
      assert.equal(await t.sessions.get(s.id_sha256), undefined);
      assert.deepEqual(await t.sessions.list(), []);
    });

    it('create removes expired sessions and keeps the bounds (per identity, in all), oldest first', async () => {
      const idle = sessionRecord('token:old', 0);
      const ended = sessionRecord('token:old', 50, { expires_at: at(55).toISOString() });
      await t.sessions.create(idle, bounds(0));
      await t.sessions.create(ended, bounds(50));
      const alice = [1, 2, 3].map((m) => sessionRecord('token:alice', 60 + m));
      for (const [i, s] of alice.entries()) await t.sessions.create(s, bounds(61 + i, { maxPerIdentity: 2 }));
      const ids = async () => new Set((await t.sessions.list()).map((s) => s.id_sha256));
      // `idle` was last seen > 30 min before, `ended` is past its absolute end, alice's first is her oldest of 3.
      assert.deepEqual(await ids(), new Set([alice[1]!.id_sha256, alice[2]!.id_sha256]));
      const bob = sessionRecord('token:bob', 70);
      await t.sessions.create(bob, bounds(70, { maxSessions: 2 }));
      assert.deepEqual(await ids(), new Set([alice[2]!.id_sha256, bob.id_sha256]));
    });

    it('keeps the bound under concurrent creates', async () => {
      const made = Array.from({ length: 8 }, (_, i) => sessionRecord(`token:r${i}`, 1));
      await Promise.all(made.map((s) => t.sessions.create(s, bounds(1, { maxSessions: 3 }))));
      assert.equal((await t.sessions.list()).length, 3);
    });
  });
}
