import type { Command } from 'commander';
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { DEFAULT_VENDOR_PORT } from '../settings/table';
import { envCredentialsLoader } from '../vendor-api/credentials';
import { startFalSimulator } from '../vendor-sim/fal';
import { startReplicateSimulator } from '../vendor-sim/replicate';
import { startVendorSimulator } from '../vendor-sim/simulator';
import { loadSimulatorSettings } from '../process/config';
import type { CliContext } from './context';

interface VendorSimOptions {
  port: string;
  apiKeyFile?: string;
  stateFile?: string;
  latencyMs?: string;
  jobDurationMs?: string;
  idempotency: boolean;
  quiet?: boolean;
  flavor: string;
}

export function registerVendorCommands(program: Command, _ctx: CliContext): void {
  program
    .command('vendor-sim')
    .description(
      'run the local vendor simulator on 127.0.0.1 until SIGINT/SIGTERM (key: EPISODES_VENDOR_API_KEY[_FILE])',
    )
    .option('--port <port>', 'TCP port (0 = any free port)', String(DEFAULT_VENDOR_PORT))
    .option('--api-key-file <file>', 'read the API key from this file instead of the environment')
    .option('--state-file <file>', 'keep jobs, charges and idempotency records in this JSON file across restarts')
    .option('--latency-ms <ms>', 'delay before the vendor works on each request')
    .option('--job-duration-ms <ms>', 'time from acceptance to success')
    .option('--no-idempotency', 'ignore Idempotency-Key: every submission creates and charges a new job')
    .option('--quiet', 'do not log requests to stderr')
    .option(
      '--flavor <flavor>',
      'which API to simulate: native (docs/vendor-api.md), fal or replicate (docs/vendors.md)',
      'native',
    )
    .action(async (opts: VendorSimOptions) => {
      if (opts.flavor === 'fal') return runFalSimulator(opts);
      if (opts.flavor === 'replicate') return runReplicateSimulator(opts);
      if (opts.flavor !== 'native') {
        throw new PipelineError(ErrorType.InvalidInput, '--flavor must be native, fal or replicate');
      }
      const port = parseInteger('--port', opts.port, 65_535);
      const latencyMs = opts.latencyMs === undefined ? undefined : parseInteger('--latency-ms', opts.latencyMs);
      const jobDurationMs =
        opts.jobDurationMs === undefined ? undefined : parseInteger('--job-duration-ms', opts.jobDurationMs);
      const loader = envCredentialsLoader(
        opts.apiKeyFile === undefined ? process.env : { EPISODES_VENDOR_API_KEY_FILE: opts.apiKeyFile },
      );
      const sim = await startVendorSimulator({
        apiKey: await loader.load(),
        port,
        stateFile: opts.stateFile,
        jobDurationMs,
        ...loadSimulatorSettings(),
        faults: { latencyMs, noIdempotency: opts.idempotency ? undefined : true },
        log: opts.quiet ? undefined : (line) => process.stderr.write(`vendor-sim: ${line}\n`),
      });
      console.log(`vendor simulator listening on ${sim.url} (export EPISODES_VENDOR_BASE_URL=${sim.url})`);
      await untilSignal();
      await sim.close();
      console.log('vendor simulator stopped');
    });
}

/** fal's simulator; its key is EPISODES_FAL_KEY[_FILE], as the adapter reads it. */
async function runFalSimulator(opts: VendorSimOptions): Promise<void> {
  const settings = { key: 'EPISODES_FAL_KEY', file: 'EPISODES_FAL_KEY_FILE', what: 'fal key' } as const;
  const env = opts.apiKeyFile === undefined ? process.env : { EPISODES_FAL_KEY_FILE: opts.apiKeyFile };
  const sim = await startFalSimulator({
    apiKey: await envCredentialsLoader(env, { settings }).load(),
    port: parseInteger('--port', opts.port, 65_535),
    jobDurationMs: opts.jobDurationMs === undefined ? undefined : parseInteger('--job-duration-ms', opts.jobDurationMs),
    ...loadSimulatorSettings(),
    log: opts.quiet ? undefined : (line) => process.stderr.write(`vendor-sim: ${line}\n`),
  });
  console.log(
    `fal simulator listening on ${sim.url} (export EPISODES_FAL_QUEUE_URL=${sim.queueUrl} ` +
      `EPISODES_FAL_API_URL=${sim.apiUrl} EPISODES_FAL_JWKS_URL=${sim.jwksUrl})`,
  );
  await untilSignal();
  await sim.close();
  console.log('fal simulator stopped');
}

/** `--flavor replicate`: Replicate's predictions API (token: EPISODES_REPLICATE_TOKEN[_FILE]); no state file. */
async function runReplicateSimulator(opts: VendorSimOptions): Promise<void> {
  if (opts.stateFile !== undefined || !opts.idempotency) {
    throw new PipelineError(ErrorType.InvalidInput, '--state-file and --no-idempotency are for --flavor native only');
  }
  const loader = envCredentialsLoader(
    opts.apiKeyFile === undefined ? process.env : { EPISODES_REPLICATE_TOKEN_FILE: opts.apiKeyFile },
    {
      settings: { key: 'EPISODES_REPLICATE_TOKEN', file: 'EPISODES_REPLICATE_TOKEN_FILE', what: 'Replicate API token' },
    },
  );
  const sim = await startReplicateSimulator({
    token: await loader.load(),
    port: parseInteger('--port', opts.port, 65_535),
    predictionMs: opts.jobDurationMs === undefined ? undefined : parseInteger('--job-duration-ms', opts.jobDurationMs),
    ...loadSimulatorSettings(),
    faults: { latencyMs: opts.latencyMs === undefined ? undefined : parseInteger('--latency-ms', opts.latencyMs) },
    log: opts.quiet ? undefined : (line) => process.stderr.write(`vendor-sim: ${line}\n`),
  });
  console.log(`replicate simulator listening on ${sim.url} (export EPISODES_REPLICATE_URL=${sim.url})`);
  await untilSignal();
  await sim.close();
  console.log('replicate simulator stopped');
}

export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export function parseInteger(flag: string, raw: string, max = 600_000): number {
  const parsed = z.coerce.number().int().min(0).max(max).safeParse(raw);
  if (!parsed.success) throw new PipelineError(ErrorType.InvalidInput, `${flag} must be an integer from 0 to ${max}`);
  return parsed.data;
}
