/**
 * The paid boundary. Every activity here starts with the episode guard (an unknown id fails before credentials are
 * read or a vendor client exists) and then follows the submission protocol, persisted in the episode state under the
 * episode's lock:
 *
 *   intent (idempotency key) → submit → reference + quote saved → poll → artifact saved (sha256, size) → ledger
 *
 * Resuming at any point continues from what is saved: a saved reference is polled, never resubmitted; an intent
 * without a reference is looked up by client reference (by submission and by the wait alike); if the vendor cannot
 * say, the step needs an operator. An episode the store forgot (a restore) is re-asserted first (reassertion.ts). Submission lives in paid-step-submit.ts, the wait and the charge in
 * paid-step-settle.ts, what both share in paid-step-record.ts.
 */
import { withFailureMapping } from './failures';
import { withHeartbeat } from './heartbeat';
import type { CompletedStep, PaidStepDeps, PaidStepInput, SubmittedStep } from './paid-step-call';
import { awaitPaidStep } from './paid-step-settle';
import { submitPaidStep } from './paid-step-submit';
import { withReassertion } from './reassertion';

export type { CompletedStep, PaidStepDeps, PaidStepInput, SubmittedStep } from './paid-step-call';

/** The activities the workflows call, by these names and signatures (recorded histories replay against them). */
export function createPaidStepActivities(deps: PaidStepDeps) {
  return {
    submitPaidStep: (input: PaidStepInput): Promise<SubmittedStep> =>
      withHeartbeat(() =>
        withFailureMapping(() => withReassertion(deps, input.episodeId, () => submitPaidStep(deps, input))),
      ),
    awaitPaidStep: (input: Omit<PaidStepInput, 'spec'>): Promise<CompletedStep> =>
      withFailureMapping(() => withReassertion(deps, input.episodeId, () => awaitPaidStep(deps, input))),
  };
}
