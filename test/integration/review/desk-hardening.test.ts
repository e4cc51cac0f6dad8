/**
 * The desk's limits that need no browser: request and connection timeouts and the connection cap (raw sockets, as an
 * attacker holds them), the idle and absolute ends of a session, and the settings' parsing (trust proxy, listen rule,
 * OIDC secret). No Temporal: nothing here reaches a decision.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, promises as fs, statSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { isPipelineError } from '../../../src/domain/errors';
import { AuditLog } from '../../../src/review/audit-log';
import { listenProblem, loadDeskSettings } from '../../../src/review/desk-settings';
import { ReviewerStore } from '../../../src/review/reviewers';
import { startReviewDesk, type ConnectionLimits } from '../../../src/review/server';
import { DeskSessions, type NewSession, type SessionEnd } from '../../../src/review/sessions';
import { ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { openReviewSessions } from '../../../src/store/open-store';

describe('review desk hardening (sockets, sessions, settings)', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'desk-hardening-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  const desk = (limits: Partial<ConnectionLimits>) =>
    startReviewDesk({
      host: '127.0.0.1',
      port: 0,
      store: new FileEpisodeStore(dir),
      reviewers: new ReviewerStore(path.join(dir, 'review', 'reviewers.json')),
      getClient: () => Promise.reject(new Error('no Temporal')),
      budgetCents: 20_000,
      timeZone: 'UTC',
      audit: new AuditLog(() => undefined),
      limits,
    });

  /** Connects, writes `text`, and resolves with everything the server sent once it closed the connection. */
  const heldOpen = (url: string, text: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(url).port), '127.0.0.1', () => socket.write(text));
      let got = '';
      socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve(got));
    });

  it('a slow body or slow headers are cut off (408), not held forever', async () => {
    const d = await desk({ headersMs: 500, requestMs: 1_000 });
    try {
      const slowBody = heldOpen(
        d.url,
        `POST /sign-in HTTP/1.1\r\nHost: ${new URL(d.url).host}\r\nOrigin: ${d.url}\r\n` +
          'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntoken=rvw_',
      );
      const slowHeaders = heldOpen(d.url, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      assert.match(await slowBody, /^HTTP\/1\.1 408/);
      assert.match(await slowHeaders, /^HTTP\/1\.1 408/);
    } finally {
      await d.close();
    }
  });

  it('connections beyond the cap are closed at once; those within it are served', async () => {
    const d = await desk({ maxConnections: 2 });
    const sockets: net.Socket[] = [];
    try {
      const open = () =>
        new Promise<net.Socket>((resolve) => {
          const s = net.connect(Number(new URL(d.url).port), '127.0.0.1', () => resolve(s));
          s.on('error', () => undefined);
          sockets.push(s);
        });
      await open();
      const second = await open();
      const third = await open();
      const thirdGot = await new Promise<string>((resolve) => {
        let got = '';
        third.on('data', (b: Buffer) => (got += b.toString()));
        third.on('close', () => resolve(got));
        third.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      });
      assert.equal(thirdGot, '', 'the third connection was dropped unanswered');
      const answer = await new Promise<string>((resolve) => {
        second.once('data', (b: Buffer) => resolve(b.toString()));
        second.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      });
      assert.match(answer, /^HTTP\/1\.1 200/);
    } finally {
      sockets.forEach((s) => s.destroy());
      await d.close();
    }
  });

  it('a session ends after its idle time, and at its absolute end however busy it is (an OIDC one sooner)', async () => {
    const sessions = new DeskSessions(
      openReviewSessions(new FileEpisodeStore(dir)),
      { idleMs: 30 * 60_000, absoluteMs: 90 * 60_000, oidcAbsoluteMs: 15 * 60_000, maxSessions: 10, maxPerIdentity: 5 },
      randomBytes(32),
    );
    const t0 = Date.parse('2026-08-03T09:00:00Z');
    const at = (min: number) => new Date(t0 + min * 60_000);
    const who: NewSession = {
      reviewer: 'alice',
      method: 'token',
      identity: 'token:x',
      email: null,
      groups: [],
      client_ip: '127.0.0.1',
      user_agent: '',
    };
    const ends: SessionEnd[] = [];
    const lookup = (id: string, min: number) =>
      sessions
        .lookup(
          id,
          () => true,
          (_s, why) => ends.push(why),
          at(min),
        )
        .then((s) => s !== undefined);
    const idle = await sessions.create(who, at(0));
    assert.deepEqual(
      [await lookup(idle.id, 20), await lookup(idle.id, 45), await lookup(idle.id, 80)],
      [true, true, false],
    );
    const busy = await sessions.create(who, at(100));
    const seen = [];
    for (const m of [120, 140, 160, 180, 190]) seen.push(await lookup(busy.id, m));
    assert.deepEqual(seen, [true, true, true, true, false]);
    // A provider's user is sent back to the provider (which may have removed them) after 15 minutes, however busy.
    const oidc = await sessions.create({ ...who, method: 'oidc', identity: 'oidc:https://id.example/ u-1' }, at(200));
    assert.deepEqual([await lookup(oidc.id, 210), await lookup(oidc.id, 216)], [true, false]);
    assert.deepEqual(ends, ['idle', 'expired', 'expired']);
  });

  it('settings: trust proxy as hops or CIDRs, session times, the listen rule, a private secret file', () => {
    const env = (e: Record<string, string>) => loadDeskSettings({ ...e });
    assert.equal(env({ EPISODES_REVIEW_TRUST_PROXY: '1' }).trustProxy, 1);
    assert.deepEqual(env({ EPISODES_REVIEW_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1' }).trustProxy, [
      '127.0.0.1',
      '10.0.0.0/8',
      '::1',
    ]);
    assert.equal(env({}).trustProxy, false);
    for (const bad of ['true', '1.2.3.4/40', 'proxy.example', '-1']) {
      assert.throws(
        () => env({ EPISODES_REVIEW_TRUST_PROXY: bad }),
        (e) => isPipelineError(e, ErrorType.InvalidInput) && /EPISODES_REVIEW_TRUST_PROXY/.test(e.message),
        bad,
      );
    }
    const s = env({ EPISODES_REVIEW_SESSION_IDLE_MS: '60000', EPISODES_REVIEW_SESSION_ABSOLUTE_MS: '3600000' });
    assert.deepEqual(
      [s.sessions.idleMs, s.sessions.absoluteMs, s.sessions.oidcAbsoluteMs, s.tokens, s.oidc],
      [60_000, 3_600_000, 15 * 60_000, true, undefined],
    );

    assert.match(String(listenProblem('0.0.0.0', undefined, false)), /--insecure/);
    assert.equal(listenProblem('0.0.0.0', new URL('https://review.example.org/'), false), undefined);
    assert.equal(listenProblem('0.0.0.0', undefined, true), undefined);
    assert.equal(listenProblem('127.0.0.1', undefined, false), undefined);

    const secret = path.join(dir, 'client-secret');
    writeFileSync(secret, 'the-client-secret\n', { mode: 0o644 });
    assert.equal(statSync(secret).mode & 0o777, 0o644);
    const oidc = {
      EPISODES_REVIEW_OIDC_ISSUER: 'https://login.example.org/realms/team',
      EPISODES_REVIEW_OIDC_CLIENT_ID: 'review-desk',
      EPISODES_REVIEW_OIDC_CLIENT_SECRET_FILE: secret,
      EPISODES_REVIEW_OIDC_ALLOWED_GROUPS: 'reviewers',
      EPISODES_REVIEW_PUBLIC_URL: 'https://review.example.org',
    };
    assert.throws(
      () => env(oidc),
      (e) => isPipelineError(e, ErrorType.InvalidState) && /chmod 600/.test(e.message) && !/the-client/.test(e.message),
    );
  });
});
