/**
 * `npm run demo`: the main job on the embedded defaults. Starts (or reuses) the local dev server via temporal-dev.sh
 * and the vendor simulator, runs a worker, ensures the weekly schedule, triggers one scheduled run, and follows its
 * episode through production: video and cover, approval (automatic, or `--interactive`: the review desk is served,
 * with a reviewer token printed, and the demo waits for the decision made there or with `episodes approve`), assembly,
 * completion. Prints the episode, its remote jobs, its ledger and its media hashes. `--vendor fal|replicate` runs the
 * same episode with every kind at that adapter, against its simulator (src/demo-vendor.ts), and prints its journal.
 * The dev server keeps running afterwards so the UI can be browsed; `./temporal-dev.sh stop` stops it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, ScheduleAlreadyRunning, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { describeEpisode } from './cli/allocation-commands';
import { weeklyScheduleOptions } from './cli/schedule-commands';
import { type DemoSettings, loadConfig, loadDemoSettings } from './process/config';
import { parseEpisodeId } from './domain/episode-id';
import { ErrorType, PipelineError } from './domain/errors';
import { formatMoney } from './domain/money';
import { SCHEDULE_ID, decisionUpdateId } from './domain/names';
import { FileEpisodeStore } from './store/file-store';
import { parseListenAddress } from './cli/review-commands';
import { listenProblem } from './review/desk-settings';
import { ReviewerStore } from './review/reviewers';
import { startReviewDesk } from './review/server';
import { connectClient } from './process/temporal-connection';
import { installTelemetry, loadTelemetryConfig } from './process/telemetry';
import { startPricePublisher } from './process/price-publisher';
import { createWorker } from './process/worker';
import { loadReviewNoticeSettings } from './process/review-notice-config';
import { adoptFirstBuild, versionName } from './process/worker-deployment';
import type { episodeProductionWorkflow, weeklyEpisodeWorkflow } from './workflows';
import { approveUpdate, statusQuery } from './workflows/messages';
import { demoVendorOf, startDemoVendor, type DemoVendor } from './demo-vendor';

const ROOT = path.resolve(__dirname, '..', '..');

type Config = ReturnType<typeof loadConfig>;
type ProductionHandle = WorkflowHandle<typeof episodeProductionWorkflow>;

async function main(): Promise<void> {
  const interactive = process.argv.includes('--interactive');
  const vendorName = demoVendorOf(process.argv.slice(2));
  // EPISODES_METRICS_ADDRESS as for `npm start`; the demo's own lines stay the story, so only warnings are logged.
  const telemetry = { ...loadTelemetryConfig(), logLevel: 'WARN' as const };
  installTelemetry(telemetry);
  if (telemetry.metricsAddress) console.log(`metrics: http://${telemetry.metricsAddress}/metrics`);
  const config = loadConfig();
  const demo = loadDemoSettings();
  startLocalDevServerUnlessConfigured(config, demo);
  const store = new FileEpisodeStore();
  // The native simulator keeps its jobs in the data dir, so a production interrupted in one demo resumes in the next.
  const vendor = await startDemoVendor(vendorName, demo, store.dataDir);
  console.log(vendorName === 'native' ? `vendor simulator: ${vendor.url}` : `${vendorName} simulator: ${vendor.url}`);
  const notices = loadReviewNoticeSettings();
  // Served before the worker starts, so the production's details (and a webhook's message) link to it.
  let connected: Promise<Client> | undefined;
  const getClient = () =>
    (connected ??= connectClient(config.temporal).then(
      (connection) => new Client({ connection, namespace: config.temporal.namespace }),
    ));
  const desk = interactive
    ? await startDemoDesk(store, getClient, config, { publicUrl: notices.publicUrl, listen: demo.reviewListen })
    : undefined;
  const vendors = vendor.vendors;
  const {
    worker,
    connection: workerConnection,
    version,
  } = await createWorker(config, {
    store,
    vendors,
    budgetCents: config.budgetCents,
    reviewNotice: { ...notices, publicUrl: notices.publicUrl ?? (desk && new URL(`${desk.url}/`)) },
  });
  // As `npm start` does: the desk shows the prices the worker publishes to the store.
  const stopPrices = startPricePublisher(
    { store, vendors },
    {
      info: () => undefined,
      warn: (message) => console.error(`worker: ${message}`),
    },
  );
  try {
    const client = await getClient();
    await worker.runUntil(async () => {
      // The demo's worker is the only one: after a code change (a new build) on a dev server kept from an earlier demo,
      // it makes its own build current, as `episodes deploy promote` would.
      const namespace = config.temporal.namespace;
      const o = await adoptFirstBuild(workerConnection, namespace, version, {
        stopped: () => false,
        evenIfNotFirst: true,
      });
      console.log(
        `worker: deployment version ${versionName(version)}: ${o === 'timed out' ? 'not registered' : 'current'}`,
      );
      await runOneScheduledEpisode({ client, store, config, demo, desk });
      if (vendorName !== 'native') printJournal(vendorName, vendor);
    });
  } catch (e) {
    if (e instanceof WorkflowFailedError) console.error(`workflow failed: ${e.cause?.message ?? e.message}`);
    throw e;
  } finally {
    await stopPrices();
    await desk?.close();
    await connected?.then(
      (client) => client.connection.close(),
      () => undefined,
    );
    await workerConnection.close();
    await vendor.close();
  }
}

/** What the vendor billed, charge by charge: the ledger above equals it (metered vendors bill at completion). */
function printJournal(name: string, vendor: DemoVendor): void {
  const charges = vendor.journal();
  console.log(`${name} billing journal (${charges.length} charges):`);
  for (const c of charges) console.log(`  ${c.job}  ${formatMoney(c.amount_cents, c.currency)}`);
}

/** No TEMPORAL_ADDRESS and no profile naming a server: the local dev server, started (or reused) here. */
function startLocalDevServerUnlessConfigured(config: Config, demo: DemoSettings): void {
  if (config.temporal.addressConfigured) return;
  execFileSync('bash', [path.join(ROOT, 'temporal-dev.sh'), 'start'], { stdio: 'inherit' });
  config.temporal = { ...config.temporal, address: demo.devServer.address };
}

interface DemoRun {
  client: Client;
  store: FileEpisodeStore;
  config: Config;
  demo: DemoSettings;
  desk: DemoDesk | undefined;
}

/** The demo's story: one scheduled run, allocated, produced, decided on, and its episode printed. */
async function runOneScheduledEpisode({ client, store, config, demo, desk }: DemoRun): Promise<void> {
  await ensureWeeklySchedule(client, config);
  const workflowId = await triggerScheduledRun(client);
  console.log(`scheduled run ${workflowId} (its workflow ID is the allocation key)`);
  const weekly = await client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(workflowId).result();
  console.log(`allocated ${weekly.episodeId} (week ${weekly.weekId}, sequence ${weekly.sequence})`);

  const production = client.workflow.getHandle<typeof episodeProductionWorkflow>(weekly.production.workflowId);
  await poll('approval', async () =>
    (await production.query(statusQuery)).phase === 'awaiting_approval' ? true : undefined,
  );
  if (desk) {
    console.log(`waiting for a decision in the review desk: ${desk.url}/episodes/${weekly.episodeId}`);
    console.log(`  sign in as ${DEMO_REVIEWER} with the token: ${desk.token}`);
    console.log(`  or: npx episodes approve ${weekly.episodeId}   (or rework --notes "...")`);
  } else await approveAsDemo(production, weekly.episodeId);
  const result = await production.result();
  const state = await store.requireEpisode(parseEpisodeId(weekly.episodeId).episodeId);
  console.log('');
  console.log(describeEpisode(state));
  console.log('');
  console.log(`outcome:     ${result.outcome}`);
  if (result.outcome === 'completed') console.log(`total cost:  ${formatMoney(result.totalCostCents)}`);
  console.log(`data dir:    ${store.dataDir}`);
  console.log(`Temporal UI: ${demo.devServer.uiUrl}/namespaces/${config.temporal.namespace}/workflows/${workflowId}`);
  console.log('run `npm run demo` again: the next run of this week gets the next sequence.');
}

async function ensureWeeklySchedule(client: Client, config: Config): Promise<void> {
  const options = weeklyScheduleOptions({
    scheduleId: SCHEDULE_ID,
    taskQueue: config.taskQueue,
    timezone: config.timezone,
  });
  try {
    await client.schedule.create(options);
    console.log(`schedule ${SCHEDULE_ID}: created (Mondays 09:00 ${config.timezone})`);
  } catch (e) {
    if (!(e instanceof ScheduleAlreadyRunning)) throw e;
    console.log(`schedule ${SCHEDULE_ID}: already there`);
  }
}

/** Triggers the schedule now and returns the workflow ID of the run it started (new among its recent actions). */
async function triggerScheduledRun(client: Client): Promise<string> {
  const schedule = client.schedule.getHandle(SCHEDULE_ID);
  const recent = async () => (await schedule.describe()).info.recentActions.map((a) => a.action.workflow.workflowId);
  const before = new Set(await recent());
  await schedule.trigger();
  return poll('the triggered run', async () => (await recent()).find((id) => !before.has(id)));
}

async function approveAsDemo(production: ProductionHandle, episodeId: string): Promise<void> {
  console.log('video and cover are ready; approving as "demo"');
  const updateId = decisionUpdateId(episodeId, 0, 'approve', 'demo');
  const accepted = await production.executeUpdate(approveUpdate, { args: [{ by: 'demo', round: 0 }], updateId });
  console.log(`accepted: round ${accepted.round} ${accepted.kind} by ${accepted.by}`);
}

const DEMO_REVIEWER = 'demo-reviewer';

interface DemoDesk {
  url: string;
  token: string;
  close(): Promise<void>;
}

/**
 * The review desk for `--interactive`, under the same listen rule as `review serve`. Its one reviewer lives in a
 * reviewers file of its own in a temporary folder, removed when the desk closes or the process exits: the reviewers
 * file of the environment is never touched.
 */
async function startDemoDesk(
  store: FileEpisodeStore,
  getClient: () => Promise<Client>,
  config: Config,
  desk: { publicUrl?: URL; listen: string },
): Promise<DemoDesk> {
  const listen = parseListenAddress(desk.listen, 'EPISODES_REVIEW_LISTEN');
  const problem = listenProblem(listen.host, desk.publicUrl, false);
  if (problem !== undefined) throw new PipelineError(ErrorType.InvalidInput, problem);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'episodes-demo-desk-'));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir);
  const reviewers = new ReviewerStore(path.join(dir, 'reviewers.json'));
  const token = await reviewers.add(DEMO_REVIEWER);
  const started = await startReviewDesk({
    ...listen,
    store,
    reviewers,
    getClient,
    budgetCents: config.budgetCents,
    timeZone: config.timezone,
    publicUrl: desk.publicUrl,
  });
  const close = async () => {
    await started.close();
    removeDir();
  };
  return { url: started.url, token, close };
}

async function poll<T>(what: string, find: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const found = await find();
      if (found !== undefined) return found;
    } catch {
      // Not there yet (e.g. a query before the workflow's first task).
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error('demo failed:', e instanceof Error ? e.message : e);
    process.exit(1);
  },
);
