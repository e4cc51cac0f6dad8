/**
 * Zero-cost bookkeeping of an episode's production: status, approval, completion and history. No vendor, no
 * credentials; still guarded, because a workflow must never conjure an episode by writing its state.
 */
import { parseEpisodeId } from '../domain/episode-id';
import type { Approval, EpisodeState, HistoryEntry, MediaFile } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { failpoint } from '../failpoints';
import { ledgerProblems, settleBeforeCompletion } from './completion-check';
import { withFailureMapping } from './failures';
import type { PaidStepDeps } from './paid-step-call';
import { withReassertion } from './reassertion';

export interface ProgressInput {
  episodeId: string;
  status: 'in_production' | 'awaiting_approval' | 'failed';
  approval?: Approval;
}

export interface CompleteInput {
  episodeId: string;
  /** Workflow time, so a retried completion records the same instant. */
  completedAt: string;
  /** Step keys (`assembly-r0`, `cover-r0`) of the final media. */
  finalVideo: string;
  finalCover: string;
}

/** The vendor is reached only by completion, and only to settle a charge the store forgot (see completion-check.ts). */
export function createLifecycleActivities(deps: PaidStepDeps) {
  const { store } = deps;

  async function recordProgress(input: ProgressInput): Promise<void> {
    const { episodeId } = parseEpisodeId(input.episodeId);
    await store.requireEpisode(episodeId);
    await store.updateEpisode(episodeId, (s) =>
      s.status === 'completed' ? s : { ...s, status: input.status, approval: input.approval ?? s.approval },
    );
    await failpoint('progress.recorded');
  }

  async function completeEpisode(input: CompleteInput): Promise<HistoryEntry> {
    const { episodeId } = parseEpisodeId(input.episodeId);
    const final = [input.finalVideo, input.finalCover];
    const before = await store.requireEpisode(episodeId);
    if (before.status !== 'completed') await settleBeforeCompletion(deps, before, final);
    const state = await store.updateEpisode(episodeId, (s) => {
      const video = s.media[input.finalVideo];
      const cover = s.media[input.finalCover];
      if (!video || !cover) {
        throw new PipelineError(
          ErrorType.InvalidState,
          `${episodeId}: final media ${input.finalVideo}/${input.finalCover} missing`,
        );
      }
      if (s.status === 'completed') return s;
      const problems = ledgerProblems(s, final);
      if (problems.length > 0) {
        // Retryable: the next attempt settles what changed since (the store went back again) from the vendor.
        throw new PipelineError(
          ErrorType.RemoteJobUnknown,
          `${episodeId}: not completed, the ledger does not match the steps: ${problems.join('; ')}`,
        );
      }
      return { ...s, status: 'completed', completed_at: input.completedAt, media: { ...s.media, video, cover } };
    });
    await failpoint('completion.state-written');
    const entry = historyEntryOf(state);
    await store.appendHistory(entry);
    return entry;
  }

  /** After a reassembly: the episode's final video becomes the new assembly's output. History stays as written. */
  async function recordReassembly(input: { episodeId: string; assemblyStep: string }): Promise<void> {
    const { episodeId } = parseEpisodeId(input.episodeId);
    await store.requireEpisode(episodeId);
    await store.updateEpisode(episodeId, (s) => {
      const video = s.media[input.assemblyStep];
      if (!video) throw new PipelineError(ErrorType.InvalidState, `${episodeId}: no media for ${input.assemblyStep}`);
      return { ...s, media: { ...s.media, video } };
    });
  }

  return {
    // An episode the store forgot (a restore, a failover) is re-asserted from Temporal's record first (reassertion.ts).
    recordProgress: (input: ProgressInput) =>
      withFailureMapping(() => withReassertion(deps, input.episodeId, () => recordProgress(input))),
    recordReassembly: (input: { episodeId: string; assemblyStep: string }) =>
      withFailureMapping(() => withReassertion(deps, input.episodeId, () => recordReassembly(input))),
    completeEpisode: (input: CompleteInput) =>
      withFailureMapping(() => withReassertion(deps, input.episodeId, () => completeEpisode(input))),
  };
}

export function historyEntryOf(state: EpisodeState): HistoryEntry {
  const media: Record<string, MediaFile> = {};
  for (const name of ['video', 'cover'] as const) if (state.media[name]) media[name] = state.media[name];
  return {
    schema: 'history-entry/v1',
    episode_id: state.episode_id,
    week_id: state.week_id,
    sequence: state.sequence,
    allocation_key: state.allocation_key,
    completed_at: state.completed_at!,
    remote_jobs: Object.values(state.steps)
      .filter((s) => s.remote_job_id !== null)
      .map((s) => ({ step: s.step, round: s.round, remote_job_id: s.remote_job_id! })),
    ledger: state.ledger,
    total_cost_cents: state.ledger.reduce((sum, l) => sum + l.amount_cents, 0),
    currency: state.ledger[0]?.currency ?? 'USD',
    approval: state.approval,
    media,
  };
}
