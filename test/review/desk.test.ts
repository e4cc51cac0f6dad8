/**
 * The review desk in Chromium, as a reviewer uses it (labels and button names): sign-in, the waiting list, the
 * episode page with its playable video, decisions sent as the CLI's updates, and the protections (session, CSRF,
 * escaping, media paths, sign-in rate limit).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { statusQuery } from '../../src/workflows/messages';
import { productionWorkflowId } from '../../src/domain/names';
import type { EpisodeId } from '../../src/domain/episode-id';
import { until } from '../helpers/wait';
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
    const id = await h.waitingEpisode('desk-approve');
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
    assert.deepEqual(
      (await decisionsOf(id)).map((d) => [d.kind, d.by, d.round]),
      [['approve', 'alice', 0]],
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
});
