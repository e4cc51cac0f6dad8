/** Builders for episode records in tests, with the key formats production uses (src/domain/names.ts). */
import type { EpisodeId } from '../src/domain/episode-id';
import type { PaidStep, StepRecord } from '../src/domain/episode-state';
import { idempotencyKey } from '../src/domain/names';

/** A paid step that succeeded and was charged: what the submission protocol leaves behind. */
export function succeededStep(
  episodeId: EpisodeId,
  step: PaidStep,
  round: number,
  at: string,
  fields: Partial<StepRecord> = {},
): StepRecord {
  return {
    step,
    round,
    idempotency_key: idempotencyKey(episodeId, step, round),
    status: 'succeeded',
    intent_at: at,
    spec: {},
    remote_job_id: `job-${episodeId}-${step}-r${round}`,
    submitted_at: at,
    quoted_cost: null,
    artifact: null,
    charged: true,
    reconciliation: null,
    error: null,
    ...fields,
  };
}
