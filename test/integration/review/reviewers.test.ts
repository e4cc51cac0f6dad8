/** Reviewers and their tokens through the CLI: shown once, stored as a hash at 0600, revocable; sessions follow. */
import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { isPipelineError } from '../../../src/domain/errors';
import { AuditLog } from '../../../src/review/audit-log';
import { oidcReviewerName } from '../../../src/review/oidc';
import { ReviewerStore, TOKEN_PATTERN } from '../../../src/review/reviewers';
import { buildReviewDesk } from '../../../src/review/server';
import { deskCookies, newSecretId, secretDigest } from '../../../src/review/sessions';
import { ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { openReviewSessions } from '../../../src/store/open-store';
import { collect, runCli, spawnNode } from '../../../testkit/processes';
import { until } from '../../../testkit/wait';
import { injectSignIn } from './inject';
import { scratchDir } from '../../../testkit/scratch';

describe('review desk reviewers', function () {
  // Generous: the first test runs the CLI ten times, and CI machines are shared.
  this.timeout(120_000);
  let dir: string;
  const cli = (...args: string[]) =>
    runCli(['--data-dir', dir, 'review', ...args], { EPISODES_DATA_DIR: '', EPISODES_REVIEWERS_FILE: '' });
  beforeEach(() => {
    dir = scratchDir('reviewers-');
  });
  /** A desk on this test's data dir, its reviewers and its audit log's lines. */
  const auditedDesk = async () => {
    const reviewers = new ReviewerStore(path.join(dir, 'review', 'reviewers.json'));
    const audit: string[] = [];
    const app = await buildReviewDesk({ ...deskOptions(reviewers), audit: new AuditLog((line) => audit.push(line)) });
    return { reviewers, audit, app };
  };
  /** A desk on this test's data dir, without Temporal, its audit log dropped. */
  const deskOptions = (reviewers: ReviewerStore) => ({
    store: new FileEpisodeStore(dir),
    reviewers,
    getClient: () => Promise.reject(new Error('no Temporal in this test')),
    budgetCents: 20_000,
    timeZone: 'UTC',
    audit: new AuditLog(() => undefined),
  });

  it('add-reviewer prints the token once and stores only its sha256, in a 0600 file under the data dir', async () => {
    const added = await cli('add-reviewer', 'alice');
    assert.equal(added.code, 0, added.stderr);
    const token = added.stdout.trim().split('\n').at(-1)!;
    assert.match(token, TOKEN_PATTERN);
    const file = path.join(dir, 'review', 'reviewers.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const text = readFileSync(file, 'utf8');
    assert.ok(!text.includes(token) && !text.includes(token.slice(4)), 'the token itself is never stored');
    const store = new ReviewerStore(file);
    assert.equal(store.authenticate(token)?.name, 'alice');
    assert.equal(store.authenticate(`${token.slice(0, -1)}x`), undefined);
    const list = await cli('list-reviewers');
    assert.match(list.stdout, /^alice {2}added /);
    assert.ok(!list.stdout.includes(token));

    assert.equal((await cli('add-reviewer', 'alice')).code, 1, 'a second alice is refused');
    const rotated = await cli('rotate-reviewer', 'alice');
    assert.equal(rotated.code, 0, rotated.stderr);
    const newToken = rotated.stdout.trim().split('\n').at(-1)!;
    assert.match(newToken, TOKEN_PATTERN);
    assert.equal(store.authenticate(token), undefined, 'the old token no longer works');
    assert.equal(store.authenticate(newToken)?.name, 'alice');
    assert.equal((await cli('add-reviewer', ' ')).code, 2, 'an empty name is refused');
    const removed = await cli('remove-reviewer', 'alice');
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(new ReviewerStore(file).authenticate(token), undefined);
    assert.equal((await cli('remove-reviewer', 'alice')).code, 2);
  });

  it('a provider user decides under its email, else its subject: names no token reviewer may take', async () => {
    assert.equal(oidcReviewerName('alice@example.org', 'u-1'), 'alice@example.org');
    assert.equal(oidcReviewerName(null, 'u-1'), 'oidc:u-1');
    const reviewers = new ReviewerStore(path.join(dir, 'review', 'reviewers.json'));
    for (const name of ['oidc:u-1', 'alice@example.org', 'alice@']) {
      await assert.rejects(reviewers.add(name), (e) => isPipelineError(e) && e.type === ErrorType.InvalidInput, name);
    }
    assert.deepEqual(reviewers.list(), []);
  });

  it('a session is bound to its token: removing or rotating the reviewer ends it at the next request', async () => {
    const { reviewers, audit, app } = await auditedDesk();
    try {
      const bob = await injectSignIn(app, await reviewers.add('bob'));
      assert.equal(bob.session.httpOnly, true);
      assert.equal(bob.session.sameSite, 'Strict');
      assert.notEqual(bob.session.secure, true, 'plain HTTP: not Secure');
      assert.equal((await bob.get('/')).statusCode, 200);
      await reviewers.remove('bob');
      assert.equal((await bob.get('/')).headers.location, '/sign-in');

      const carol = await injectSignIn(app, await reviewers.add('carol'));
      assert.equal((await carol.get('/')).statusCode, 200);
      const rotated = await reviewers.rotate('carol');
      assert.equal((await carol.get('/')).headers.location, '/sign-in', 'the old token’s session ended');
      const again = await injectSignIn(app, rotated);
      assert.equal((await again.get('/')).statusCode, 200);
      // `review sessions` lists it (the store's, not the desk's memory) and `--revoke` ends it.
      const listed = await cli('sessions');
      assert.equal(listed.code, 0, listed.stderr);
      const handle = /^([0-9a-f]{16}) {2}carol {2}token {2}from /m.exec(listed.stdout)?.[1];
      assert.ok(handle !== undefined, listed.stdout);
      assert.ok(!listed.stdout.includes(again.session.value));
      const revoked = await cli('sessions', '--revoke', handle.slice(0, 8));
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal((await again.get('/')).headers.location, '/sign-in', 'revoked');
      assert.equal((await cli('sessions', '--revoke', handle)).code, 2, 'no such session any more');
      // A removed reviewer's session leaves the list at once, before any request of theirs would end it.
      const dave = await injectSignIn(app, await reviewers.add('dave'));
      assert.equal((await dave.get('/')).statusCode, 200);
      assert.match((await cli('sessions')).stdout, / {2}dave {2}token {2}/);
      await reviewers.remove('dave');
      const afterRemoval = await cli('sessions');
      assert.equal(afterRemoval.code, 0, afterRemoval.stderr);
      assert.doesNotMatch(afterRemoval.stdout, / {2}dave {2}/);
      // Listing is read-only: the ended session is still in the store until --prune removes it.
      const sessionFiles = () => readdirSync(path.join(dir, 'review', 'sessions')).filter((f) => f.endsWith('.json'));
      assert.equal(sessionFiles().length, 1, 'dave’s session');
      const pruned = await cli('sessions', '--prune');
      assert.equal(pruned.code, 0, pruned.stderr);
      assert.match(pruned.stdout, /^session [0-9a-f]{16} of dave had ended; removed$/m);
      assert.equal(sessionFiles().length, 0);
      const ended = audit.map((l) => JSON.parse(l) as { event: string; reviewer?: string; reason?: string });
      assert.deepEqual(
        ended.filter((e) => e.event === 'session-ended').map((e) => [e.reviewer, e.reason]),
        [
          ['bob', 'identity'],
          ['carol', 'identity'],
        ],
      );
    } finally {
      await app.close();
    }
  });

  it('a session record made up or altered by a store writer (no desk key) signs no one in', async () => {
    const { reviewers, audit, app } = await auditedDesk();
    try {
      const alice = await injectSignIn(app, await reviewers.add('alice'));
      const bob = await injectSignIn(app, await reviewers.add('bob'));
      assert.equal((await alice.get('/')).statusCode, 200);
      assert.equal(statSync(path.join(dir, 'review', 'session-key')).mode & 0o777, 0o600);
      // A store writer (a worker host's database role, with PostgreSQL) copies alice's record under an id it knows.
      const store = openReviewSessions(new FileEpisodeStore(dir));
      const records = await store.list();
      const ofAlice = records.find((r) => r.reviewer === 'alice')!;
      const forgedId = newSecretId();
      const bounds = { maxSessions: 100, maxPerIdentity: 100, now: new Date(), idleCutoff: new Date(0) };
      await store.create({ ...ofAlice, id_sha256: secretDigest(forgedId) }, bounds);
      const forged = await app.inject({ method: 'GET', url: '/', cookies: { episodes_review_session: forgedId } });
      assert.equal(forged.headers.location, '/sign-in', 'a made-up record');
      // ... and turns bob's own session into alice's.
      const ofBob = records.find((r) => r.reviewer === 'bob')!;
      await store.delete(ofBob.id_sha256);
      await store.create({ ...ofBob, reviewer: 'alice', identity: ofAlice.identity }, bounds);
      assert.equal((await bob.get('/')).headers.location, '/sign-in', 'an altered record');
      assert.equal((await alice.get('/')).statusCode, 200, 'the desk’s own record still works');
      const ended = audit.map((l) => JSON.parse(l) as { event: string; reason?: string });
      assert.equal(ended.filter((e) => e.event === 'session-ended' && e.reason === 'integrity').length, 2);
    } finally {
      await app.close();
    }
  });

  it('behind a TLS front (X-Forwarded-Proto from a trusted proxy) the cookies are Secure; HSTS only then', async () => {
    const options = deskOptions(new ReviewerStore(path.join(dir, 'review', 'reviewers.json')));
    const tls = await buildReviewDesk({ ...options, trustProxy: ['127.0.0.1'] });
    const plain = await buildReviewDesk(options);
    try {
      const viaProxy = await tls.inject({ method: 'GET', url: '/sign-in', headers: { 'x-forwarded-proto': 'https' } });
      assert.equal(viaProxy.cookies.find((c) => c.name === 'episodes_review_sign_in')!.secure, true);
      assert.equal(viaProxy.headers['strict-transport-security'], 'max-age=31536000');
      const direct = await plain.inject({ method: 'GET', url: '/sign-in', headers: { 'x-forwarded-proto': 'https' } });
      assert.notEqual(direct.cookies.find((c) => c.name === 'episodes_review_sign_in')!.secure, true);
      assert.equal(direct.headers['strict-transport-security'], undefined);
      for (const [name, value] of Object.entries({
        'cross-origin-opener-policy': 'same-origin',
        'cross-origin-resource-policy': 'same-origin',
        'x-content-type-options': 'nosniff',
      })) {
        assert.equal(direct.headers[name], value, name);
      }
      assert.match(String(direct.headers['permissions-policy']), /camera=\(\)/);
    } finally {
      await Promise.all([tls.close(), plain.close()]);
    }
  });

  it('under an https public URL both cookies are __Host- cookies (Secure, Path=/); the plain names open nothing', async () => {
    const reviewers = new ReviewerStore(path.join(dir, 'review', 'reviewers.json'));
    const app = await buildReviewDesk({ ...deskOptions(reviewers), publicUrl: new URL('https://review.example.org/') });
    try {
      const form = await app.inject({ method: 'GET', url: '/sign-in' });
      const pre = form.cookies.find((c) => c.name === '__Host-episodes_review_sign_in');
      assert.deepEqual([pre?.secure, pre?.path], [true, '/'], JSON.stringify(form.cookies));
      const names = deskCookies(true);
      const alice = await injectSignIn(app, await reviewers.add('alice'), {
        names,
        origin: 'https://review.example.org',
      });
      assert.deepEqual([alice.session.secure, alice.session.path], [true, '/']);
      assert.equal((await alice.get('/')).statusCode, 200);
      const plain = await app.inject({
        method: 'GET',
        url: '/',
        cookies: { episodes_review_session: alice.session.value },
      });
      assert.equal(
        plain.headers.location,
        '/sign-in',
        'a cookie without the prefix (set over http, or by a sibling host)',
      );
    } finally {
      await app.close();
    }
  });

  it('reviewers.json: a symlink, another mode or another owner is refused; writes are under the file’s lock', async () => {
    const file = path.join(dir, 'review', 'reviewers.json');
    const reviewers = new ReviewerStore(file);
    await reviewers.add('alice');
    chmodSync(file, 0o644);
    assert.throws(
      () => reviewers.list(),
      (e) => isPipelineError(e, ErrorType.InvalidState) && /chmod 600/.test(e.message),
    );
    chmodSync(file, 0o600);
    const other = path.join(dir, 'other.json');
    renameSync(file, other);
    symlinkSync(other, file);
    assert.throws(
      () => reviewers.list(),
      (e) => isPipelineError(e, ErrorType.InvalidState) && /symlink/.test(e.message),
    );
    unlinkSync(file);
    renameSync(other, file);
    if (process.getuid?.() === 0) {
      chownSync(file, 65534, 65534); // only root can give a file away (CI runs as root)
      assert.throws(
        () => reviewers.list(),
        (e) => isPipelineError(e, ErrorType.InvalidState) && /owned by uid 65534/.test(e.message),
      );
      chownSync(file, 0, 0);
    }
    // Twelve concurrent adds from two stores on one file: none is lost (each is a read-modify-write under the lock).
    const second = new ReviewerStore(file);
    await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? reviewers : second).add(`r${i}`)));
    assert.equal(reviewers.list().length, 13);
  });

  it('the audit log file: a symlink, another mode or another owner is refused; a line stays bounded', () => {
    const file = path.join(dir, 'audit.jsonl');
    const log = AuditLog.toFile(file);
    log.record(
      { event: 'request-refused', reason: 'origin', method: 'POST', path: `/${'x'.repeat(100_000)}` },
      { ip: '::1' },
    );
    const line = readFileSync(file, 'utf8');
    assert.ok(line.length < 1_000, `${line.length} bytes`);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const refusedWith = (pattern: RegExp) => (e: unknown) =>
      isPipelineError(e, ErrorType.InvalidState) && pattern.test(e.message);
    chmodSync(file, 0o644);
    assert.throws(() => AuditLog.toFile(file), refusedWith(/chmod 600/));
    chmodSync(file, 0o600);
    const link = path.join(dir, 'audit-link.jsonl');
    symlinkSync(file, link);
    assert.throws(() => AuditLog.toFile(link), refusedWith(/symlink/));
    if (process.getuid?.() === 0) {
      chownSync(file, 65534, 65534); // only root can give a file away (CI runs as root)
      assert.throws(() => AuditLog.toFile(file), refusedWith(/owned by uid 65534/));
    }
  });

  it('review serve refuses to start on a bad reviewers file, audit log or sessions directory, naming the fix', async () => {
    /** The start's outcome: its exit, or `started` (then stopped) when it came up and listened after all. */
    const serve = async (env: NodeJS.ProcessEnv = {}) => {
      const child = spawnNode('src/cli.js', ['--data-dir', dir, 'review', 'serve', '--listen', '127.0.0.1:0'], {
        EPISODES_DATA_DIR: '',
        EPISODES_STORE_URL: '',
        EPISODES_REVIEWERS_FILE: '',
        ...env,
      });
      const done = collect(child);
      child.stdout?.on('data', (d: Buffer) => d.toString().includes('review desk on') && child.kill('SIGTERM'));
      const r = await done;
      return { ...r, started: r.stdout.includes('review desk on') };
    };
    assert.equal((await cli('add-reviewer', 'alice')).code, 0);
    const file = path.join(dir, 'review', 'reviewers.json');
    chmodSync(file, 0o666);
    const reviewersBad = await serve();
    assert.equal(reviewersBad.started, false, 'a reviewers file anyone may write is refused at start');
    assert.equal(reviewersBad.code, 1);
    assert.ok(reviewersBad.stderr.includes(`${file} has mode 666; run chmod 600 on it`), reviewersBad.stderr);
    chmodSync(file, 0o600);

    const auditFile = path.join(dir, 'audit.jsonl');
    writeFileSync(auditFile, '', { mode: 0o644 });
    chmodSync(auditFile, 0o644);
    const auditBad = await serve({ EPISODES_REVIEW_AUDIT_LOG: auditFile });
    assert.equal(auditBad.started, false);
    assert.match(auditBad.stderr, /audit log .* has mode 644; run chmod 600/);

    const sessionsDir = path.join(dir, 'review', 'sessions');
    mkdirSync(sessionsDir, { mode: 0o777 });
    chmodSync(sessionsDir, 0o777);
    const sessionsBad = await serve();
    assert.equal(sessionsBad.started, false);
    assert.ok(sessionsBad.stderr.includes(`run chmod 700 ${sessionsDir}`), sessionsBad.stderr);
    chmodSync(sessionsDir, 0o700);
    writeFileSync(path.join(sessionsDir, `${'a'.repeat(64)}.json`), '{', { mode: 0o600 });
    const sessionBad = await serve();
    assert.equal(sessionBad.started, false, 'a corrupt session would fail every sign-in');
    assert.match(sessionBad.stderr, /cannot start: .*not valid JSON.*move the file named aside/);
    unlinkSync(path.join(sessionsDir, `${'a'.repeat(64)}.json`));
    assert.equal((await serve()).started, true, 'once fixed, it starts');
  });

  it('review serve listens where told, answers /health, refuses a bad --listen, and stops on SIGTERM', async () => {
    const bad = await cli('serve', '--listen', '0.0.0.0');
    assert.equal(bad.code, 2);
    // Reachable from other machines over plain HTTP: refused unless https in front or --insecure.
    const open = await cli('serve', '--listen', '0.0.0.0:0');
    assert.equal(open.code, 2);
    assert.match(open.stderr, /plain HTTP.*--insecure/);
    for (const value of ['true', '10.0.0.0/33', 'proxy.example']) {
      const wrong = await runCli(['--data-dir', dir, 'review', 'serve'], { EPISODES_REVIEW_TRUST_PROXY: value });
      assert.equal(wrong.code, 2, value);
      assert.match(wrong.stderr, /EPISODES_REVIEW_TRUST_PROXY: expected a hop count/);
      assert.equal(wrong.stderr.trim().split('\n').length, 1, wrong.stderr);
    }
    const child = spawnNode('src/cli.js', ['--data-dir', dir, 'review', 'serve', '--listen', '127.0.0.1:0'], {
      EPISODES_DATA_DIR: '',
      EPISODES_STORE_URL: '',
    });
    const done = collect(child);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    const url = await until('the desk URL', () => /review desk on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], 20_000);
    assert.equal((await fetch(`${url}/health`)).status, 200);
    const root = await fetch(url, { redirect: 'manual' });
    assert.equal(root.status, 303);
    assert.equal(root.headers.get('location'), '/sign-in');
    child.kill('SIGTERM');
    assert.equal((await done).code, 0);
  });
});
