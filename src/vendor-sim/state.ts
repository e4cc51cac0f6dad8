/** What the vendor simulator keeps across restarts: jobs, charges and idempotency records, in one JSON file. */
import { z } from 'zod';
import { readJsonFile, writeJsonDurable } from '../files/durable-fs';
import { chargeSchema, jobAcceptedSchema, jobKindSchema, wireMoneySchema } from '../vendor-api/api';

export const SIMULATOR_STATE_SCHEMA = 'vendor-sim-state/v1';

export const jobRecordSchema = z.strictObject({
  job_id: z.string(),
  kind: jobKindSchema,
  episode_id: z.string(),
  spec: z.record(z.string(), z.unknown()),
  client_ref: z.string().nullable(),
  quoted_cost: wireMoneySchema,
  accepted_at: z.iso.datetime({ offset: true }),
  ends_failed: z.boolean(),
  artifact_id: z.string(),
});
export type JobRecord = z.infer<typeof jobRecordSchema>;

const idempotencyRecordSchema = z.strictObject({
  key: z.string(),
  fingerprint: z.string(),
  response: jobAcceptedSchema,
});
export type IdempotencyRecord =
  z.infer<typeof idempotencyRecordSchema> | { key: string; fingerprint: string; response: null };

const stateFileSchema = z.strictObject({
  schema: z.literal(SIMULATOR_STATE_SCHEMA),
  jobs: z.array(jobRecordSchema),
  charges: z.array(chargeSchema),
  idempotency: z.array(idempotencyRecordSchema),
});
export type SimulatorState = z.infer<typeof stateFileSchema>;

/** The saved state, or undefined when there is none yet (a corrupt file is StoreCorrupt naming it). */
export function readSimulatorState(file: string): SimulatorState | undefined {
  return readJsonFile(file, stateFileSchema);
}

export function writeSimulatorState(file: string, state: SimulatorState): Promise<void> {
  return writeJsonDurable(file, state);
}
