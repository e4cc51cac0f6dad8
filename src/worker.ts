/**
 * The worker: builds the real dependencies and runs workflows and activities on the task queue.
 * Connects through TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE; SIGINT or SIGTERM drain in-flight tasks, then exit.
 */
import { NativeConnection, Runtime, Worker, type Logger, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities';
import { loadConfig, type PipelineConfig } from './config';
import { envCredentialsLoader } from './vendor-api/credentials';
import { vendorEndpointFromEnv } from './vendor-api/endpoint';
import { openStore, prepareStore } from './store/open-store';
import { installTelemetry, loadTelemetryConfig } from './telemetry';
import { workerCacheOptions } from './worker-cache';
import { resolveWorkflowSource, workflowSourceOptions } from './workflow-bundle';

/** The store comes from the environment: EPISODES_STORE_URL (PostgreSQL), else the file store (EPISODES_DATA_DIR). */
export function buildDeps(config: PipelineConfig = loadConfig(), logger?: Logger): ActivityDeps {
  return {
    store: openStore(),
    // Read lazily by paid activities, after their episode guard: never at start-up, never by zero-cost work.
    credentials: envCredentialsLoader(process.env, logger ? { warn: (message) => void logger.warn(message) } : {}),
    vendor: vendorEndpointFromEnv(),
    budgetCents: config.budgetCents,
  };
}

export async function createWorker(
  config: PipelineConfig,
  deps: ActivityDeps,
  extra: Partial<WorkerOptions> = {},
  logger: Logger = Runtime.instance().logger,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const workflows = workflowSourceOptions(await resolveWorkflowSource(), logger);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    ...workflows,
    ...workerCacheOptions(),
    activities: createActivities(deps),
    ...extra,
  });
  return { worker, connection };
}

async function main(): Promise<void> {
  // First: the Runtime (logger, metrics) must exist before any connection.
  const logger = installTelemetry(loadTelemetryConfig());
  const config = loadConfig();
  const deps = buildDeps(config, logger);
  // Schema migrations and connectivity now: a misconfigured store fails the start, not the first activity.
  await prepareStore(deps.store);
  const { worker, connection } = await createWorker(config, deps, {}, logger);
  logger.info(
    `worker: task queue ${config.taskQueue} on ${config.temporalAddress}/${config.temporalNamespace}, ` +
      `${deps.store.description}`,
    { taskQueue: config.taskQueue, namespace: config.temporalNamespace },
  );
  try {
    // Worker.run() resolves after a shutdown signal (SIGINT, SIGTERM, ...) once in-flight tasks have drained.
    await worker.run();
  } finally {
    await deps.store.close();
    await connection.close();
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error('worker failed:', e);
      process.exit(1);
    },
  );
}
