/**
 * The workflow cache of one worker process (EPISODES_MAX_CACHED_WORKFLOWS). A production can wait days for approval;
 * the SDK's default cache grows with the heap (about 1.2 MiB of RSS per parked production), so a worker with
 * thousands parked would grow without bound. A bounded cache evicts the least recently used; an evicted workflow
 * is replayed from its history when its next task arrives (bench: production/parked).
 */
import type { WorkerOptions } from '@temporalio/worker';
import { z } from 'zod';
import { unsetIfEmpty } from './config';

export const DEFAULT_MAX_CACHED_WORKFLOWS = 100;
/** The SDK's own default of concurrent workflow tasks; it may not exceed the cache size. */
const SDK_DEFAULT_WORKFLOW_TASK_SLOTS = 40;

const envSchema = z.object({
  EPISODES_MAX_CACHED_WORKFLOWS: z.preprocess(
    unsetIfEmpty,
    z.coerce
      .number()
      .int()
      .refine((n) => n === 0 || (n >= 2 && n <= 100_000), '0 (no cache) or 2..100000')
      .default(DEFAULT_MAX_CACHED_WORKFLOWS),
  ),
});

export function workerCacheOptions(
  env: NodeJS.ProcessEnv = process.env,
): Pick<WorkerOptions, 'maxCachedWorkflows' | 'maxConcurrentWorkflowTaskExecutions'> {
  const size = envSchema.parse(env).EPISODES_MAX_CACHED_WORKFLOWS;
  return {
    maxCachedWorkflows: size,
    // With a cache, concurrent tasks may not exceed it (the SDK would lower them itself, with a warning).
    ...(size > 0 ? { maxConcurrentWorkflowTaskExecutions: Math.min(SDK_DEFAULT_WORKFLOW_TASK_SLOTS, size) } : {}),
  };
}
