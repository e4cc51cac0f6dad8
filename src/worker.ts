/**
 * The worker: builds the real dependencies and runs workflows and activities on the task queue.
 * Connects with the TEMPORAL_* profile (src/temporal-connection.ts) and refuses to start on a namespace without the
 * search attributes the workflows set; SIGINT or SIGTERM drain in-flight tasks, then exit.
 */
import { Runtime, Worker, type Logger, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { createActivities, type ActivityDeps } from './activities';
import { temporalAllocationRecords } from './activities/allocation-records';
import { describeWebhook, type ReviewNoticeSettings } from './activities/review-notice';
import { loadConfig, type PipelineConfig } from './config';
import { PipelineError } from './domain/errors';
import { envCredentialsLoader } from './vendor-api/credentials';
import { vendorEndpointFromEnv } from './vendor-api/endpoint';
import { openStore, prepareStore, storeApplicationName } from './store/open-store';
import { connectNativeConnection, describeSettings, redactSecrets } from './temporal-connection';
import { requireNamespaceReady } from './temporal-namespace';
import { loadReviewNoticeSettings } from './review-notice-config';
import { installTelemetry, loadTelemetryConfig } from './telemetry';
import { workerCacheOptions } from './worker-cache';
import { resolveWorkflowSource, workflowSourceOptions } from './workflow-bundle';

/** The store comes from the environment: EPISODES_STORE_URL (PostgreSQL), else the file store (EPISODES_DATA_DIR). */
export function buildDeps(config: PipelineConfig = loadConfig(), logger?: Logger): ActivityDeps {
  return {
    store: openStore({ applicationName: storeApplicationName('worker') }),
    // Read lazily by paid activities, after their episode guard: never at start-up, never by zero-cost work.
    credentials: envCredentialsLoader(process.env, logger ? { warn: (message) => void logger.warn(message) } : {}),
    vendor: vendorEndpointFromEnv(),
    budgetCents: config.budgetCents,
    reviewNotice: loadReviewNoticeSettings(),
  };
}

function describeReviewNotices(settings: ReviewNoticeSettings | undefined): string {
  if (!settings?.webhookUrl) return 'review notices off (no EPISODES_REVIEW_WEBHOOK_URL)';
  const link = settings.publicUrl
    ? `linking to ${settings.publicUrl.href}`
    : 'without a link (no EPISODES_REVIEW_PUBLIC_URL)';
  return `review notices to ${describeWebhook(settings.webhookUrl)}, ${link}`;
}

export async function createWorker(
  config: PipelineConfig,
  deps: ActivityDeps,
  extra: Partial<WorkerOptions> = {},
  logger: Logger = Runtime.instance().logger,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const workflows = workflowSourceOptions(await resolveWorkflowSource(), logger);
  const connection = await connectNativeConnection(config.temporal);
  try {
    // Polling a namespace without EpisodeId/WeekId would leave every weekly run retrying its first task forever.
    await requireNamespaceReady(connection, config.temporal.namespace);
  } catch (e) {
    await connection.close();
    throw e;
  }
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.taskQueue,
    ...workflows,
    ...workerCacheOptions(),
    // Temporal's own records of allocations, for re-asserting one the store forgot (src/activities/reassertion.ts).
    activities: createActivities({
      allocationRecords: temporalAllocationRecords(new Client({ connection, namespace: config.temporal.namespace })),
      ...deps,
    }),
    ...extra,
  });
  return { worker, connection };
}

async function main(config: PipelineConfig): Promise<void> {
  // First: the Runtime (logger, metrics) must exist before any connection.
  const logger = installTelemetry(loadTelemetryConfig());
  const deps = buildDeps(config, logger);
  // Schema migrations and connectivity now, before polling: a store that is down is waited for (one line per attempt),
  // a misconfigured one fails the start, never the first activity.
  await prepareStore(deps.store, { onRetry: (line) => console.error(`worker: waiting for the store: ${line}`) });
  const { worker, connection } = await createWorker(config, deps, {}, logger);
  logger.info(
    `worker: task queue ${config.taskQueue} on ${describeSettings(config.temporal)}, ` + `${deps.store.description}`,
  );
  logger.info(`worker: ${describeReviewNotices(deps.reviewNotice)}`);
  try {
    // Worker.run() resolves after a shutdown signal (SIGINT, SIGTERM, ...) once in-flight tasks have drained.
    await worker.run();
  } finally {
    await deps.store.close();
    await connection.close();
  }
}

if (require.main === module) {
  let config: PipelineConfig | undefined;
  Promise.resolve()
    .then(() => main((config = loadConfig())))
    .then(
      () => process.exit(0),
      (e: unknown) => {
        // One line, as the CLI's errors: a stack trace would bury the cause (and could quote a secret).
        const text =
          e instanceof PipelineError ? `${e.type}: ${e.message}` : e instanceof Error ? e.message : String(e);
        console.error(
          `worker failed: ${redactSecrets(text, { apiKey: config?.temporal.apiKey })}`.replace(/\s+/g, ' '),
        );
        process.exit(1);
      },
    );
}
