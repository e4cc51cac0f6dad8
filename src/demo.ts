/**
 * `npm run demo`: the main job on the embedded defaults. Starts (or reuses) the local dev server via temporal-dev.sh,
 * runs a worker, ensures the weekly schedule, triggers one scheduled run, and shows the episode it was allocated.
 * The dev server keeps running afterwards so the UI can be browsed; `./temporal-dev.sh stop` stops it.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { Client, Connection, ScheduleAlreadyRunning } from '@temporalio/client';
import { parseEpisodeId } from './domain/episode-id';
import { describeEpisode } from './cli/allocation-commands';
import { weeklyScheduleOptions } from './cli/schedule-commands';
import { loadConfig } from './config';
import { SCHEDULE_ID } from './shared';
import { FileEpisodeStore } from './store/file-store';
import { createWorker } from './worker';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { weeklyEpisodeWorkflow } from './workflows';

const ROOT = path.resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig();
  if (!process.env.TEMPORAL_ADDRESS) {
    execFileSync('bash', [path.join(ROOT, 'temporal-dev.sh'), 'start'], { stdio: 'inherit' });
    config.temporalAddress = '127.0.0.1:7233';
  }
  const store = new FileEpisodeStore();
  const { worker, connection: workerConnection } = await createWorker(config, { store });
  const connection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection, namespace: config.temporalNamespace });
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
      const handle = client.schedule.getHandle(SCHEDULE_ID);
      const before = new Set((await handle.describe()).info.recentActions.map((a) => a.action.workflow.workflowId));
      await handle.trigger();
      const workflowId = await waitForNewRun(async () =>
        (await handle.describe()).info.recentActions
          .map((a) => a.action.workflow.workflowId)
          .find((id) => !before.has(id)),
      );
      console.log(`scheduled run ${workflowId} started (its workflow ID is the allocation key)`);
      const result = await client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(workflowId).result();
      const state = await store.requireEpisode(parseEpisodeId(result.episodeId).episodeId);
      console.log('');
      console.log(describeEpisode(state));
      console.log('');
      console.log(`data dir:    ${store.dataDir}`);
      console.log(`Temporal UI: http://127.0.0.1:8233/namespaces/${config.temporalNamespace}/workflows/${workflowId}`);
    });
  } finally {
    await connection.close();
    await workerConnection.close();
  }
}

async function waitForNewRun(find: () => Promise<string | undefined>): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const id = await find();
    if (id) return id;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the triggered run did not appear within 20 s');
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error('demo failed:', e);
    process.exit(1);
  },
);
