/**
 * Telling reviewers that a production waits for them. `prepareReviewNotice` reads the facts (ledger, budget, link)
 * and builds the message, which the workflow keeps in its history and shows in its details; `sendReviewNotice` POSTs
 * exactly that message to the webhook, at least once, under one dedupe key per episode and round. The workflow never
 * waits for the send: a webhook that fails or hangs is retried, logged and counted, and delays nothing.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { parseEpisodeId } from '../domain/episode-id';
import { PipelineError, ErrorType } from '../domain/errors';
import { reviewNoticeKey } from '../domain/names';
import { buildReviewNotice, type ReviewNotice } from '../domain/review-notice';
import { failpoint } from '../failpoints';
import type { EpisodeStore } from '../store/episode-store';
import { withFailureMapping } from './failures';
import { withHeartbeat } from './heartbeat';
import { countReviewNotice } from './metrics';
import { settingDefault } from '../settings/table';

export interface ReviewNoticeSettings {
  /** Undefined: no webhook, nothing is sent (the details still show cost and link). A secret: never logged whole. */
  webhookUrl: URL | undefined;
  /** The review desk's base URL; undefined: notices carry no link. */
  publicUrl: URL | undefined;
  /** Of one POST. */
  timeoutMs: number;
}

export const DEFAULT_REVIEW_WEBHOOK_TIMEOUT_MS = settingDefault('EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS');

export const NO_REVIEW_NOTICES: ReviewNoticeSettings = {
  webhookUrl: undefined,
  publicUrl: undefined,
  timeoutMs: DEFAULT_REVIEW_WEBHOOK_TIMEOUT_MS,
};

export interface ReviewNoticeDeps {
  store: EpisodeStore;
  budgetCents: number;
  reviewNotice?: ReviewNoticeSettings;
}

export interface PrepareReviewNoticeInput {
  episodeId: string;
  round: number;
  /** Workflow time at which the round opened. */
  waitingSince: string;
}

export interface PreparedReviewNotice {
  notice: ReviewNotice;
  /** Whether this worker has a webhook to send it to (else the workflow starts no send). */
  webhook: boolean;
}

export function createReviewNoticeActivities(deps: ReviewNoticeDeps) {
  const { store } = deps;
  const settings = deps.reviewNotice ?? NO_REVIEW_NOTICES;

  async function prepareReviewNotice(input: PrepareReviewNoticeInput): Promise<PreparedReviewNotice> {
    const { episodeId } = parseEpisodeId(input.episodeId);
    const round = parseRound(input.round);
    const state = await store.requireEpisode(episodeId);
    const notice = buildReviewNotice({
      episodeId,
      weekId: state.week_id,
      round,
      costCents: state.ledger.reduce((sum, l) => sum + l.amount_cents, 0),
      budgetCents: deps.budgetCents,
      currency: state.ledger[0]?.currency ?? 'USD',
      waitingSince: input.waitingSince,
      publicUrl: settings.publicUrl,
    });
    return { notice, webhook: settings.webhookUrl !== undefined };
  }

  async function sendReviewNotice(notice: ReviewNotice): Promise<void> {
    // The dedupe key is derived, not read from the message: it must be the episode's and round's whatever it says.
    const { episodeId } = parseEpisodeId(notice.episode_id);
    const key = reviewNoticeKey(episodeId, parseRound(notice.round));
    const context = Context.current();
    const meta = { episodeId, round: notice.round, dedupeKey: key, attempt: context.info.attempt };
    const url = settings.webhookUrl;
    if (url === undefined) {
      // Prepared on a worker with a webhook, sent from one without: a deploy in between. Nothing to send to.
      context.log.warn('review notice not sent: this worker has no EPISODES_REVIEW_WEBHOOK_URL', meta);
      return;
    }
    const where = describeWebhook(url);
    const outcome = await withHeartbeat(() => post(url, key, notice, context.cancellationSignal));
    if (outcome.kind === 'answered' && outcome.status >= 200 && outcome.status < 300) {
      countReviewNotice('sent');
      context.log.info(`review notice sent to ${where}`, { ...meta, status: outcome.status });
      await failpoint('review-notice.sent');
      return;
    }
    if (outcome.kind === 'cancelled') throw outcome.reason;
    const retryable = outcome.kind === 'no-answer' || [408, 429].includes(outcome.status) || outcome.status >= 500;
    const what = outcome.kind === 'no-answer' ? outcome.reason : `HTTP ${outcome.status}`;
    countReviewNotice(retryable ? 'failed' : 'refused');
    context.log.warn(`review notice to ${where} failed: ${what}${retryable ? ', will retry' : ', not retried'}`, meta);
    throw ApplicationFailure.create({
      type: ErrorType.ReviewWebhookFailed,
      message: `review webhook ${where}: ${what}`,
      nonRetryable: !retryable,
    });
  }

  type PostOutcome =
    | { kind: 'answered'; status: number }
    | { kind: 'no-answer'; reason: string }
    | { kind: 'cancelled'; reason: unknown };

  async function post(url: URL, key: string, notice: ReviewNotice, cancelled: AbortSignal): Promise<PostOutcome> {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(notice),
        // A redirect could carry the message elsewhere; a 3xx counts as refused.
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(settings.timeoutMs), cancelled]),
      });
      // The body is not read: a receiver's answer is its status, and a huge or endless body must not hold the attempt.
      await response.body?.cancel().catch(() => undefined);
      return { kind: 'answered', status: response.status };
    } catch (e) {
      if (cancelled.aborted) return { kind: 'cancelled', reason: cancelled.reason };
      return { kind: 'no-answer', reason: failureReason(e, settings.timeoutMs) };
    }
  }

  return {
    prepareReviewNotice: (input: PrepareReviewNoticeInput) => withFailureMapping(() => prepareReviewNotice(input)),
    sendReviewNotice: (notice: ReviewNotice) => withFailureMapping(() => sendReviewNotice(notice)),
  };
}

function parseRound(round: unknown): number {
  if (typeof round !== 'number' || !Number.isInteger(round) || round < 0 || round > 10_000) {
    throw new PipelineError(ErrorType.InvalidInput, `invalid round ${String(round).slice(0, 20)}`);
  }
  return round;
}

/** What a log line may say about the webhook: its origin, never its path or query (where the token lives). */
export function describeWebhook(url: URL): string {
  return `${url.origin}/…`;
}

/** Why a POST got no answer, without the URL (errors of `fetch` may quote it). */
function failureReason(e: unknown, timeoutMs: number): string {
  if (e instanceof Error && e.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
  const cause = e instanceof Error ? (e.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string') return cause.code;
  return e instanceof Error ? e.name : 'unknown error';
}
