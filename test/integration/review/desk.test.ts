/**
 * The review desk in Chromium, as a reviewer uses it (labels and button names): sign-in, the waiting list, the
 * episode page with its playable video, decisions sent as the CLI's updates, and the protections (session, CSRF,
 * escaping, media paths, sign-in rate limit).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { approveSignal, statusQuery } from '../../../src/workflows/messages';
import { createMediaRenderer } from '../../../src/vendor-sim/media-render';
import { SCHEDULE_ID, productionWorkflowId } from '../../../src/domain/names';
import { weeklyScheduleOptions } from '../../../src/cli/schedule-commands';
import { openPublishedPrices, openReviewSessions } from '../../../src/store/open-store';
import type { EpisodeId } from '../../../src/domain/episode-id';
import { isoWeekOfInstant } from '../../../src/domain/week-id';
import { PRICES_MAX_AGE_MS } from '../../../src/store/published-prices';
import { startTestVendor } from '../../../testkit/deps';
import { until } from '../../../testkit/wait';
import { useDeskHarness } from './harness';

describe('review desk (Chromium)', function () {
  this.timeout(120_000);
  const h = useDeskHarness('review-desk');

  const decisionsOf = async (id: EpisodeId) =>
    (await h.env.client.workflow.getHandle(productionWorkflowId(id)).query(statusQuery)).decisions ?? [];

  it('signs in, lists the waiting episode, plays its video and serves Range requests', async () => {
    const id = await h.waitingEpisode('desk-view');
    const { page, context } = await h.signedIn(await h.reviewers.add('alice'));
    const row = page.getByRole('row', { name: new RegExp(id) });
    await row.waitFor();
    assert.match(await row.innerText(), /\b0\b/); // round 0
    assert.match(await row.innerText(), /45\.00 USD of 200\.00 USD/); // video 42 + cover 3, against the budget
    await page.getByRole('link', { name: id }).click();
    await page.getByRole('heading', { name: `Episode ${id}` }).waitFor();
    const video = page.getByLabel('Round 0').first();
    await until('the video to load', () =>
      video.evaluate((v: { videoWidth: number }) => (v.videoWidth > 0 ? v.videoWidth : undefined)),
    );
    assert.equal(await video.evaluate((v: { videoWidth: number }) => v.videoWidth), 320);
    assert.equal(
      await page.getByRole('img', { name: `Cover of ${id}` }).evaluate((i: { naturalWidth: number }) => i.naturalWidth),
      640,
    );
    assert.equal(await page.getByText('Preview not playable').count(), 0);
    const dir = process.env.EPISODES_SCREENSHOT_DIR ?? h.dir;
    await page.screenshot({ path: path.join(dir, 'review-desk-episode.png'), fullPage: true });

    const state = (await h.store.getEpisode(id))!;
    const file = readFileSync(path.join(h.store.mediaDir(id), state.media['video-r0']!.path));
    const res = await context.request.get(`/episodes/${id}/media/video-r0`, { headers: { range: 'bytes=100-299' } });
    assert.equal(res.status(), 206);
    assert.equal(res.headers()['content-range'], `bytes 100-299/${file.length}`);
    assert.equal(res.headers()['content-type'], 'video/mp4');
    assert.ok((await res.body()).equals(file.subarray(100, 300)));
  });

  it('the decision form shows what Approve and a rework cost at the prices a worker published, and the budget left', async () => {
    const id = await h.waitingEpisode('desk-costs');
    const { page } = await h.signedIn(await h.reviewers.add('alice'));
    await page.goto(`/episodes/${id}`);
    const form = page.getByRole('region', { name: 'Decision' });
    // Spent so far: video 42 + cover 3, of a 200 USD budget.
    await form.getByText('Budget left: 155.00 USD of 200.00 USD.').waitFor();
    await form.getByText('Approve costs 8.00 USD (assembly); budget left after: 147.00 USD.').waitFor();
    await form.getByText('A rework costs 15.00 USD (rework round 1); budget left after: 140.00 USD.').waitFor();
    assert.equal(await page.getByText(/not known|unavailable/).count(), 0);
    await page.goto('/');
    await page.getByText('Next paid step: approve: assembly 8.00 USD · rework: 15.00 USD.').waitFor();

    // The numbers are the vendor's as a worker published them: a newer list shows at once, and a choice over the
    // budget says so.
    const dear = await startTestVendor({ pricesCents: { assembly: 1234, rework: 25_000 } });
    try {
      await h.publishPrices(dear);
    } finally {
      await dear.close();
    }
    await page.goto(`/episodes/${id}`);
    await page.getByText('Approve costs 12.34 USD (assembly); budget left after: 142.66 USD.').waitFor();
    await page
      .getByText('A rework costs 250.00 USD (rework round 1); budget left after: -95.00 USD.', { exact: false })
      .waitFor();
    await page.getByText('Over the budget by 95.00 USD: the vendor step would be refused.').waitFor();

    // A metered step (cost known at completion) shows its estimate up to its declared maximum; the budget left after
    // is the worst case, which is what the step's budget check holds.
    const listed = (await openPublishedPrices(h.store).read())!;
    const rework = { amount_cents: 1500, currency: 'USD', max_cents: 4000 };
    await openPublishedPrices(h.store).publish({ ...listed, prices: { ...listed.prices, rework } });
    await page.goto(`/episodes/${id}`);
    await page.getByText('A rework costs 15.00 – 40.00 USD (rework round 1); budget left after: 115.00 USD.').waitFor();

    // No worker has published for longer than the desk trusts a list: the reason, never a number.
    const store = openPublishedPrices(h.store);
    const published = (await store.read())!;
    const old = new Date(Date.now() - PRICES_MAX_AGE_MS - 60_000).toISOString();
    await store.publish({ ...published, fetched_at: old });
    const since = `no worker has published prices since ${old}`;
    await page.goto(`/episodes/${id}`);
    await page.getByText(`Approve costs: price unavailable: ${since}.`).waitFor();
    await page.getByText(`A rework costs: price unavailable: ${since}.`).waitFor();
    assert.equal(await page.getByText(/\d+\.\d\d USD \((assembly|rework)/).count(), 0, 'no price shown');
    await page.goto('/');
    await page.getByText(`Next paid step: price unavailable: ${since}.`).waitFor();
    // None at all (a store no worker has run on yet).
    unlinkSync(path.join(h.dir, 'vendor-prices.json'));
    await page.reload();
    await page.getByText('Next paid step: price unavailable: no worker has published prices yet.').waitFor();
  });

  it('says the preview is not playable when the vendor had no ffmpeg (synthetic bytes)', async () => {
    const id = await h.waitingEpisode('desk-synthetic');
    // What the simulator serves without ffmpeg: random bytes labelled video/mp4 (media-render.test.ts shows it).
    const state = (await h.store.getEpisode(id))!;
    writeFileSync(path.join(h.store.mediaDir(id), state.media['video-r0']!.path), randomBytes(8192));
    const { page } = await h.signedIn(await h.reviewers.add('alice'));
    await page.goto(`/episodes/${id}`);
    await page.getByText('Preview not playable').waitFor();
    await page.getByRole('button', { name: 'Approve' }).waitFor();
  });

  it('approve: the page shows the accepted decision and the episode completes', async () => {
    // This week, so that the Done page's preview counts it: a run triggered now takes the next sequence.
    const id = await h.waitingEpisode('desk-approve', isoWeekOfInstant(new Date(), 'UTC'));
    const { page } = await h.signedIn(await h.reviewers.add('alice'));
    await page.goto(`/episodes/${id}`);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('status').getByText('Accepted: round 0 approved by alice.').waitFor();
    await h.waitForState(id, 'completed', (s) => s.status === 'completed');
    await page.goto(`/episodes/${id}`);
    await page.getByRole('heading', { name: 'Final video' }).waitFor();
    await page.goto('/done');
    await page.getByRole('link', { name: id }).waitFor();
    await page.getByRole('img', { name: /Spend per week/ }).waitFor();
    // `episodes preview` on the Done page: no schedule yet, then a paused one (which never fires).
    await page.getByText(/No preview: schedule weekly-media does not exist/).waitFor();
    const note = 'desk test: never runs';
    await h.env.client.schedule.create(
      weeklyScheduleOptions({ scheduleId: SCHEDULE_ID, taskQueue: 'desk-no-runs', timezone: 'UTC', pausedNote: note }),
    );
    await page.goto('/done');
    await page.getByRole('heading', { name: 'Next episodes' }).waitFor();
    const now = page.getByRole('row', { name: /now \(trigger\)/ });
    const [week, seq] = [id.slice(0, 8), Number(id.slice(9))];
    assert.equal(week, isoWeekOfInstant(new Date(), 'UTC'));
    assert.match((await now.textContent()) ?? '', new RegExp(`${week}\\s*${week}-${seq + 1}\\b`));
    await page.getByText(/Ids are decided when a run starts, by allocation/).waitFor();
    await h.env.client.schedule.getHandle(SCHEDULE_ID).delete();
    assert.deepEqual(
      (await decisionsOf(id)).map((d) => [d.kind, d.by, d.round, d.channel]),
      [['approve', 'alice', 0, 'desk']],
    );
  });

  it('rework with notes: round 1 waits, the earlier round shows the notes', async () => {
    const id = await h.waitingEpisode('desk-rework');
    const { page } = await h.signedIn(await h.reviewers.add('bob'));
    await page.goto(`/episodes/${id}`);
    await page.getByLabel('Notes').fill('Shorter intro, please.');
    await page.getByRole('button', { name: 'Request rework' }).click();
    await page.getByRole('status').getByText('Accepted: round 0 rework requested by bob.').waitFor();
    await h.waitForState(id, 'round 1 waiting', (s) => s.approval?.status === 'pending' && !!s.media['rework-r1']);
    await page.goto('/');
    const row = page.getByRole('row', { name: new RegExp(id) });
    assert.match(await row.innerText(), /\t1\t/);
    await page.goto(`/episodes/${id}`);
    await page.getByRole('heading', { name: 'Decision on round 1' }).waitFor();
    await page.getByText('Shorter intro, please.').waitFor();
  });

  it('after a rework, approving round 1 by signal: media, labels and decisions name round 1 and the channel; the chart label is whole', async () => {
    // This week, so that the Done page's chart (the last 12 weeks) shows it.
    const id = await h.waitingEpisode('desk-rounds', isoWeekOfInstant(new Date(), 'UTC'));
    const { page } = await h.signedIn(await h.reviewers.add('bob'));
    await page.goto(`/episodes/${id}`);
    await page.getByLabel('Notes').fill('Warmer.');
    await page.getByRole('button', { name: 'Request rework' }).click();
    await h.waitForState(id, 'round 1 waiting', (s) => s.approval?.status === 'pending' && !!s.media['rework-r1']);
    await h.env.client.workflow.getHandle(productionWorkflowId(id)).signal(approveSignal, { by: 'carol', round: 1 });
    const done = await h.waitForState(id, 'completed', (s) => s.status === 'completed');

    // The final video is the assembly of round 1's cut, and its picture says so (renders are bit-exact).
    const final = readFileSync(path.join(h.store.mediaDir(id), done.media.video!.path));
    const render = (round: number) => createMediaRenderer().render({ kind: 'assembly', episodeId: id, round });
    assert.ok(final.equals((await render(1))!), 'the final video reads "assembly of round 1"');
    assert.ok(!final.equals((await render(0))!));
    await page.goto(`/episodes/${id}`);
    await page.getByLabel('Final video, assembled from round 1').waitFor();
    await page.getByText('last decision: approved by carol through a Temporal signal').waitFor();
    const decisions = page.getByRole('region', { name: 'Decisions' });
    assert.match(
      await decisions.getByRole('row', { name: /bob/ }).innerText(),
      /^0\trework requested\tbob\tthe review desk\t\d{4}-/,
    );
    assert.match(
      await decisions.getByRole('row', { name: /carol/ }).innerText(),
      /^1\tapproved\tcarol\ta Temporal signal\t/,
    );

    // The Done page's chart at 1280 px: every label inside the SVG, the budget axis label whole.
    await page.goto('/done');
    assert.equal(page.viewportSize()?.width, 1280);
    const chart = page.getByRole('img', { name: /Spend per week/ });
    const boxes = await chart.evaluate((svg) => {
      const outer = svg.getBoundingClientRect();
      return [...svg.querySelectorAll('text')].map((t) => {
        const r = t.getBoundingClientRect();
        return { text: t.textContent?.trim(), left: r.left - outer.left, right: outer.right - r.right };
      });
    });
    const axis = boxes.find((b) => b.text?.endsWith('USD'));
    assert.equal(axis?.text, '200.00 USD');
    for (const b of boxes) assert.ok(b.left >= 0 && b.right >= 0, `"${b.text}" inside the chart: ${JSON.stringify(b)}`);
  });

  it('approve in two tabs (and by a second reviewer): exactly one decision', async () => {
    const id = await h.waitingEpisode('desk-two-tabs');
    const alice = await h.signedIn(await h.reviewers.add('alice'));
    const second = await alice.context.newPage();
    const bob = await h.signedIn(await h.reviewers.add('bob'));
    for (const p of [alice.page, second, bob.page]) await p.goto(`/episodes/${id}`);
    await alice.page.getByRole('button', { name: 'Approve' }).click();
    await alice.page
      .getByRole('status')
      .getByText(/^Accepted/)
      .waitFor();
    await second.getByRole('button', { name: 'Approve' }).click();
    // The same reviewer's same decision has the same update ID: the first answer again, not a second decision.
    await second.getByRole('status').getByText('Accepted: round 0 approved by alice.').waitFor();
    await bob.page.getByRole('button', { name: 'Approve' }).click();
    await bob.page
      .getByRole('status')
      .getByText(/^Refused: /)
      .waitFor();
    assert.equal((await decisionsOf(id)).length, 1);
  });

  it('reviewer names and rework notes holding markup render as text', async () => {
    const id = await h.waitingEpisode('desk-escape');
    const name = '<img src=x onerror="document.title=\'pwned\'">';
    const notes = '<script>document.title="pwned"</script> and <b>bold</b>';
    const { page } = await h.signedIn(await h.reviewers.add(name));
    await page.getByText(name).first().waitFor(); // the header shows the reviewer's name, as text
    await page.goto(`/episodes/${id}`);
    await page.getByLabel('Notes').fill(notes);
    await page.getByRole('button', { name: 'Request rework' }).click();
    await page.getByRole('status').getByText(`Accepted: round 0 rework requested by ${name}.`).waitFor();
    await h.waitForState(id, 'round 1 waiting', (s) => s.approval?.status === 'pending' && !!s.media['rework-r1']);
    await page.goto(`/episodes/${id}`);
    await page.getByText(notes).waitFor();
    assert.equal(await page.locator('img[onerror], b, main script').count(), 0);
    assert.notEqual(await page.title(), 'pwned');
  });

  it('a POST without the CSRF token is refused and decides nothing', async () => {
    const id = await h.waitingEpisode('desk-csrf');
    const { context } = await h.signedIn(await h.reviewers.add('alice'));
    // From the desk's own origin (so only the CSRF check can refuse it).
    const headers = { origin: h.url };
    const res = await context.request.post(`/episodes/${id}/decision`, {
      form: { action: 'approve', round: '0' },
      headers,
      maxRedirects: 0,
    });
    assert.equal(res.status(), 403);
    const forged = await context.request.post(`/episodes/${id}/decision`, {
      form: { action: 'approve', round: '0', _csrf: 'not-a-token' },
      headers,
      maxRedirects: 0,
    });
    assert.equal(forged.status(), 403);
    assert.equal((await decisionsOf(id)).length, 0);
  });

  it('without a session: only the sign-in page, nothing decided, no media', async () => {
    const id = await h.waitingEpisode('desk-anon');
    const context = await h.browser.newContext({ baseURL: h.url });
    try {
      const page = await context.newPage();
      for (const p of ['/', `/episodes/${id}`, '/done', `/episodes/${id}/media/video-r0`, '/no-such-page']) {
        await page.goto(p);
        assert.equal(new URL(page.url()).pathname, '/sign-in', p);
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        assert.ok(!(await page.content()).includes(id), `${p} must not show the episode`);
      }
      const media = await context.request.get(`/episodes/${id}/media/video-r0`, { maxRedirects: 0 });
      assert.equal(media.status(), 303);
      assert.equal((await media.body()).length, 0);
      const post = await context.request.post(`/episodes/${id}/decision`, {
        form: { action: 'approve', round: '0' },
        headers: { origin: h.url },
      });
      assert.equal(post.status(), 401);
      assert.equal((await decisionsOf(id)).length, 0);
      assert.equal((await context.request.get('/health')).status(), 200);
    } finally {
      await context.close();
    }
  });

  it('a traversal in a media path, or a state record pointing outside, gets 404', async () => {
    const id = await h.waitingEpisode('desk-traversal');
    const { context } = await h.signedIn(await h.reviewers.add('alice'));
    const attempts = [
      `/episodes/${id}/media/..%2Fstate.json`,
      `/episodes/${id}/media/..%2F..%2F..%2Freview%2Freviewers.json`,
      `/episodes/${id}/media/%2e%2e%2fstate.json`,
      `/episodes/${id}/media/video-r0%00.png`,
      `/episodes/..%2F${id}/media/video-r0`,
      `/episodes/${id}/media/state`,
      `/episodes/${id}/media/__proto__`,
    ];
    for (const p of attempts) assert.equal((await context.request.get(p)).status(), 404, p);
    // A media record naming a file outside the episode's directory is not served either, even when it exists.
    writeFileSync(
      path.join(h.dir, 'outside.png'),
      readFileSync(path.join(h.store.mediaDir(id), 'media', 'cover-r0.png')),
    );
    await h.store.updateEpisode(id, (s) => ({
      ...s,
      media: { ...s.media, 'cover-r0': { ...s.media['cover-r0']!, path: '../../outside.png' } },
    }));
    assert.equal((await context.request.get(`/episodes/${id}/media/cover-r0`)).status(), 404);
    assert.equal((await context.request.get(`/episodes/${id}/media/video-r0`)).status(), 200);
  });

  it('failed sign-ins are limited per address; right tokens never count', async () => {
    await h.restartDesk({ signInLimit: { max: 3, timeWindowMs: 60_000 } });
    const token = await h.reviewers.add('alice');
    const context = await h.browser.newContext({ baseURL: h.url });
    try {
      const page = await context.newPage();
      const attempt = async (t: string) => {
        await page.goto('/sign-in');
        await page.getByLabel('Token').fill(t);
        const [response] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST'),
          page.getByRole('button', { name: 'Sign in' }).click(),
        ]);
        return response.status();
      };
      // Right tokens, more often than the limit: none counts.
      for (let i = 0; i < 4; i++) {
        assert.equal(await attempt(token), 303);
        await page.getByRole('button', { name: 'Sign out' }).click();
      }
      const wrong = `rvw_${'A'.repeat(43)}`;
      assert.deepEqual([await attempt(wrong), await attempt(wrong), await attempt(wrong)], [401, 401, 401]);
      assert.equal(await attempt(wrong), 429);
      assert.equal(await attempt(token), 429, 'this address is refused for a while, whatever it sends');
      await page.getByText('Too many failed sign-ins').waitFor();
      const refused = h.audit.filter((e) => e.event === 'sign-in' && e.outcome === 'refused');
      assert.equal(refused.length, 5);
      assert.deepEqual(new Set(refused.map((e) => e.ip)), new Set(['127.0.0.1']));
    } finally {
      await context.close();
    }
  });

  it('a session survives a restart of the desk: the page opened before it still decides', async () => {
    const id = await h.waitingEpisode('desk-restart');
    const { page } = await h.signedIn(await h.reviewers.add('alice'));
    await page.goto(`/episodes/${id}`);
    await h.restartDesk();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('status').getByText('Accepted: round 0 approved by alice.').waitFor();
    const stored = JSON.stringify(await openReviewSessions(h.store).list());
    const cookie = (await page.context().cookies()).find((c) => c.name === 'episodes_review_session')!.value;
    assert.ok(!stored.includes(cookie), 'the store keeps only a digest of the session id');
  });

  it('rotating or removing a reviewer signs them out at their next page; others stay', async () => {
    const alice = await h.signedIn(await h.reviewers.add('alice'));
    const bob = await h.signedIn(await h.reviewers.add('bob'));
    await h.reviewers.rotate('alice');
    await alice.page.goto('/done');
    await alice.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await bob.page.goto('/done');
    await bob.page.getByRole('heading', { name: 'Completed episodes' }).waitFor();
    await h.reviewers.remove('bob');
    await bob.page.goto('/done');
    await bob.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.deepEqual(
      h.audit.filter((e) => e.event === 'session-ended').map((e) => [e.reviewer, e.reason]),
      [
        ['alice', 'identity'],
        ['bob', 'identity'],
      ],
    );
  });

  it('a CSRF pair planted from another browser, or the own form posted from another origin, decides nothing', async () => {
    const id = await h.waitingEpisode('desk-planted');
    const victim = await h.signedIn(await h.reviewers.add('alice'));
    // The attacker's own browser: the public sign-in page hands out a pre-session cookie and its token.
    const attacker = await h.browser.newContext({ baseURL: h.url });
    try {
      const form = await attacker.newPage();
      await form.goto('/sign-in');
      const plantedToken = await form.locator('input[name="_csrf"]').first().inputValue();
      const plantedCookie = (await attacker.cookies()).find((c) => c.name === 'episodes_review_sign_in')!;
      // Planted in the victim's browser (cookies ignore ports: another port of the host could set it).
      await victim.context.addCookies([plantedCookie]);
      const planted = await victim.context.request.post(`/episodes/${id}/decision`, {
        form: { action: 'approve', round: '0', _csrf: plantedToken },
        headers: { origin: h.url },
        maxRedirects: 0,
      });
      assert.equal(planted.status(), 403);
    } finally {
      await attacker.close();
    }
    await victim.page.goto(`/episodes/${id}`);
    const ownToken = await victim.page.locator('input[name="_csrf"]').first().inputValue();
    const foreignHeaders: Record<string, string>[] = [
      { origin: 'http://127.0.0.1:9' },
      { origin: h.url, 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of foreignHeaders) {
      const foreign = await victim.context.request.post(`/episodes/${id}/decision`, {
        form: { action: 'approve', round: '0', _csrf: ownToken },
        headers,
        maxRedirects: 0,
      });
      assert.equal(foreign.status(), 403, JSON.stringify(headers));
    }
    assert.equal((await decisionsOf(id)).length, 0);
    assert.deepEqual(
      h.audit.filter((e) => e.event === 'request-refused').map((e) => e.reason),
      ['csrf', 'origin', 'origin'],
    );
    // The real form still works.
    await victim.page.getByRole('button', { name: 'Approve' }).click();
    await victim.page.getByRole('status').getByText('Accepted: round 0 approved by alice.').waitFor();
  });

  it('behind a proxy: 11 failures from other addresses lock out only those; a reviewer still signs in', async () => {
    await h.restartDesk({ trustProxy: 1, signInLimit: { max: 10, timeWindowMs: 60_000 } });
    const token = await h.reviewers.add('alice');
    const attacker = await h.browser.newContext({ baseURL: h.url });
    try {
      const form = await attacker.newPage();
      await form.goto('/sign-in');
      const _csrf = await form.locator('input[name="_csrf"]').first().inputValue();
      const wrong = (forwardedFor: string) =>
        attacker.request.post('/sign-in', {
          form: { token: `rvw_${'A'.repeat(43)}`, _csrf },
          headers: { origin: h.url, 'x-forwarded-for': forwardedFor },
          maxRedirects: 0,
        });
      const statuses: number[] = [];
      for (let i = 1; i <= 11; i++) statuses.push((await wrong(`10.0.0.${i}`)).status());
      for (let i = 1; i <= 11; i++) statuses.push((await wrong('10.0.9.9')).status());
      assert.deepEqual(statuses, [...Array<number>(21).fill(401), 429]);
    } finally {
      await attacker.close();
    }
    // The reviewer, through the same proxy from a 12th address, signs in with the form.
    const context = await h.browser.newContext({ baseURL: h.url });
    try {
      const page = await context.newPage();
      await page.route(/\/sign-in$/, (route) =>
        route.continue({ headers: { ...route.request().headers(), 'x-forwarded-for': '10.0.0.12' } }),
      );
      await page.goto('/sign-in');
      await page.getByLabel('Token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
    } finally {
      await context.close();
    }
    const signIns = h.audit.filter((e) => e.event === 'sign-in');
    assert.equal(signIns.at(-1)?.ip, '10.0.0.12');
    assert.equal(signIns.at(-1)?.outcome, 'ok');
  });

  it('media: a symlink in place of the recorded file is not followed (404); the real file streams', async () => {
    const id = await h.waitingEpisode('desk-symlink');
    const { context } = await h.signedIn(await h.reviewers.add('alice'));
    const state = (await h.store.getEpisode(id))!;
    const video = path.join(h.store.mediaDir(id), state.media['video-r0']!.path);
    const secret = path.join(h.dir, 'review', 'reviewers.json');
    renameSync(video, `${video}.real`);
    symlinkSync(secret, video);
    assert.equal((await context.request.get(`/episodes/${id}/media/video-r0`)).status(), 404);
    unlinkSync(video);
    renameSync(`${video}.real`, video);
    assert.equal((await context.request.get(`/episodes/${id}/media/video-r0`)).status(), 200);
  });

  it('an unexpected error shows a generic page with an incident id; the detail is only in the audit log', async () => {
    await h.restartDesk({ getClient: () => Promise.reject(new Error('detail: /srv/secret/path.pem unreadable')) });
    const id = await h.waitingEpisode('desk-incident');
    const { page } = await h.signedIn(await h.reviewers.add('alice'));
    await page.goto(`/episodes/${id}`);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Approve' }).click(),
    ]);
    assert.equal(response.status(), 500);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    const incident = await page.locator('main code').innerText();
    assert.ok(!(await page.content()).includes('/srv/secret'), 'no detail on the page');
    const logged = h.audit.find((e) => e.event === 'error');
    assert.equal(logged?.incident, incident);
    assert.match(String(logged?.message), /\/srv\/secret\/path\.pem/);
  });
});
