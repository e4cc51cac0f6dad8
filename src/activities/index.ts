import type { EpisodeStore } from '../store/episode-store';
import type { Vendors } from '../vendors/port';
import { createAllocationActivities } from './allocation';
import type { AllocationRecords } from './allocation-records';
import { createLifecycleActivities } from './episode-lifecycle';
import { createPaidStepActivities } from './paid-steps';
import { createReviewNoticeActivities, type ReviewNoticeSettings } from './review-notice';

/** Everything activities need from the outside world; only worker.ts and tests build the real thing. */
export interface ActivityDeps {
  store: EpisodeStore;
  /** Opened (their keys read) only by paid activities, after their episode guard has passed. */
  vendors: Vendors;
  budgetCents: number;
  pollIntervalMs?: number;
  /** Temporal's records of allocations, to re-assert one the store forgot (reassertion.ts); none: no healing. */
  allocationRecords?: AllocationRecords;
  /** Where vendors that call back reach the worker (EPISODES_CALLBACK_PUBLIC_URL); none: every job is polled. */
  callbackUrl?: URL;
  /** Webhook and desk link of review notices; none when absent. */
  reviewNotice?: ReviewNoticeSettings;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createAllocationActivities(deps),
    ...createLifecycleActivities(deps),
    ...createPaidStepActivities(deps),
    ...createReviewNoticeActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
