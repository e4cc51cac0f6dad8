/**
 * What Temporal recorded of the productions (`episode-<id>`): whether one still runs, and for a completed one what its
 * `completeEpisode` activity was asked (final media, completion time) and answered (the history entry it wrote).
 * `episodes repair` re-applies a completion the store forgot from that record.
 */
import type { Client } from '@temporalio/client';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { historyEntrySchema, type HistoryEntry } from '../domain/episode-state';
import { ErrorType, PipelineError } from '../domain/errors';
import { episodeIdOfWorkflowId, productionWorkflowId } from '../domain/names';
import type { CompleteInput } from './episode-lifecycle';
import { recordedActivity } from './recorded-activity';

export interface RecordedCompletion {
  input: CompleteInput;
  entry: HistoryEntry;
}

export interface RecordedProduction {
  episodeId: EpisodeId;
  /** A run of `episode-<id>` is still open. */
  running: boolean;
  /** The completion of a run that completed, as recorded in its history. */
  completion?: RecordedCompletion;
}

/**
 * Every production of the task queue Temporal knows (one per episode, all its runs together), in episode order. The
 * task queue is the pipeline's: another one in the same namespace belongs to another store.
 */
export async function recordedProductions(client: Client, taskQueue: string): Promise<RecordedProduction[]> {
  const byEpisode = new Map<string, RecordedProduction>();
  for await (const run of client.workflow.list({ query: queueQuery('episodeProductionWorkflow', taskQueue) })) {
    const raw = episodeIdOfWorkflowId(run.workflowId);
    if (raw === undefined || productionWorkflowId(raw) !== run.workflowId) continue;
    const episodeId = parseEpisodeId(raw).episodeId;
    const p = byEpisode.get(episodeId) ?? { episodeId, running: false };
    byEpisode.set(episodeId, p);
    if (run.status.name === 'RUNNING') p.running = true;
    if (run.status.name === 'COMPLETED' && !p.completion) {
      p.completion = await completionOf(client, run.workflowId, run.runId);
    }
  }
  return [...byEpisode.values()].sort((a, b) => compareIds(a.episodeId, b.episodeId));
}

/** The visibility query for the workflows of one type on the pipeline's task queue (one that cannot be quoted is refused). */
export function queueQuery(workflowType: string, taskQueue: string): string {
  if (/["\\]/.test(taskQueue)) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `task queue ${JSON.stringify(taskQueue)} cannot be quoted in a query`,
    );
  }
  return `WorkflowType = "${workflowType}" AND TaskQueue = "${taskQueue}"`;
}

/** The input and result of the run's completed `completeEpisode` activity, or undefined (it expired unapproved). */
async function completionOf(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<RecordedCompletion | undefined> {
  const done = await recordedActivity(client, { workflowId, runId }, 'completeEpisode');
  if (!done?.input) return undefined;
  return { input: done.input as CompleteInput, entry: historyEntrySchema.parse(done.result) };
}

function compareIds(a: EpisodeId, b: EpisodeId): number {
  const x = parseEpisodeId(a);
  const y = parseEpisodeId(b);
  return x.weekId === y.weekId ? x.sequence - y.sequence : x.weekId < y.weekId ? -1 : 1;
}
