/**
 * The worker: builds the real dependencies and runs workflows and activities on the task queue.
 * Connects with the TEMPORAL_* profile (src/process/temporal-connection.ts) and refuses to start on a namespace without the
 * search attributes the workflows set; SIGINT or SIGTERM drain in-flight tasks, then exit.
 */
import { Runtime, Worker, type Logger, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities';
import { describeWebhook, type ReviewNoticeSettings } from './activities/review-notice';
import { loadConfig, type PipelineConfig } from './process/config';
import { PipelineError } from './domain/errors';
import { envCredentialsLoader } from './vendor-api/credentials';
import { vendorEndpointFromEnv } from './vendor-api/endpoint';
import type { EpisodeStore } from './store/episode-store';
import { openStore, prepareStore, storeApplicationName } from './store/open-store';
import { connectNativeConnection, describeSettings, redactSecrets } from './process/temporal-connection';
import { requireNamespaceReady } from './process/temporal-namespace';
import { loadReviewNoticeSettings } from './process/review-notice-config';
import { installTelemetry, loadTelemetryConfig } from './process/telemetry';
import { workerCacheOptions } from './process/worker-cache';
import { resolveWorkflowSource, workflowSourceOptions } from './process/workflow-bundle';

/** The store comes from the environment: EPISODES_STORE_URL (PostgreSQL), else the file store (EPISODES_DATA_DIR). */
export function openWorkerStore(): EpisodeStore {
  return openStore({ applicationName: storeApplicationName('worker') });
}

export function buildDeps(config: PipelineConfig, store: EpisodeStore, logger?: Logger): ActivityDeps {
  return {
    store,
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
    activities: createActivities(deps),
    ...extra,
  });
  return { worker, connection };
}

/** Runs the worker until a shutdown signal. Only tests open another store (test/helpers/unsafe-worker.ts). */
export async function runWorker(config: PipelineConfig, openWorkerStoreFn = openWorkerStore): Promise<void> {
  // First: the Runtime (logger, metrics) must exist before any connection.
  const logger = installTelemetry(loadTelemetryConfig());
  const deps = buildDeps(config, openWorkerStoreFn(), logger);
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
    .then(() => runWorker((config = loadConfig())))
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
