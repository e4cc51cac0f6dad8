import { proxyActivities } from '@temporalio/workflow';
import type { FloorActivities } from '../floor-activities';

// The same start-to-close budget as the allocation activity; nothing else applies to a no-op.
const { noopActivity } = proxyActivities<FloorActivities>({ startToCloseTimeout: '2m' });

/** The Temporal path's floor: a workflow that does nothing but call one activity that does nothing. */
export async function floorWorkflow(): Promise<void> {
  await noopActivity();
}
