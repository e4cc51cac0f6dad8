/** Process configuration from the environment, parsed once at the edge (zod), never read ad hoc elsewhere. */
import { z } from 'zod';
import { parseTimeZone } from './domain/week-id';
import { TASK_QUEUE } from './domain/names';
import { DEFAULT_EPISODE_BUDGET_CENTS } from './activities/paid-steps';

const envSchema = z.object({
  TEMPORAL_ADDRESS: z.string().min(1).default('localhost:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  EPISODES_TASK_QUEUE: z.string().min(1).default(TASK_QUEUE),
  PIPELINE_TIMEZONE: z.string().min(1).default('UTC'),
  EPISODE_BUDGET_CENTS: z.coerce.number().int().positive().default(DEFAULT_EPISODE_BUDGET_CENTS),
});

export interface PipelineConfig {
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  timezone: string;
  /** Per-episode cost cap in cents (EPISODE_BUDGET_CENTS). */
  budgetCents: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): PipelineConfig {
  const parsed = envSchema.parse(env);
  return {
    temporalAddress: parsed.TEMPORAL_ADDRESS,
    temporalNamespace: parsed.TEMPORAL_NAMESPACE,
    taskQueue: parsed.EPISODES_TASK_QUEUE,
    timezone: parseTimeZone(parsed.PIPELINE_TIMEZONE),
    budgetCents: parsed.EPISODE_BUDGET_CENTS,
  };
}

/** An empty variable counts as unset (`EPISODES_METRICS_ADDRESS=` turns metrics off): for z.preprocess. */
export function unsetIfEmpty(value: unknown): unknown {
  return value === '' ? undefined : value;
}
