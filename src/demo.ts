/**
 * `npm run demo`: the main job on the embedded defaults. Starts (or reuses) the local dev server via temporal-dev.sh
 * and the vendor simulator, runs a worker, ensures the weekly schedule, triggers one scheduled run, and follows its
 * episode through production: video and cover, approval (automatic, or `--interactive` to wait for
 * `episodes approve`), assembly, completion. Prints the episode, its remote jobs, its ledger and its media hashes.
 * The dev server keeps running afterwards so the UI can be browsed; `./temporal-dev.sh stop` stops it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { Client, ScheduleAlreadyRunning, WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { describeEpisode } from './cli/allocation-commands';
import { weeklyScheduleOptions } from './cli/schedule-commands';
import { loadConfig } from './config';
import { parseEpisodeId } from './domain/episode-id';
import { SCHEDULE_ID } from './domain/names';
import { FileEpisodeStore } from './store/file-store';
import { DEFAULT_VENDOR_PORT } from './vendor-api/api';
import { staticCredentialsLoader } from './vendor-api/credentials';
import { startVendorSimulator } from './vendor-sim/simulator';
import { connectClient } from './temporal-connection';
import { createWorker } from './worker';
import type { episodeProductionWorkflow, weeklyEpisodeWorkflow } from './workflows';
import { approveSignal, statusQuery } from './workflows/messages';

const ROOT = path.resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  const interactive = process.argv.includes('--interactive');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig();
  if (!config.temporal.addressConfigured) {
    // No TEMPORAL_ADDRESS and no profile naming a server: the local dev server, started (or reused) here.
    execFileSync('bash', [path.join(ROOT, 'temporal-dev.sh'), 'start'], { stdio: 'inherit' });
    config.temporal = { ...config.temporal, address: '127.0.0.1:7233' };
  }
  const store = new FileEpisodeStore();
  // The simulator keeps its jobs in the data dir, so a production interrupted in one demo resumes in the next.
  const apiKey = process.env.VENDOR_API_KEY ?? `demo-${randomBytes(12).toString('hex')}`;
  const vendor = await startVendorSimulator({
    apiKey,
    port: Number(process.env.DEMO_VENDOR_PORT ?? DEFAULT_VENDOR_PORT),
    stateFile: path.join(store.dataDir, 'vendor-simulator.json'),
    jobDurationMs: 500,
  });
  console.log(`vendor simulator: ${vendor.url}`);
  const { worker, connection: workerConnection } = await createWorker(config, {
    store,
    credentials: staticCredentialsLoader(apiKey),
    vendor: { baseUrl: new URL(vendor.url), timeoutMs: 5_000 },
    budgetCents: config.budgetCents,
  });
  const connection = await connectClient(config.temporal);
  const client = new Client({ connection, namespace: config.temporal.namespace });
  try {
    await worker.runUntil(async () => {
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
      const schedule = client.schedule.getHandle(SCHEDULE_ID);
      const recent = async () =>
        (await schedule.describe()).info.recentActions.map((a) => a.action.workflow.workflowId);
      const before = new Set(await recent());
      await schedule.trigger();
      const workflowId = await poll('the triggered run', async () => (await recent()).find((id) => !before.has(id)));
      console.log(`scheduled run ${workflowId} (its workflow ID is the allocation key)`);
      const weekly = await client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(workflowId).result();
      console.log(`allocated ${weekly.episodeId} (week ${weekly.weekId}, sequence ${weekly.sequence})`);

      const production = client.workflow.getHandle<typeof episodeProductionWorkflow>(weekly.production.workflowId);
      await poll('approval', async () =>
        (await production.query(statusQuery)).phase === 'awaiting_approval' ? true : undefined,
      );
      if (interactive) {
        console.log(`waiting for approval: npx episodes approve ${weekly.episodeId}   (or rework --notes "...")`);
      } else {
        console.log('video and cover are ready; approving as "demo"');
        await production.signal(approveSignal, { by: 'demo' });
      }
      const result = await production.result();
      const state = await store.requireEpisode(parseEpisodeId(weekly.episodeId).episodeId);
      console.log('');
      console.log(describeEpisode(state));
      console.log('');
      console.log(`outcome:     ${result.outcome}`);
      console.log(`data dir:    ${store.dataDir}`);
      console.log(`Temporal UI: http://127.0.0.1:8233/namespaces/${config.temporal.namespace}/workflows/${workflowId}`);
      console.log('run `npm run demo` again: the next run of this week gets the next sequence.');
    });
  } catch (e) {
    if (e instanceof WorkflowFailedError) console.error(`workflow failed: ${e.cause?.message ?? e.message}`);
    throw e;
  } finally {
    await connection.close();
    await workerConnection.close();
    await vendor.close();
  }
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
