/**
 * Where a workflow's start-to-result time goes, from its own history: the server's event times split it into workflow
 * tasks, the activity (queued, running), the child start, and what the client adds around it (the start request and
 * the result long-poll). The parts add up to the measured time.
 */
import type { Client } from '@temporalio/client';
import type { Profile } from './results';

type HistoryEvent = NonNullable<
  Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events']
>[number];

function eventMs(e: HistoryEvent | undefined): number | undefined {
  const ts = e?.eventTime;
  if (!ts) return undefined;
  const seconds = ts.seconds;
  const s = typeof seconds === 'number' ? seconds : seconds ? Number(seconds.toString()) : 0;
  return s * 1000 + (ts.nanos ?? 0) / 1e6;
}

/** The parts of one run (ms); `measuredMs` is what the client timed from start to result. */
export async function historyPhases(
  client: Client,
  workflowId: string,
  measuredMs: number,
): Promise<Record<string, number>> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const first = (has: (e: HistoryEvent) => unknown) => eventMs(events.find((e) => has(e)));
  const start = first((e) => e.workflowExecutionStartedEventAttributes);
  const scheduled = first((e) => e.activityTaskScheduledEventAttributes);
  const started = first((e) => e.activityTaskStartedEventAttributes);
  const done = first((e) => e.activityTaskCompletedEventAttributes);
  const childInitiated = first((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
  const childStarted = first((e) => e.childWorkflowExecutionStartedEventAttributes);
  const end = first((e) => e.workflowExecutionCompletedEventAttributes);
  if ([start, scheduled, started, done, end].some((t) => t === undefined)) {
    throw new Error(`${workflowId}: history lacks the expected events`);
  }
  const parts: Record<string, number> = {
    'workflow task: start to activity scheduled': scheduled! - start!,
    'activity queued (scheduled to started)': started! - scheduled!,
    'activity running': done! - started!,
  };
  if (childInitiated !== undefined && childStarted !== undefined) {
    parts['workflow task: activity done to child initiated'] = childInitiated - done!;
    parts['child workflow start (initiated to started)'] = childStarted - childInitiated;
    parts['workflow task: child started to completed'] = end! - childStarted;
  } else {
    parts['workflow task: activity done to completed'] = end! - done!;
  }
  parts['client: start request and result long-poll'] = measuredMs - (end! - start!);
  return parts;
}

/** Mean of each part over the runs. */
export async function historyProfile(
  client: Client,
  row: string,
  runs: { workflowId: string; ms: number }[],
): Promise<Profile> {
  const sums: Record<string, number> = {};
  for (const run of runs) {
    for (const [k, v] of Object.entries(await historyPhases(client, run.workflowId, run.ms)))
      sums[k] = (sums[k] ?? 0) + v;
  }
  const parts = Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, Math.max(0, v / runs.length)]));
  return {
    row,
    what: 'start-to-result split by the server event times of each run (history)',
    samples: runs.length,
    total_ms: runs.reduce((s, r) => s + r.ms, 0) / runs.length,
    parts_ms: parts,
    calls: {},
  };
}

/**
 * Server-side task latency over many runs: mean per run of the time workflow and activity tasks waited in their
 * queues (scheduled to started, the server and the pollers) and ran (started to completed, the worker).
 */
export async function taskLatencies(client: Client, workflowIds: readonly string[]): Promise<Record<string, number>> {
  const sums = { workflowTaskQueued: 0, workflowTaskRunning: 0, activityQueued: 0, activityRunning: 0 };
  const ids = [...workflowIds];
  const one = async (id: string) => {
    const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const at = new Map(events.map((e) => [Number(e.eventId ?? 0), eventMs(e) ?? 0]));
    for (const e of events) {
      const t = eventMs(e) ?? 0;
      const wftStarted = e.workflowTaskStartedEventAttributes;
      if (wftStarted) sums.workflowTaskQueued += t - (at.get(Number(wftStarted.scheduledEventId ?? 0)) ?? t);
      const wftDone = e.workflowTaskCompletedEventAttributes;
      if (wftDone) sums.workflowTaskRunning += t - (at.get(Number(wftDone.startedEventId ?? 0)) ?? t);
      const actStarted = e.activityTaskStartedEventAttributes;
      if (actStarted) sums.activityQueued += t - (at.get(Number(actStarted.scheduledEventId ?? 0)) ?? t);
      const actDone = e.activityTaskCompletedEventAttributes;
      if (actDone) sums.activityRunning += t - (at.get(Number(actDone.startedEventId ?? 0)) ?? t);
    }
  };
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let id = ids.shift(); id !== undefined; id = ids.shift()) await one(id);
    }),
  );
  return Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v / Math.max(1, workflowIds.length)]));
}
