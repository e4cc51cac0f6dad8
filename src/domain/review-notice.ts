/**
 * The message that tells a reviewer a production waits for their decision. Its `text` is what a Slack incoming webhook
 * shows; the other fields are for any other receiver (snake_case, as in the store's files). Pure: the caller reads
 * the facts (store, configuration, workflow time) and passes them in. The shape is documented in docs/review-desk.md.
 */
import type { EpisodeId } from './episode-id';
import { formatMoney } from './money';
import { reviewNoticeKey } from './names';
import type { WeekId } from './week-id';

export const REVIEW_NOTICE_SCHEMA = 'review-notice/v1';

export interface ReviewNoticeFacts {
  episodeId: EpisodeId;
  weekId: WeekId;
  /** The round waiting for a decision: 0 for the first cut, n after the n-th rework. */
  round: number;
  /** The ledger's total so far (what the vendor has billed). */
  costCents: number;
  budgetCents: number;
  currency: string;
  /** Workflow time at which the round opened. */
  waitingSince: string;
  /** The review desk's public base URL (EPISODES_REVIEW_PUBLIC_URL), or undefined when none is configured. */
  publicUrl: URL | undefined;
}

export interface ReviewNotice {
  /** Slack-compatible text (mrkdwn, with `&`, `<` and `>` escaped as Slack requires). */
  text: string;
  schema: typeof REVIEW_NOTICE_SCHEMA;
  event: 'awaiting_decision';
  episode_id: string;
  week_id: string;
  round: number;
  cost_so_far_cents: number;
  /** `12.34 USD` */
  cost_so_far: string;
  budget_cents: number;
  budget: string;
  currency: string;
  waiting_since: string;
  /** The desk's episode page, `<public url>/episodes/<episode_id>`, or null when no public URL is configured. */
  link: string | null;
  /** Also sent as the `Idempotency-Key` header: one per episode and round, the same on every resend. */
  dedupe_key: string;
}

/** `<public url>/episodes/<episode_id>`, keeping a path prefix (`https://example.com/desk/` → `/desk/episodes/...`). */
export function reviewLink(publicUrl: URL, episodeId: EpisodeId): string {
  const base = new URL(publicUrl.href);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return new URL(`episodes/${encodeURIComponent(episodeId)}`, base).href;
}

export function buildReviewNotice(facts: ReviewNoticeFacts): ReviewNotice {
  const { episodeId, round, currency } = facts;
  const link = facts.publicUrl ? reviewLink(facts.publicUrl, episodeId) : null;
  const cost = formatMoney(facts.costCents, currency);
  const budget = formatMoney(facts.budgetCents, currency);
  const what = round === 0 ? 'the first cut' : `the cut of rework round ${round}`;
  // Only the link markup is Slack syntax; every other piece is escaped (the currency comes from the vendor's bills).
  const how = link
    ? `<${slackEscape(link).replace(/\|/g, '%7C')}|Review it on the desk>`
    : slackEscape(
        `Decide with \`npx episodes approve ${episodeId} --by NAME\` or \`npx episodes rework ${episodeId} --notes "..." --by NAME\`.`,
      );
  const text = [
    slackEscape(`*Episode ${episodeId}* is waiting for a decision on ${what} (round ${round}).`),
    slackEscape(`Cost so far: ${cost} of a ${budget} budget.`),
    how,
  ].join('\n');
  return {
    text,
    schema: REVIEW_NOTICE_SCHEMA,
    event: 'awaiting_decision',
    episode_id: episodeId,
    week_id: facts.weekId,
    round,
    cost_so_far_cents: facts.costCents,
    cost_so_far: cost,
    budget_cents: facts.budgetCents,
    budget,
    currency,
    waiting_since: facts.waitingSince,
    link,
    dedupe_key: reviewNoticeKey(episodeId, round),
  };
}

/** Slack reads `<...>` as a link or mention and `&` as an entity: the three characters it asks senders to escape. */
function slackEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
