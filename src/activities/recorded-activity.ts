/**
 * What a run's history recorded of one of its activities: the input it was scheduled with and the result it completed
 * with, decoded by the default payload converter (the pipeline's payloads are plain JSON).
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';

export interface RecordedActivity {
  input: unknown;
  result: unknown;
}

/** The first completed activity of `activityType` in the run's history; undefined when none completed. */
export async function recordedActivity(
  client: Client,
  run: { workflowId: string; runId: string },
  activityType: string,
): Promise<RecordedActivity | undefined> {
  const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
  const scheduled = new Map<string, Payload | undefined>();
  for (const event of history.events ?? []) {
    const s = event.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === activityType) scheduled.set(String(event.eventId), s.input?.payloads?.[0]);
    const done = event.activityTaskCompletedEventAttributes;
    if (!done || !scheduled.has(String(done.scheduledEventId))) continue;
    return { input: decode(scheduled.get(String(done.scheduledEventId))), result: decode(done.result?.payloads?.[0]) };
  }
  return undefined;
}

function decode(payload: Payload | undefined): unknown {
  return payload ? defaultPayloadConverter.fromPayload<unknown>(payload) : undefined;
}
