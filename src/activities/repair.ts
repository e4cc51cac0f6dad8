/**
 * `episodes repair`: after a restore or a failover, puts back into the store what Temporal recorded and the store
 * forgot. For each production Temporal knows: an allocation the store lost is re-asserted (reassertion.ts), and the
 * completion of a production that completed is applied again from its recorded `completeEpisode` (the final media,
 * the completion time, the history entry): every job the entry names is checked against the vendor and settled as a
 * wait would (artifact downloaded again if missing, charge at the vendor's price), the ledger must then equal the
 * recorded one, and history gets the recorded entry. Idempotent: a second run finds nothing to do.
 */
import { isDeepStrictEqual } from 'node:util';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import type { EpisodeState, HistoryEntry, LedgerEntry } from '../domain/episode-state';
import { isPipelineError, PipelineError } from '../domain/errors';
import { paidStepSchema } from '../domain/paid-step';
import { ErrorType } from '../domain/errors';
import { ledgerProblems } from './completion-check';
import type { RecordedCompletion, RecordedProduction } from './completion-records';
import type { ParkedStep } from './parked-steps';
import { PaidStepCall, stepRef, type PaidStepDeps } from './paid-step-call';
import { settledStep, settleStep } from './paid-step-settle';
import { reassertForgotten } from './reassertion';

export interface RepairAction {
  episode_id: string;
  /** What was (or, in a dry run, would be) done; `refused` and `conflict` need an operator. */
  action: 'allocation-reasserted' | 'completion-reapplied' | 'step-parked' | 'conflict' | 'refused';
  detail: string;
}

/** What the store lacks of one recorded production, repaired unless `dryRun`. */
export async function repairProduction(
  deps: PaidStepDeps,
  p: RecordedProduction,
  dryRun: boolean,
): Promise<RepairAction[]> {
  const id = p.episodeId;
  const act = (action: RepairAction['action'], detail: string): RepairAction => ({ episode_id: id, action, detail });
  const actions: RepairAction[] = [];
  try {
    const stored = await deps.store.getEpisode(id);
    if (stored) await checkOwner(deps, id, stored.allocation_key);
    else {
      if (dryRun) actions.push(act('allocation-reasserted', 'forgotten by the store; Temporal records its run'));
      else {
        const done = await reassertForgotten(deps, id);
        if (!done) return [act('refused', 'forgotten by the store, and Temporal records no run that was given it')];
        actions.push(act('allocation-reasserted', `key ${done.created ? 'written back' : 'already there'}`));
      }
    }
    if (p.completion && !(await completionStands(deps, id, p.completion.entry))) {
      if (!dryRun) await reapplyCompletion(deps, p.completion);
      actions.push(act('completion-reapplied', describeEntry(p.completion.entry)));
    }
  } catch (e) {
    if (!isPipelineError(e)) throw e;
    actions.push(act(e.type === ErrorType.AllocationConflict ? 'conflict' : 'refused', `${e.type}: ${e.message}`));
  }
  return actions;
}

/**
 * The store's key of `id` is the only one Temporal records as given it (the weekly runs whose `EpisodeId` it is, and
 * the production's parent run), or the id was handed out twice: `AllocationConflict` naming every key.
 */
async function checkOwner(deps: PaidStepDeps, id: EpisodeId, storedKey: string | null): Promise<void> {
  const records = deps.allocationRecords;
  if (!records) return;
  const keys = new Set(await records.keysGiven(id));
  const production = await records.allocationOf(id);
  if (production) keys.add(production.allocationKey);
  const others = [...keys].filter((k) => k !== storedKey).sort();
  if (others.length === 0) return;
  throw new PipelineError(
    ErrorType.AllocationConflict,
    `${id} is ${JSON.stringify(storedKey)}'s in the store, and Temporal records it as given to ` +
      `${others.map((k) => JSON.stringify(k)).join(', ')} too: the id was handed out twice (a store restored from a ` +
      'backup); settle each run as docs/operations.md says',
    { episodes: [id], allocationKey: storedKey, recordedKeys: others },
  );
}

/**
 * A step parked in Temporal whose `needs_reconciliation` record the store forgot: written back with the reason
 * Temporal recorded, so that `episodes status` shows it and `episodes reconcile` settles it. A record with a vendor
 * job is left alone (the operator's `reconcile` is then refused and the step's state says why).
 */
export async function repairParkedStep(deps: PaidStepDeps, p: ParkedStep, dryRun: boolean): Promise<RepairAction[]> {
  const { episodeId: id } = parseEpisodeId(p.episodeId);
  const at = stepRef(id, p.step, p.round);
  const state = await deps.store.getEpisode(id);
  const act = (action: RepairAction['action'], detail: string): RepairAction[] => [{ episode_id: id, action, detail }];
  if (!state) return act('refused', `${at.key} parked in Temporal, and the store has no such episode`);
  const record = state.steps[at.key];
  if (record?.status === 'needs_reconciliation' || record?.remote_job_id) return [];
  if (!dryRun) await new PaidStepCall(deps, at, record).markNeedsReconciliation(p.why);
  return act(
    'step-parked',
    `${at.key} parked in Temporal, its record forgotten (${record?.status ?? 'none'}): ${p.why}`,
  );
}

/** The store shows the episode completed with the recorded history entry. */
async function completionStands(deps: PaidStepDeps, id: EpisodeId, entry: HistoryEntry): Promise<boolean> {
  const state = await deps.store.getEpisode(id);
  const written = (await deps.store.listHistory({ weekId: parseEpisodeId(id).weekId })).find(
    (h) => h.episode_id === id,
  );
  return state?.status === 'completed' && isDeepStrictEqual(written, entry);
}

async function reapplyCompletion(deps: PaidStepDeps, { input, entry }: RecordedCompletion): Promise<void> {
  const { episodeId: id } = parseEpisodeId(input.episodeId);
  const before = await deps.store.requireEpisode(id);
  if (before.status !== 'completed') {
    for (const job of entry.remote_jobs) {
      const at = stepRef(id, paidStepSchema.parse(job.step), job.round);
      const record = before.steps[at.key];
      if (settledStep(before, at.key) || record?.status === 'failed') continue;
      // The job Temporal recorded; the wait checks it is the vendor's job for this step's key before charging it.
      const bare = new PaidStepCall(deps, at, undefined);
      const named = record ?? bare.bareRecord({ status: 'submitted', remote_job_id: job.remote_job_id });
      await settleStep(new PaidStepCall(deps, at, named)).catch((e: unknown) => {
        if (isPipelineError(e, ErrorType.VendorRejected)) return; // a failed job: charged, its step stays failed
        throw e;
      });
    }
  }
  await deps.store.updateEpisode(id, (s) => completedAsRecorded(s, input, entry));
  await deps.store.appendHistory(entry);
}

/** Pure: the state completed as Temporal recorded it, or a refusal naming what differs (nothing is written). */
function completedAsRecorded(s: EpisodeState, input: RecordedCompletion['input'], entry: HistoryEntry): EpisodeState {
  if (s.status === 'completed') return s;
  const refuse = (why: string): never => {
    throw new PipelineError(ErrorType.StoreCorrupt, `${s.episode_id}: completion not re-applied: ${why}`);
  };
  const problems = ledgerProblems(s, [input.finalVideo, input.finalCover]);
  if (problems.length > 0) refuse(`the ledger does not match the steps: ${problems.join('; ')}`);
  if (charges(s.ledger) !== charges(entry.ledger)) {
    refuse(`the vendor's charges (${charges(s.ledger)}) differ from the recorded ledger (${charges(entry.ledger)})`);
  }
  const video = s.media[input.finalVideo];
  const cover = s.media[input.finalCover];
  if (video?.sha256 !== entry.media.video?.sha256 || cover?.sha256 !== entry.media.cover?.sha256) {
    refuse('the final media downloaded again differ from the recorded ones');
  }
  return {
    ...s,
    status: 'completed',
    completed_at: entry.completed_at,
    approval: entry.approval,
    ledger: entry.ledger,
    media: { ...s.media, video: video!, cover: cover! },
  };
}

function charges(ledger: readonly LedgerEntry[]): string {
  return ledger
    .map((l) => `${l.remote_job_id} ${l.amount_cents} ${l.currency}`)
    .sort()
    .join(', ');
}

function describeEntry(entry: HistoryEntry): string {
  return `completed ${entry.completed_at}, ${entry.remote_jobs.length} jobs, ${entry.total_cost_cents} cents`;
}
