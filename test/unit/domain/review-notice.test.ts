import assert from 'node:assert/strict';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import { buildReviewNotice, reviewLink, type ReviewNoticeFacts } from '../../../src/domain/review-notice';

const { episodeId, weekId } = parseEpisodeId('2026-W32-1');
const facts = (over: Partial<ReviewNoticeFacts> = {}): ReviewNoticeFacts => ({
  episodeId,
  weekId,
  round: 0,
  costCents: 1234,
  budgetCents: 20_000,
  currency: 'USD',
  waitingSince: '2026-08-03T09:05:00.000Z',
  publicUrl: new URL('https://desk.example.com/'),
  ...over,
});

describe('review notice message', () => {
  it('carries episode, week, round, cost and budget as cents and money, the link and the dedupe key', () => {
    const n = buildReviewNotice(facts({ round: 2 }));
    assert.deepEqual(
      { ...n, text: undefined },
      {
        text: undefined,
        schema: 'review-notice/v1',
        event: 'awaiting_decision',
        episode_id: '2026-W32-1',
        week_id: '2026-W32',
        round: 2,
        cost_so_far_cents: 1234,
        cost_so_far: '12.34 USD',
        budget_cents: 20_000,
        budget: '200.00 USD',
        currency: 'USD',
        waiting_since: '2026-08-03T09:05:00.000Z',
        link: 'https://desk.example.com/episodes/2026-W32-1',
        dedupe_key: '2026-W32-1:review:r2',
      },
    );
    assert.match(
      n.text,
      /^\*Episode 2026-W32-1\* is waiting for a decision on the cut of rework round 2 \(round 2\)\./,
    );
    assert.ok(n.text.includes('Cost so far: 12.34 USD of a 200.00 USD budget.'));
    assert.ok(n.text.includes('<https://desk.example.com/episodes/2026-W32-1|Review it on the desk>'));
  });

  it('is a Slack incoming-webhook body: a JSON object with a non-empty text', () => {
    const body = JSON.parse(JSON.stringify(buildReviewNotice(facts()))) as { text?: unknown };
    assert.equal(typeof body.text, 'string');
    assert.ok((body.text as string).length > 0);
    assert.match(body.text as string, /the first cut \(round 0\)/);
  });

  it('keeps a path prefix of the public URL, with or without its trailing slash', () => {
    for (const base of ['https://example.com/desk', 'https://example.com/desk/']) {
      assert.equal(reviewLink(new URL(base), episodeId), 'https://example.com/desk/episodes/2026-W32-1');
    }
    assert.equal(reviewLink(new URL('http://127.0.0.1:8240'), episodeId), 'http://127.0.0.1:8240/episodes/2026-W32-1');
  });

  it('without a public URL: no link, and the text says how to decide from the CLI', () => {
    const n = buildReviewNotice(facts({ publicUrl: undefined }));
    assert.equal(n.link, null);
    assert.ok(n.text.includes('npx episodes approve 2026-W32-1 --by NAME'));
    assert.ok(!n.text.includes('|Review it on the desk>'));
  });

  it('escapes what Slack reads as markup outside the one link it writes', () => {
    const n = buildReviewNotice(facts({ currency: '<!channel>&' }));
    assert.equal(n.currency, '<!channel>&', 'the structured field keeps the value');
    assert.ok(n.text.includes('12.34 &lt;!channel&gt;&amp;'), n.text);
    assert.ok(!n.text.includes('<!channel>'));
    assert.equal((n.text.match(/</g) ?? []).length, 1, 'only the link opens a Slack markup');
  });

  it('each round has its own dedupe key; the same round always the same', () => {
    const keys = [0, 1, 0].map((round) => buildReviewNotice(facts({ round })).dedupe_key);
    assert.deepEqual(keys, ['2026-W32-1:review:r0', '2026-W32-1:review:r1', '2026-W32-1:review:r0']);
  });
});
