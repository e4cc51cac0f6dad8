/**
 * What the Temporal sections share: one dev server (the CLI binary from temporal-dev.sh, via the tests' harness), the
 * vendor simulator at zero job latency (weekly runs start a production that pays for video and cover), and one
 * bundle of the real workflows plus the bench floor.
 */
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { ActivityDeps } from '../src/activities';
import type { EpisodeStore } from '../src/store/episode-store';
import { formatWeekId } from '../src/domain/week-id';
import { staticCredentialsLoader } from '../src/vendor-api/credentials';
import { startVendorSimulator, type VendorSimulator } from '../src/vendor-sim/simulator';
import { productionWorkflowId } from '../src/domain/names';
import { statusQuery } from '../src/workflows/messages';
import { createTestEnv } from '../testkit/temporal';
import { nowMs } from './stats';
import { nativeVendors } from '../src/vendors/directory';

/** Not a secret: the simulator's key for this run only. */
const BENCH_API_KEY = 'bench-vendor-key-0000';

export interface TemporalContext {
  env: TestWorkflowEnvironment;
  vendor: VendorSimulator;
  bundle: WorkflowBundleWithSourceMap;
  /** Activity dependencies for an in-process worker. */
  deps(store: EpisodeStore): ActivityDeps;
  /** Environment for a worker process (`node dist/src/worker.js`) on this server and simulator. */
  workerEnv(taskQueue: string, dataDir: string): NodeJS.ProcessEnv;
  close(): Promise<void>;
}

const quiet = () => undefined;

/**
 * In-process bench workers run the bench's own bundle (the pipeline's workflows plus the floor's): another build than
 * the worker processes' dist bundle, so a deployment of their own (one deployment routes all its task queues to one
 * current build).
 */
export const BENCH_IN_PROCESS = { deploymentName: 'bench-in-process' };

export async function startTemporalContext(): Promise<TemporalContext> {
  const env = await createTestEnv();
  // Synthetic media: the rows measure orchestration at zero vendor latency, not ffmpeg rendering a preview.
  const vendor = await startVendorSimulator({ apiKey: BENCH_API_KEY, jobDurationMs: 0, media: 'synthetic' });
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflows'),
    logger: { info: quiet, warn: quiet, error: console.error, debug: quiet, trace: quiet, log: quiet },
  });
  return {
    env,
    vendor,
    bundle,
    deps: (store) => ({
      store,
      vendors: nativeVendors(staticCredentialsLoader(BENCH_API_KEY), {
        baseUrl: new URL(vendor.url),
        timeoutMs: 10_000,
      }),
      budgetCents: 1_000_000,
    }),
    workerEnv: (taskQueue, dataDir) => ({
      TEMPORAL_ADDRESS: env.address,
      EPISODES_TASK_QUEUE: taskQueue,
      EPISODES_DATA_DIR: dataDir,
      EPISODES_STORE_URL: '',
      EPISODES_FAILPOINTS: '',
      EPISODES_VENDOR_BASE_URL: vendor.url,
      EPISODES_VENDOR_API_KEY: BENCH_API_KEY,
      EPISODES_VENDOR_API_KEY_FILE: '',
      EPISODES_BUDGET_CENTS: '1000000',
    }),
    close: async () => {
      await vendor.close();
      await env.teardown();
    },
  };
}

/**
 * Polls the production's status query (every 5 ms, bounded) until it waits for approval. The workflow's own phase,
 * not the store's status: the store says `awaiting_approval` a moment before the workflow accepts an approval.
 */
export async function waitForApprovalPoint(client: Client, episodeId: string, timeoutMs: number): Promise<void> {
  const handle = client.workflow.getHandle(productionWorkflowId(episodeId));
  const deadline = nowMs() + timeoutMs;
  for (;;) {
    const phase = await handle.query(statusQuery).then(
      (s) => s.phase,
      () => 'not started',
    );
    if (phase === 'awaiting_approval') return;
    if (nowMs() > deadline) throw new Error(`production of ${episodeId} still ${phase} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * The i-th week (i >= 0) of a block that starts at week 1 of `year`. Production workflow IDs derive from episode ids
 * alone, and every bench store numbers its episodes from 0, so each use of the shared dev server takes its own block.
 */
export function blockWeek(year: number, i: number): string {
  return formatWeekId(year + Math.floor(i / 52), 1 + (i % 52));
}
