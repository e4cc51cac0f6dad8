/**
 * Test harness for the real Temporal dev server: the CLI binary found or installed by temporal-dev.sh, started by the
 * SDK's TestWorkflowEnvironment with our search attributes. The SDK's own download is never used.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  type WorkflowBundleWithSourceMap,
  type NativeConnection,
  type Worker,
  type WorkerOptions,
} from '@temporalio/worker';
import { EpisodeIdSearchAttribute, WeekIdSearchAttribute } from '../src/domain/names';
import { createVersionedWorker, versionOfCode } from '../src/process/worker-deployment';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

let cliPath: string | undefined;

export function temporalCliPath(): string {
  cliPath ??=
    process.env.TEMPORAL_CLI_RESOLVED ??
    execFileSync('bash', [path.join(REPO_ROOT, 'temporal-dev.sh'), 'path'], { encoding: 'utf8' }).trim();
  process.env.TEMPORAL_CLI_RESOLVED = cliPath;
  return cliPath;
}

/**
 * The dev server runs a single history shard, whose transfer-queue reader polls at most 20 times a second by default
 * (`history.transferProcessorMaxPollRPS`, a per-shard limit sized for clusters of hundreds of shards). Once its burst
 * is spent, every hop of a workflow (a task dispatched, an activity or a child scheduled) waits for the next poll, up
 * to 50 ms. Raised, the one shard behaves like one shard of a real cluster. temporal-dev.sh passes the same value.
 */
export const DEV_SERVER_EXTRA_ARGS = ['--dynamic-config-value', 'history.transferProcessorMaxPollRPS=1000'];

/** `extraArgs`: more dev-server flags (e.g. `--dynamic-config-value` settings of one test file). */
export async function createTestEnv(extraArgs: readonly string[] = []): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporalCliPath() },
      ip: '127.0.0.1',
      searchAttributes: [EpisodeIdSearchAttribute, WeekIdSearchAttribute],
      extraArgs: [...DEV_SERVER_EXTRA_ARGS, ...extraArgs],
    },
  });
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Workflows bundled once per mocha process. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflows(require.resolve('../src/workflows'));
  return bundle;
}

/** Bundles the workflows at `workflowsPath`, printing only the bundler's errors. */
export function bundleWorkflows(workflowsPath: string): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath,
    logger: {
      info: () => undefined,
      warn: () => undefined,
      error: console.error,
      debug: () => undefined,
      trace: () => undefined,
      log: () => undefined,
    },
  });
}

let queueCounter = 0;
export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${process.pid}-${Date.now()}-${queueCounter++}`;
}

/**
 * Worker.create for tests, as the real worker runs: a version of the `weekly-media` deployment whose build id comes
 * from the bundle's code (the same as `node dist/src/worker.js` on the pre-built bundle), the first build current by
 * itself. The server refuses our workflows' versioning declarations from an unversioned worker.
 */
export function createTestWorker(
  options: Omit<WorkerOptions, 'workflowBundle'> & {
    connection: NativeConnection;
    workflowBundle: WorkflowBundleWithSourceMap;
  },
  version: Partial<WorkerDeploymentVersion> = {},
): Promise<Worker> {
  const ofCode = versionOfCode(options.workflowBundle.code);
  return createVersionedWorker(options, { ...ofCode, ...version }, () => undefined);
}
