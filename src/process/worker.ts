/**
 * The worker's wiring: builds the real dependencies and runs workflows and activities on the task queue (entry point:
 * src/worker.ts).
 * Connects with the TEMPORAL_* profile (src/process/temporal-connection.ts) and refuses to start on a namespace without
 * the search attributes the workflows set; runs as one version of a Worker Deployment (src/process/worker-deployment.ts,
 * docs/deploy.md); SIGINT or SIGTERM drain in-flight tasks, then exit.
 */
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { Runtime, type Worker, type Logger, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { temporalAllocationRecords } from '../activities/allocation-records';
import { snakeCaseMetricTags } from '../activities/metrics';
import { describeWebhook, type ReviewNoticeSettings } from '../activities/review-notice';
import { paidStepWorkflowId, SCHEDULE_ID } from '../domain/names';
import type { PipelineConfig } from './config';
import type { EpisodeStore } from '../store/episode-store';
import { openStore, prepareStore, storeApplicationName } from '../store/open-store';
import { connectNativeConnection, describeSettings } from './temporal-connection';
import { requireNamespaceReady } from './temporal-namespace';
import { loadReviewNoticeSettings } from './review-notice-config';
import { clusterGauges, readClusterFacts, setClusterGauges } from './cluster-metrics';
import { startPricePublisher } from './price-publisher';
import { callbackSettingsFromEnv, startCallbackReceiver, type CallbackReceiver } from './callback-receiver';
import { reconciledSignal } from '../workflows/messages';
import { setStateGauges, startPeriodicMetrics, stateGauges, stateMetricsIntervalMs } from './state-metrics';
import { installTelemetry, loadTelemetryConfig } from './telemetry';
import { workerCacheOptions } from './worker-cache';
import { refuseFailpointsOutsideTests } from '../failpoints';
import { resolveWorkflowSource, workflowSourceOptions } from './workflow-bundle';
import {
  createVersionedWorker,
  deploymentVersion,
  describeDeployment,
  describeRouting,
  loadDeploymentSettings,
} from './worker-deployment';
import { vendorsFromEnv } from '../vendors/directory';

/** The store comes from the environment: EPISODES_STORE_URL (PostgreSQL), else the file store (EPISODES_DATA_DIR). */
export function openWorkerStore(): EpisodeStore {
  return openStore({ applicationName: storeApplicationName('worker') });
}

export function buildDeps(config: PipelineConfig, store: EpisodeStore, logger?: Logger): ActivityDeps {
  return {
    store,
    // Keys read lazily by paid activities after their episode guard, and by the price publisher for each round; never
    // by zero-cost activities.
    vendors: vendorsFromEnv(process.env, logger ? (message) => void logger.warn(message) : undefined),
    budgetCents: config.budgetCents,
    reviewNotice: loadReviewNoticeSettings(),
    callbackUrl: callbackSettingsFromEnv()?.publicUrl,
  };
}

function describeReviewNotices(settings: ReviewNoticeSettings | undefined): string {
  if (!settings?.webhookUrl) return 'review notices off (no EPISODES_REVIEW_WEBHOOK_URL)';
  const link = settings.publicUrl
    ? `linking to ${settings.publicUrl.href}`
    : 'without a link (no EPISODES_REVIEW_PUBLIC_URL)';
  return `review notices to ${describeWebhook(settings.webhookUrl)}, ${link}`;
}

export interface CreatedWorker {
  worker: Worker;
  connection: NativeConnection;
  /** The deployment version it polls as (EPISODES_DEPLOYMENT_NAME, build id from the bundle or EPISODES_BUILD_ID). */
  version: WorkerDeploymentVersion;
}

/**
 * The worker, versioned: beside it, the deployment's first build makes itself current once it polls (later builds are
 * promoted by an operator, `episodes deploy`). `extra` may override any option (tests).
 */
export async function createWorker(
  config: PipelineConfig,
  deps: ActivityDeps,
  extra: Partial<WorkerOptions> = {},
  logger: Logger = Runtime.instance().logger,
): Promise<CreatedWorker> {
  const source = await workflowSourceOptions(await resolveWorkflowSource(), logger);
  const version = deploymentVersion(loadDeploymentSettings(), source.sha256);
  const connection = await connectNativeConnection(config.temporal);
  try {
    // Polling a namespace without EpisodeId/WeekId would leave every weekly run retrying its first task forever.
    await requireNamespaceReady(connection, config.temporal.namespace);
  } catch (e) {
    await connection.close();
    throw e;
  }
  const options: WorkerOptions & { connection: NativeConnection } = {
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.taskQueue,
    ...source.options,
    ...workerCacheOptions(),
    // Temporal's own records of allocations, for re-asserting one the store forgot (src/activities/reassertion.ts).
    activities: createActivities({
      allocationRecords: temporalAllocationRecords(new Client({ connection, namespace: config.temporal.namespace })),
      ...deps,
    }),
    interceptors: { activity: [snakeCaseMetricTags] },
    ...extra,
  };
  const worker = await createVersionedWorker(options, version, (line) => {
    logger.info(line);
  });
  return { worker, connection, version };
}

/** "deployment version <name>:<build> (current)", or what to run to make it so; never fails the start. */
async function routingOf(connection: NativeConnection, namespace: string, version: WorkerDeploymentVersion) {
  try {
    return describeRouting(await describeDeployment(connection, namespace, version.deploymentName), version);
  } catch (e) {
    return `deployment version ${version.deploymentName}:${version.buildId} (routing unknown: ${(e as Error).message})`;
  }
}

/** The state and cluster gauges (docs/operations.md, "Metrics and logs"), through the Runtime's Prometheus exporter. */
function startMetricCollectors(
  o: { config: PipelineConfig; store: EpisodeStore; connection: NativeConnection; deploymentName: string },
  logger: Logger,
): () => void {
  const meter = Runtime.instance().metricMeter;
  const scope = {
    namespace: o.config.temporal.namespace,
    taskQueue: o.config.taskQueue,
    deploymentName: o.deploymentName,
    scheduleId: SCHEDULE_ID,
  };
  return startPeriodicMetrics(
    [
      async () =>
        setStateGauges(meter, stateGauges(await o.store.listUnfinishedEpisodes(), new Date(), o.config.budgetCents)),
      async () => setClusterGauges(meter, clusterGauges(await readClusterFacts(o.connection, scope), new Date())),
    ],
    stateMetricsIntervalMs(),
    (message) => {
      logger.warn(message);
    },
  );
}

/** The callback receiver when EPISODES_CALLBACK_* are set: a verified callback that settles a parked step signals it. */
async function startCallbacks(
  deps: ActivityDeps,
  connection: NativeConnection,
  config: PipelineConfig,
  logger: Logger,
): Promise<CallbackReceiver | undefined> {
  const settings = callbackSettingsFromEnv();
  if (!settings) return undefined;
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const receiver = await startCallbackReceiver(
    {
      store: deps.store,
      vendors: deps.vendors,
      log: (line) => void logger.warn(`worker: ${line}`),
      async signalReconciled(id, step, round) {
        await client.workflow
          .getHandle(paidStepWorkflowId(id, step, round))
          .signal(reconciledSignal)
          .catch((e: unknown) => {
            if (!(e instanceof WorkflowNotFoundError)) throw e;
          });
      },
    },
    settings.listen,
  );
  logger.info(`worker: vendor callbacks on ${receiver.url}, reached at ${settings.publicUrl.href}`);
  return receiver;
}

/** Runs the worker until a shutdown signal. Only tests open another store (testkit/unsafe-worker.ts). */
export async function runWorker(config: PipelineConfig, openWorkerStoreFn = openWorkerStore): Promise<void> {
  refuseFailpointsOutsideTests();
  // First: the Runtime (logger, metrics) must exist before any connection.
  const telemetry = loadTelemetryConfig();
  const logger = installTelemetry(telemetry);
  const deps = buildDeps(config, openWorkerStoreFn(), logger);
  // Schema migrations and connectivity now, before polling: a store that is down is waited for (one line per attempt),
  // a misconfigured one fails the start, never the first activity.
  await prepareStore(deps.store, { onRetry: (line) => console.error(`worker: waiting for the store: ${line}`) });
  const { worker, connection, version } = await createWorker(config, deps, {}, logger);
  const routing = await routingOf(connection, config.temporal.namespace, version);
  logger.info(
    `worker: task queue ${config.taskQueue}, ${routing}, on ${describeSettings(config.temporal)}, ` +
      `${deps.store.description}`,
  );
  logger.info(`worker: ${describeReviewNotices(deps.reviewNotice)}`);
  const stopMetrics = telemetry.metricsAddress
    ? startMetricCollectors({ config, store: deps.store, connection, deploymentName: version.deploymentName }, logger)
    : () => undefined;
  // The review desk shows these prices from the store, so that it never holds the vendor key (price-publisher.ts).
  const stopPrices = startPricePublisher(deps, {
    info: (message) => void logger.info(`worker: ${message}`),
    warn: (message) => void logger.warn(`worker: ${message}`),
  });
  const callbacks = await startCallbacks(deps, connection, config, logger);
  try {
    // Worker.run() resolves after a shutdown signal (SIGINT, SIGTERM, ...) once in-flight tasks have drained.
    await worker.run();
  } finally {
    stopMetrics();
    await callbacks?.close();
    await stopPrices();
    await deps.store.close();
    await connection.close();
  }
}
