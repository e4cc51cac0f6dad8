/** Reviewers and their tokens through the CLI: shown once, stored as a hash at 0600, revocable; sessions follow. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ReviewerStore, TOKEN_PATTERN } from '../../src/review/reviewers';
import { buildReviewDesk } from '../../src/review/server';
import { FileEpisodeStore } from '../../src/store/file-store';
import { collect, runCli, spawnNode } from '../helpers/processes';
import { until } from '../helpers/wait';

describe('review desk reviewers', function () {
  this.timeout(30_000);
  let dir: string;
  const cli = (...args: string[]) =>
    runCli(['--data-dir', dir, 'review', ...args], { EPISODES_DATA_DIR: '', EPISODES_REVIEWERS_FILE: '' });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'reviewers-'));
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
    assert.equal(store.authenticate(token), 'alice');
    assert.equal(store.authenticate(`${token.slice(0, -1)}x`), undefined);
    const list = await cli('list-reviewers');
    assert.match(list.stdout, /^alice {2}added /);
    assert.ok(!list.stdout.includes(token));

    assert.equal((await cli('add-reviewer', 'alice')).code, 1, 'a second alice is refused');
    assert.equal((await cli('add-reviewer', ' ')).code, 2, 'an empty name is refused');
    const removed = await cli('remove-reviewer', 'alice');
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(new ReviewerStore(file).authenticate(token), undefined);
    assert.equal((await cli('remove-reviewer', 'alice')).code, 2);
  });

  it('removing a reviewer ends their open session at the next request', async () => {
    const reviewers = new ReviewerStore(path.join(dir, 'review', 'reviewers.json'));
    const token = await reviewers.add('bob');
    const app = await buildReviewDesk({
      store: new FileEpisodeStore(dir),
      reviewers,
      getClient: () => Promise.reject(new Error('no Temporal in this test')),
      budgetCents: 20_000,
      timeZone: 'UTC',
    });
    try {
      const form = await app.inject({ method: 'GET', url: '/sign-in' });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
      const csrfCookie = form.cookies.find((c) => c.name === '_csrf')!;
      const signIn = await app.inject({
        method: 'POST',
        url: '/sign-in',
        cookies: { _csrf: csrfCookie.value },
        payload: { token, _csrf: csrf },
      });
      assert.equal(signIn.statusCode, 303);
      const session = signIn.cookies.find((c) => c.name === 'episodes_review_session')!;
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Strict');
      assert.notEqual(session.secure, true, 'plain HTTP: not Secure');
      const page = () => app.inject({ method: 'GET', url: '/', cookies: { episodes_review_session: session.value } });
      assert.equal((await page()).statusCode, 200);
      await reviewers.remove('bob');
      const after = await page();
      assert.equal(after.statusCode, 303);
      assert.equal(after.headers.location, '/sign-in');

      // Behind a TLS front (X-Forwarded-Proto from a trusted proxy) the cookie is Secure.
      const tls = await buildReviewDesk({
        store: new FileEpisodeStore(dir),
        reviewers,
        getClient: () => Promise.reject(new Error('no Temporal')),
        budgetCents: 20_000,
        timeZone: 'UTC',
        trustProxy: '127.0.0.1',
      });
      const viaProxy = await tls.inject({ method: 'GET', url: '/sign-in', headers: { 'x-forwarded-proto': 'https' } });
      assert.equal(viaProxy.cookies.find((c) => c.name === '_csrf')!.secure, true);
      await tls.close();
    } finally {
      await app.close();
    }
  });

  it('review serve listens where told, answers /health, refuses a bad --listen, and stops on SIGTERM', async () => {
    const bad = await cli('serve', '--listen', '0.0.0.0');
    assert.equal(bad.code, 2);
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
