/**
 * The results file, `bench/results/<timestamp>.json`: machine facts plus one row per measurement. The schema is shared
 * by the writer and by the smoke test, so "well-formed" means one thing.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { machineSchema } from '../testkit/machine';

export const SECTIONS = ['allocation', 'contention', 'temporal', 'production', 'review'] as const;
export type Section = (typeof SECTIONS)[number];

const finitePositive = z.number().positive();

/** A reported target: `value` against `limit` (lower is better). Reported, never asserted by tests. */
export const targetSchema = z.strictObject({
  name: z.string(),
  value: finitePositive,
  limit: finitePositive,
  pass: z.boolean(),
});
export type Target = z.infer<typeof targetSchema>;

/** A correctness check made during the run (e.g. sequences exactly 0..999): unlike targets, these must pass. */
export const checkSchema = z.strictObject({ name: z.string(), pass: z.boolean(), detail: z.string() });
export type Check = z.infer<typeof checkSchema>;

export const rowSchema = z.discriminatedUnion('status', [
  z.strictObject({
    id: z.string(),
    section: z.enum(SECTIONS),
    label: z.string(),
    status: z.literal('measured'),
    /** Durations in ms, rates per second, memory in MiB; every number is finite and positive. */
    metrics: z.record(z.string(), finitePositive),
    targets: z.array(targetSchema),
    checks: z.array(checkSchema),
    notes: z.array(z.string()),
  }),
  z.strictObject({
    id: z.string(),
    section: z.enum(SECTIONS),
    label: z.string(),
    status: z.enum(['not-measured', 'failed']),
    reason: z.string(),
  }),
]);
export type Row = z.infer<typeof rowSchema>;
export type MeasuredRow = Extract<Row, { status: 'measured' }>;

export const configSchema = z.strictObject({
  sizes: z.array(z.number().int().positive()),
  allocation_rounds: z.number().int().positive(),
  contention_processes: z.number().int().positive(),
  contention_per_process: z.number().int().positive(),
  contention_warmup: z.number().int().nonnegative(),
  contention_rounds: z.number().int().positive(),
  temporal_latency_pairs: z.number().int().positive(),
  temporal_backfill_runs: z.number().int().positive(),
  temporal_drain_workers: z.array(z.number().int().positive()),
  production_episodes: z.number().int().positive(),
  production_waiting: z.number().int().positive(),
  worker_start_runs: z.number().int().positive(),
  production_parked: z.number().int().positive(),
  production_parked_samples: z.number().int().positive(),
  production_parked_cache: z.number().int().positive(),
  review_completed: z.number().int().positive(),
  review_waiting: z.number().int().positive(),
  review_requests: z.number().int().positive(),
});
export type BenchConfig = z.infer<typeof configSchema>;

const nonNegative = z.number().nonnegative();

/** Where the time of one row goes: the mean per sample of each part (and of its calls, where parts are calls). */
export const profileSchema = z.strictObject({
  row: z.string(),
  what: z.string(),
  samples: z.number().int().positive(),
  total_ms: finitePositive,
  parts_ms: z.record(z.string(), nonNegative),
  calls: z.record(z.string(), nonNegative),
});
export type Profile = z.infer<typeof profileSchema>;

export const resultsSchema = z.strictObject({
  schema: z.literal('bench-results/v1'),
  mode: z.enum(['full', 'smoke']),
  command: z.string(),
  git_commit: z.string(),
  git_dirty: z.boolean(),
  started_at: z.iso.datetime(),
  duration_s: finitePositive,
  machine: machineSchema,
  config: configSchema,
  rows: z.array(rowSchema),
  profiles: z.array(profileSchema),
});
export type BenchResults = z.infer<typeof resultsSchema>;

export async function writeResults(dir: string, results: BenchResults): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  const file = path.join(dir, `${results.started_at.replace(/[:.]/g, '-')}.json`);
  await fs.writeFile(file, JSON.stringify(resultsSchema.parse(results), null, 2) + '\n');
  return file;
}

export function measured(
  section: Section,
  id: string,
  label: string,
  metrics: Record<string, number>,
  extra: Partial<Pick<MeasuredRow, 'targets' | 'checks' | 'notes'>> = {},
): MeasuredRow {
  return {
    id,
    section,
    label,
    status: 'measured',
    metrics,
    targets: extra.targets ?? [],
    checks: extra.checks ?? [],
    notes: extra.notes ?? [],
  };
}

export function target(name: string, value: number, limit: number): Target {
  return { name, value, limit, pass: value <= limit };
}

/** Rows that make the bench exit 1: a section that threw, or a measurement whose correctness check failed. */
export function brokenRows(rows: readonly Row[]): Row[] {
  return rows.filter((r) => r.status === 'failed' || (r.status === 'measured' && r.checks.some((c) => !c.pass)));
}
