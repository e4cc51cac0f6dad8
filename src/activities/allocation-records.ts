/**
 * What Temporal recorded about an episode's allocation, read when the store has forgotten it (a restore from an earlier
 * backup, a failover to a replica that was behind). Production `episode-<id>` is started only by the weekly run its
 * allocation answered, and that run's workflow ID is the allocation key: so the production's parent is the run that
 * was given the id, and the parent's `EpisodeId` search attribute (set from the allocation's answer) confirms it.
 * A production started by hand (`episodes generate`, no parent) has no such record.
 */
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { parseAllocationKey, type AllocationKey } from '../domain/allocation-key';
import { formatEpisodeId, MAX_SEQUENCE, parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import type { WeekId } from '../domain/week-id';
import type { PaidStep } from '../domain/episode-state';
import { paidStepWorkflowId, productionWorkflowId } from '../domain/names';
import { EpisodeIdSearchAttribute, WeekIdSearchAttribute } from '../domain/names';
import type { AllocationClaim } from '../store/episode-store';
import { recordedActivity } from './recorded-activity';

export interface AllocationRecords {
  /**
   * The run Temporal recorded as given `episodeId`: the parent of its production's run `productionRunId` (default:
   * the latest run), confirmed by that parent's `EpisodeId`. Undefined when it recorded none.
   */
  allocationOf(episodeId: EpisodeId, productionRunId?: string): Promise<AllocationClaim | undefined>;
  /** The run of the production that `run` (the production itself, or one of its steps) belongs to. */
  productionRunOf(episodeId: EpisodeId, run: { workflowId: string; runId: string }): Promise<string | undefined>;
  /**
   * The episode an earlier run of the same key (one reset, or re-run, since) was given, as that run's `EpisodeId`
   * search attribute and its production's parent both record it; undefined when there is none, or no single one.
   */
  earlierAllocationOf(key: AllocationKey, ownRunId: string): Promise<AllocationClaim | undefined>;
  /**
   * The ids of `weekId` Temporal records as handed out, to any key: every `EpisodeId` of the week's runs (visibility),
   * and every production `episode-<week>-<n>` that exists from `above + 1` up to the first that does not (its own
   * record, read without visibility's lag). A store restored from a backup forgets these; Temporal does not.
   */
  handedOutIn(weekId: WeekId, above: number): Promise<EpisodeId[]>;
  /**
   * The ids of `weekId` that an open weekly run's allocation answered and the run has not recorded yet: its next
   * workflow task has not run (workers stopped between the two, then a restore). Read from the run's history.
   */
  answeredUnrecorded(weekId: WeekId): Promise<EpisodeId[]>;
  /** The keys (weekly runs' workflow IDs) whose runs recorded `episodeId` as their episode (visibility). */
  keysGiven(episodeId: EpisodeId): Promise<string[]>;
  /**
   * The spec a paid step was submitted with, as its step workflow's (latest run's) completed `submitPaidStep` recorded
   * it: the store forgets a step's record with its spec (a restore, a failover), and a record written back bare has
   * none. Undefined when Temporal recorded no such submission.
   */
  stepSpecOf(episodeId: EpisodeId, step: PaidStep, round: number): Promise<Record<string, unknown> | undefined>;
  /**
   * Whether the paid step's workflow scheduled a submission before `own` (a `submitPaidStep` activity of this run):
   * another run of it (its production started again: `episodes generate` after a failure), or an earlier
   * `submitPaidStep` of this run (parked, then `reconciled`). What that one sent, the store may have forgotten (a
   * failover, a restore). Runs from visibility, this run's activities from its history.
   */
  earlierSubmission(
    episodeId: EpisodeId,
    step: PaidStep,
    round: number,
    own: { runId: string; activityId: string },
  ): Promise<boolean>;
}

const WEEKLY = 'weeklyEpisodeWorkflow';
/** Weekly runs still open that have not recorded an episode (yet): their allocation may have answered already. */
const UNRECORDED_ANSWERS = `WorkflowType = "${WEEKLY}" AND ExecutionStatus = "Running" AND ${EpisodeIdSearchAttribute.name} IS NULL`;

const allocationAnswerSchema = z.object({ episodeId: z.string() });
const submissionInputSchema = z.object({ spec: z.record(z.string(), z.unknown()) });

/** Facts of a given run never change: kept, up to this many per process. */
const CACHED_RUNS = 10_000;

export function temporalAllocationRecords(client: Client): AllocationRecords {
  const byRun = new Map<string, AllocationClaim | null>();
  const parentRun = new Map<string, string | null>();
  const remember = <T>(cache: Map<string, T>, key: string, value: T): T => {
    if (cache.size >= CACHED_RUNS) cache.clear();
    cache.set(key, value);
    return value;
  };
  const records: AllocationRecords = {
    async earlierAllocationOf(key, ownRunId) {
      // A key a visibility query cannot quote safely is allocated by the store's rule alone.
      if (/["\\]/.test(key)) return undefined;
      const given = new Set<string>();
      for await (const run of client.workflow.list({ query: `WorkflowId = "${key}"` })) {
        const id = run.typedSearchAttributes.get(EpisodeIdSearchAttribute);
        if (run.runId !== ownRunId && id !== undefined) given.add(id);
      }
      const [id, ...others] = [...given];
      if (id === undefined || others.length > 0) return undefined;
      const claim = await records.allocationOf(parseEpisodeId(id).episodeId);
      return claim?.allocationKey === key ? claim : undefined;
    },
    async handedOutIn(weekId, above) {
      const ids = new Set<EpisodeId>();
      for await (const run of client.workflow.list({ query: `${WeekIdSearchAttribute.name} = "${weekId}"` })) {
        const id = idOfWeek(run.typedSearchAttributes.get(EpisodeIdSearchAttribute), weekId);
        if (id) ids.add(id);
      }
      let next = [...ids].reduce((m, id) => Math.max(m, parseEpisodeId(id).sequence), above) + 1;
      for (; next <= MAX_SEQUENCE; next++) {
        const id = formatEpisodeId(weekId, next);
        if (!(await describe(client, productionWorkflowId(id)))) break;
        ids.add(id);
      }
      return [...ids];
    },
    async answeredUnrecorded(weekId) {
      const ids: EpisodeId[] = [];
      for await (const run of client.workflow.list({ query: UNRECORDED_ANSWERS })) {
        const answer = allocationAnswerSchema.safeParse(
          (await recordedActivity(client, run, 'allocateEpisode'))?.result,
        );
        const id = answer.success ? idOfWeek(answer.data.episodeId, weekId) : undefined;
        if (id) ids.push(id);
      }
      return ids;
    },
    async keysGiven(episodeId) {
      const keys = new Set<string>();
      const query = `${EpisodeIdSearchAttribute.name} = "${episodeId}" AND WorkflowType = "${WEEKLY}"`;
      for await (const run of client.workflow.list({ query })) keys.add(run.workflowId);
      return [...keys];
    },
    async stepSpecOf(episodeId, step, round) {
      const run = await describe(client, paidStepWorkflowId(episodeId, step, round));
      const submitted = run && (await recordedActivity(client, run, 'submitPaidStep'));
      return submissionInputSchema.safeParse(submitted?.input).data?.spec;
    },
    earlierSubmission: (episodeId, step, round, own) => earlierSubmission(client, episodeId, step, round, own),
    async productionRunOf(episodeId, run) {
      if (run.workflowId === productionWorkflowId(episodeId)) return run.runId;
      const known = parentRun.get(run.runId);
      if (known !== undefined) return known ?? undefined;
      const parent = (await describe(client, run.workflowId, run.runId))?.parentExecution;
      const production = parent?.workflowId === productionWorkflowId(episodeId) ? parent.runId : null;
      return remember(parentRun, run.runId, production) ?? undefined;
    },
    async allocationOf(episodeId, productionRunId) {
      const known = productionRunId === undefined ? undefined : byRun.get(productionRunId);
      if (known !== undefined) return known ?? undefined;
      const claim = (await recordOf(client, episodeId, productionRunId)) ?? null;
      return (productionRunId === undefined ? claim : remember(byRun, productionRunId, claim)) ?? undefined;
    },
  };
  return records;
}

/** AllocationRecords.earlierSubmission: another run of the step's workflow, or another submitPaidStep of this run. */
async function earlierSubmission(
  client: Client,
  ...[episodeId, step, round, own]: Parameters<AllocationRecords['earlierSubmission']>
): Promise<boolean> {
  const workflowId = paidStepWorkflowId(episodeId, step, round);
  for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    if (run.runId !== own.runId) return true;
  }
  const history = await client.workflow.getHandle(workflowId, own.runId).fetchHistory();
  return (history.events ?? []).some((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    return scheduled?.activityType?.name === 'submitPaidStep' && scheduled.activityId !== own.activityId;
  });
}

/** A recorded `EpisodeId` of `weekId`; anything else (another week, not an id) is no evidence for it. */
function idOfWeek(raw: string | undefined, weekId: WeekId): EpisodeId | undefined {
  try {
    const parsed = parseEpisodeId(raw);
    return parsed.weekId === weekId ? parsed.episodeId : undefined;
  } catch {
    return undefined;
  }
}

async function recordOf(
  client: Client,
  episodeId: EpisodeId,
  productionRunId?: string,
): Promise<AllocationClaim | undefined> {
  const parent = (await describe(client, productionWorkflowId(episodeId), productionRunId))?.parentExecution;
  if (!parent?.workflowId || !parent.runId) return undefined;
  const weekly = await describe(client, parent.workflowId, parent.runId);
  if (weekly?.typedSearchAttributes.get(EpisodeIdSearchAttribute) !== episodeId) return undefined;
  return {
    allocationKey: parseAllocationKey(parent.workflowId),
    episodeId,
    allocatedBy: {
      kind: 'workflow',
      workflow_id: parent.workflowId,
      run_id: parent.runId,
      namespace: client.options.namespace,
    },
    createdAt: weekly.startTime.toISOString(),
  };
}

async function describe(client: Client, workflowId: string, runId?: string) {
  try {
    return await client.workflow.getHandle(workflowId, runId).describe();
  } catch (e) {
    const { WorkflowNotFoundError } = await import('@temporalio/client');
    if (e instanceof WorkflowNotFoundError) return undefined;
    throw e;
  }
}
