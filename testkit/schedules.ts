import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { sleep } from './wait';

/** Waits until `count` runs started by the schedule have closed, and returns them (oldest first). */
export async function waitForScheduledRuns(
  client: Client,
  scheduleId: string,
  count: number,
  timeoutMs = 60_000,
): Promise<WorkflowExecutionInfo[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs: WorkflowExecutionInfo[] = [];
    for await (const wf of client.workflow.list({ query: `TemporalScheduledById = '${scheduleId}'` })) runs.push(wf);
    const closed = runs.filter((r) => r.status.name !== 'RUNNING');
    if (closed.length >= count) return closed.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    if (Date.now() > deadline) {
      throw new Error(`schedule ${scheduleId}: ${closed.length}/${count} runs closed after ${timeoutMs} ms`);
    }
    await sleep(250);
  }
}
