/**
 * OIDC sign-in in Chromium against a real provider (oidc-provider, its own login page) on 127.0.0.1: allowed by email
 * or by group; a user not allowed is refused; a tampered state or nonce is refused; sign-out ends the session; the
 * session outlives a restart of the desk but not the user's removal from the allow list. One provider, one browser
 * and one desk (restarted where a test says so) for the file; no Temporal: no decision is made here.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { AuditLog } from '../../../src/review/audit-log';
import type { OidcSettings } from '../../../src/review/desk-settings';
import { ReviewerStore } from '../../../src/review/reviewers';
import { startReviewDesk, type ReviewDeskOptions } from '../../../src/review/server';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { startTestProvider, type TestProvider } from '../../../testkit/oidc-provider';
import { freePort } from '../../../testkit/secure-front';
import { chromiumPath, type AuditLine } from './harness';

/** A page of another site: served on 127.0.0.1 and reached as localhost, which is another site to the browser. */
async function serveHtml(body: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://localhost:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('review desk OIDC sign-in (Chromium, oidc-provider)', function () {
  this.timeout(120_000);
  let dir: string;
  let browser: Browser;
  let provider: TestProvider;
  let deskUrl: string;
  let desk: { close(): Promise<void> } | undefined;
  let audit: AuditLine[];
  let oidc: OidcSettings;
  const contexts: BrowserContext[] = [];

  const startDesk = async (allowedEmails = ['alice@example.org'], extra: Partial<ReviewDeskOptions> = {}) => {
    await desk?.close();
    const url = new URL(deskUrl);
    desk = await startReviewDesk({
      host: '127.0.0.1',
      port: Number(url.port),
      store: new FileEpisodeStore(dir),
      reviewers: new ReviewerStore(path.join(dir, 'review', 'reviewers.json')),
      getClient: () => Promise.reject(new Error('no Temporal in this test')),
      budgetCents: 20_000,
      timeZone: 'UTC',
      tokens: false,
      oidc: { ...oidc, allowedEmails },
      publicUrl: new URL(`${deskUrl}/`),
      audit: new AuditLog((line) => audit.push(JSON.parse(line) as AuditLine)),
      ...extra,
    });
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'review-oidc-'));
    deskUrl = `http://127.0.0.1:${await freePort()}`;
    const redirect = `${deskUrl}/sign-in/oidc/callback`;
    provider = await startTestProvider(redirect, { bob: ['reviewers'], mallory: ['visitors'] });
    oidc = {
      issuer: new URL(provider.issuer),
      clientId: provider.clientId,
      clientSecret: provider.clientSecret,
      scopes: 'openid email groups',
      allowedEmails: [],
      allowedGroups: ['reviewers'],
      groupsClaim: 'groups',
      redirectUrl: new URL(redirect),
    };
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
    audit = [];
    await startDesk();
  });
  after(async () => {
    await desk?.close();
    await browser?.close();
    await provider?.close();
    await fs.rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
  });

  const newPage = async (): Promise<Page> => {
    const context = await browser.newContext({ baseURL: deskUrl });
    contexts.push(context);
    // The provider's dev login page imports a web font; this machine has no way out.
    await context.route(/fonts\.googleapis\.com/, (r) => r.abort());
    return context.newPage();
  };

  /** Through the provider's own pages: its login form (any password), then its consent. */
  const signInAs = async (page: Page, login: string) => {
    await page.goto('/');
    await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();
    await page.getByPlaceholder('Enter any login').fill(login);
    await page.getByPlaceholder('and password').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
  };
  const refusalsSince = (from: number) =>
    audit.slice(from).filter((e) => e.event === 'sign-in' && e.outcome === 'refused');

  it('signs in an allowed email through the provider; sign-out ends the session', async () => {
    const page = await newPage();
    assert.equal(await page.goto('/sign-in').then(() => page.getByLabel('Token').count()), 0, 'tokens are off');
    await signInAs(page, 'alice');
    await page.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
    await page.getByText('alice@example.org').waitFor();
    const session = (await page.context().cookies()).find((c) => c.name === 'episodes_review_session')!;
    assert.equal(session.sameSite, 'Strict');
    assert.equal(session.httpOnly, true);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    // The old cookie, replayed, opens nothing: the session is gone from the store.
    await page.context().addCookies([{ ...session }]);
    await page.goto('/');
    assert.equal(new URL(page.url()).pathname, '/sign-in');
    const ok = audit.filter((e) => e.event === 'sign-in' && e.outcome === 'ok');
    assert.deepEqual(
      ok.map((e) => [e.method, e.reviewer]),
      [['oidc', 'alice@example.org']],
    );
    assert.ok(audit.some((e) => e.event === 'sign-out' && e.reviewer === 'alice@example.org'));
  });

  it('signs in a member of an allowed group; refuses a user in neither list', async () => {
    const bob = await newPage();
    await signInAs(bob, 'bob');
    await bob.getByText('bob@example.org').waitFor();
    const from = audit.length;
    const mallory = await newPage();
    await signInAs(mallory, 'mallory');
    await mallory
      .getByRole('alert')
      .getByText(/Sign-in with .* was refused/)
      .waitFor();
    await mallory.goto('/');
    assert.equal(new URL(mallory.url()).pathname, '/sign-in');
    assert.match(String(refusalsSince(from)[0]?.reason), /mallory@example\.org is not among the allowed/);
  });

  it('refuses a tampered state (on the way back) and a tampered nonce (on the way out)', async () => {
    const from = audit.length;
    const stateTampered = await newPage();
    provider.tamper.redirect = (location) => location.searchParams.set('state', 'forged-state');
    await signInAs(stateTampered, 'alice');
    // Not this browser's sign-in: a plain refusal, like another site's forged callback.
    await stateTampered.getByRole('heading', { name: 'Refused' }).waitFor();
    delete provider.tamper.redirect;

    const nonceTampered = await newPage();
    provider.tamper.request = (query) => (query.nonce = 'forged-nonce');
    await signInAs(nonceTampered, 'alice');
    await nonceTampered
      .getByRole('alert')
      .getByText(/was refused/)
      .waitFor();
    delete provider.tamper.request;
    for (const page of [stateTampered, nonceTampered]) {
      await page.goto('/');
      assert.equal(new URL(page.url()).pathname, '/sign-in');
    }
    const reasons = refusalsSince(from).map((e) => String(e.reason));
    assert.equal(reasons.length, 1, reasons.join('\n'));
    assert.match(reasons[0]!, /nonce/);
    const callbacks = audit.slice(from).filter((e) => e.event === 'request-refused' && e.reason === 'oidc-callback');
    assert.match(String(callbacks[0]?.detail), /state/);
  });

  it('another site’s callbacks (images, a link) lock no one out and leave the sign-in under way in place', async () => {
    const token = await new ReviewerStore(path.join(dir, 'review', 'reviewers.json')).add('erin');
    await startDesk(undefined, { tokens: true });
    const forged = `${deskUrl}/sign-in/oidc/callback?code=forged&state=forged`;
    const images = Array.from({ length: 10 }, (_, i) => `<img src="${forged}&i=${i}" alt="">`).join('');
    const attacker = await serveHtml(`<p>${images}</p><a href="${forged}">Read more</a>`);
    const from = audit.length;
    try {
      const page = await newPage();
      await page.goto('/');
      await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();
      await page.getByPlaceholder('Enter any login').waitFor();
      // The reviewer, mid-sign-in, opens a mail or page of another site (another site: localhost, not 127.0.0.1).
      const mail = await page.context().newPage();
      await mail.goto(attacker.url); // which waits for the page's load: every image answered
      await mail.getByRole('link', { name: 'Read more' }).click();
      await mail.getByRole('heading', { name: 'Refused' }).waitFor();
      await page.getByPlaceholder('Enter any login').fill('alice');
      await page.getByPlaceholder('and password').fill('any password');
      await page.getByRole('button', { name: 'Sign-in' }).click();
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByText('alice@example.org').waitFor();

      const other = await newPage();
      await other.goto('/sign-in');
      await other.getByLabel('Token').fill(token);
      await other.getByRole('button', { name: 'Sign in', exact: true }).click();
      await other.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
      const since = audit.slice(from);
      assert.ok(
        since.some((e) => e.event === 'request-refused' && e.reason === 'oidc-callback'),
        'they reached it',
      );
      assert.deepEqual(refusalsSince(from), [], 'none counted as a failed sign-in');
    } finally {
      await attacker.close();
      await startDesk();
    }
  });

  it('keeps the session across a restart of the desk, and ends it once the email is no longer allowed', async () => {
    const page = await newPage();
    await signInAs(page, 'alice');
    await page.getByText('alice@example.org').waitFor();
    await startDesk();
    await gotoAfterRestart(page, '/done');
    await page.getByRole('heading', { name: 'Completed episodes' }).waitFor();
    await startDesk(['carol@example.org']);
    await gotoAfterRestart(page, '/');
    assert.equal(new URL(page.url()).pathname, '/sign-in');
    assert.ok(audit.some((e) => e.event === 'session-ended' && e.reason === 'identity'));
    await startDesk();
  });
});

/**
 * A navigation right after the desk restarted on the same port. Chromium may send it on a pooled connection the old
 * desk closed and show its error page; a reviewer reloads, and so does this (once). The session is what is tested.
 */
async function gotoAfterRestart(page: Page, url: string): Promise<void> {
  try {
    await page.goto(url);
  } catch (e) {
    if (!/chrome-error|net::ERR_/.test(String(e))) throw e;
    await page.goto(url);
  }
}
