/**
 * The common set-up of workflow tests: one dev server per file; per test a data dir with a file store, a vendor
 * simulator, spying credentials and a unique task queue; workers with real activities; an operator's CLI environment.
 */
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../src/activities';
import type { EpisodeStore } from '../src/store/episode-store';
import { FileEpisodeStore } from '../src/store/file-store';
import type { VendorSimulator, VendorSimulatorOptions } from '../src/vendor-sim/simulator';
import { WORKFLOW_TEST_API_KEY, spyingCredentials, startTestVendor, testDeps, type SpyingCredentials } from './deps';
import { createTestEnv, createTestWorker, uniqueTaskQueue, workflowBundle } from './temporal';

export interface WorkerSetup {
  env: TestWorkflowEnvironment;
  taskQueue: string;
  store: EpisodeStore;
  vendor: VendorSimulator;
  creds?: SpyingCredentials;
  bundle?: WorkflowBundleWithSourceMap;
  /** An unversioned worker, as code from before worker versioning ran (the upgrade test's old commit). */
  unversioned?: boolean;
}

/** Runs `fn` while a worker with real activities (and the current workflows, unless another bundle is given) polls. */
export async function runWithWorker<T>(
  setup: WorkerSetup,
  fn: () => Promise<T>,
  extra: Partial<ActivityDeps> = {},
): Promise<T> {
  const options = {
    connection: setup.env.nativeConnection,
    taskQueue: setup.taskQueue,
    workflowBundle: setup.bundle ?? (await workflowBundle()),
    activities: createActivities(testDeps(setup.store, setup.vendor, setup.creds, extra)),
  };
  const worker = setup.unversioned ? await Worker.create(options) : await createTestWorker(options);
  return worker.runUntil(fn);
}

/** What an operator's shell has: the data dir, the vendor and its key, the Temporal server and task queue. */
export function operatorEnv(o: { dir: string; vendorUrl: string; address: string; taskQueue: string }) {
  return {
    EPISODES_DATA_DIR: o.dir,
    EPISODES_STORE_URL: '',
    EPISODES_VENDOR_BASE_URL: o.vendorUrl,
    EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
    EPISODES_VENDOR_API_KEY_FILE: '',
    TEMPORAL_ADDRESS: o.address,
    EPISODES_TASK_QUEUE: o.taskQueue,
  };
}

export interface WorkflowHarness extends WorkerSetup {
  dir: string;
  store: FileEpisodeStore;
  creds: SpyingCredentials;
  /** Replaces this test's vendor simulator by one with these options. */
  restartVendor(options: Partial<VendorSimulatorOptions>): Promise<void>;
  withWorker<T>(fn: () => Promise<T>, extra?: Partial<ActivityDeps>): Promise<T>;
  operatorEnv(): ReturnType<typeof operatorEnv>;
}

/** Registers the mocha hooks; the returned object's fields are valid inside tests. */
export function useWorkflowHarness(prefix: string): WorkflowHarness {
  const h = {
    async restartVendor(options: Partial<VendorSimulatorOptions>) {
      await h.vendor.close();
      h.vendor = await startTestVendor(options);
    },
    withWorker: <T>(fn: () => Promise<T>, extra?: Partial<ActivityDeps>) => runWithWorker(h, fn, extra),
    operatorEnv: () =>
      operatorEnv({ dir: h.dir, vendorUrl: h.vendor.url, address: h.env.address, taskQueue: h.taskQueue }),
  } as WorkflowHarness;
  before(async () => {
    h.env = await createTestEnv();
    await workflowBundle();
  });
  after(async () => {
    await h.env?.teardown();
  });
  beforeEach(async () => {
    h.dir = mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
    h.store = new FileEpisodeStore(h.dir);
    h.vendor = await startTestVendor();
    h.creds = spyingCredentials();
    h.taskQueue = uniqueTaskQueue();
  });
  afterEach(async () => {
    await h.vendor.close();
    await fs.rm(h.dir, { recursive: true, force: true });
  });
  return h;
}
