/**
 * The workflow cache of one worker process (EPISODES_MAX_CACHED_WORKFLOWS). A production can wait days for approval;
 * the SDK's default cache grows with the heap (about 1.2 MiB of RSS per parked production), so a worker with
 * thousands parked would grow without bound. A bounded cache evicts the least recently used; an evicted workflow
 * is replayed from its history when its next task arrives (bench: production/parked).
 */
import type { WorkerOptions } from '@temporalio/worker';
import { readSetting } from '../settings/read';
import { settingDefault } from '../settings/table';

export const DEFAULT_MAX_CACHED_WORKFLOWS = settingDefault('EPISODES_MAX_CACHED_WORKFLOWS');
/** The SDK's own default of concurrent workflow tasks; it may not exceed the cache size. */
const SDK_DEFAULT_WORKFLOW_TASK_SLOTS = 40;

export function workerCacheOptions(
  env: NodeJS.ProcessEnv = process.env,
): Pick<WorkerOptions, 'maxCachedWorkflows' | 'maxConcurrentWorkflowTaskExecutions'> {
  const size = readSetting('EPISODES_MAX_CACHED_WORKFLOWS', env);
  return {
    maxCachedWorkflows: size,
    // With a cache, concurrent tasks may not exceed it (the SDK would lower them itself, with a warning).
    ...(size > 0 ? { maxConcurrentWorkflowTaskExecutions: Math.min(SDK_DEFAULT_WORKFLOW_TASK_SLOTS, size) } : {}),
  };
}
