/**
 * Telling the reviewer that a round waits, beside the approval wait and never in its way: the round's notice is
 * prepared (cost so far, budget, link) and sent to the review webhook inside one cancellation scope that nothing
 * awaits. When the round closes, whatever is still running (a webhook being retried) is cancelled: a notice about a
 * decided round would only mislead. A failure is logged here; the send activity itself logs and counts each attempt.
 */
import { CancellationScope, isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ReviewNotice } from '../domain/review-notice';
import { lifecycleActivityOptions, reviewNoticeActivityOptions } from './activity-options';

const { prepareReviewNotice } = proxyActivities<Activities>(lifecycleActivityOptions);
const { sendReviewNotice } = proxyActivities<Activities>(reviewNoticeActivityOptions);

export interface RoundNotice {
  /** The round has its decision (or expired): stop notifying, and never show this round's notice again. */
  close(): void;
}

/**
 * Starts the notice of one round; `show` gets the prepared notice while the round is still open (for the details).
 * Returns at once: the caller goes on to wait for the decision.
 */
export function announceRound(
  episodeId: string,
  round: number,
  waitingSince: string,
  show: (notice: ReviewNotice) => void,
): RoundNotice {
  let open = true;
  const scope = new CancellationScope();
  const meta = { episodeId, round };
  const sending = scope.run(async () => {
    const { notice, webhook } = await prepareReviewNotice({ episodeId, round, waitingSince });
    if (open) show(notice);
    if (webhook) await sendReviewNotice(notice);
  });
  // Handled here, so no failure of the notice can fail the workflow task or the production.
  sending.catch((e: unknown) => {
    if (isCancellation(e)) return;
    log.warn('review notice not delivered: the round waits without it', { ...meta, error: e });
  });
  return {
    close() {
      open = false;
      scope.cancel();
    },
  };
}

/** Announces nothing: runs started before the review-notice patch. */
export const NO_ROUND_NOTICE: RoundNotice = { close: () => undefined };
