/**
 * Mocha root setup. SDK and activity logs are captured (tests check that no secret ever reaches them) and only
 * errors are printed: tests provoke failures on purpose, so warnings would be noise.
 */
import { inspect } from 'node:util';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { appendFileSync } from 'node:fs';
import * as path from 'node:path';
import { inParallelWorker, runEndOfFileTasks } from './end-of-file';
import { killLeftoverProcesses } from './processes';

// The test runner's marker: failpoints work in this process and in every process it starts (src/failpoints/).
process.env.EPISODES_TEST_PROCESS = '1';

const MAX_CAPTURED = 50_000;
export const capturedLogs: string[] = [];

Runtime.install({
  logger: new DefaultLogger('DEBUG', (entry: LogEntry) => {
    const line = `${entry.level} ${entry.message} ${inspect(entry.meta, { depth: 6 })}`;
    if (capturedLogs.length < MAX_CAPTURED) capturedLogs.push(line);
    if (entry.level === 'ERROR') console.error(line);
  }),
});

let fileStartedAt = 0;

/** Root hooks (once per file in a `mocha --parallel` worker, once per run otherwise): no child process outlives them. */
export const mochaHooks = {
  beforeAll(): void {
    fileStartedAt = Date.now();
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    killLeftoverProcesses();
    await runEndOfFileTasks();
    if (inParallelWorker) recordFileTime(this, (Date.now() - fileStartedAt) / 1000);
  },
};

/** Profiling (scripts/run-tests.mjs --profile): a worker's wall time per file, appended to $EPISODES_FILE_TIMES. */
function recordFileTime(context: Mocha.Context, seconds: number): void {
  const out = process.env.EPISODES_FILE_TIMES;
  const file = context.test?.parent?.suites[0]?.file ?? context.test?.parent?.tests[0]?.file;
  if (!out || !file) return;
  const relative = path.relative(path.resolve(__dirname, '..'), file);
  appendFileSync(out, `${JSON.stringify({ file: relative, seconds, worker: Number(process.env.MOCHA_WORKER_ID) })}\n`);
}

/**
 * Global teardown, in mocha's main process once all workers have exited: the PostgreSQL server of a worker that was
 * killed before its exit handler ran is stopped here (postgres.ts, loaded only now: it registers hooks when loaded).
 */
export async function mochaGlobalTeardown(): Promise<void> {
  if (!process.argv.includes('--parallel')) return;
  const { stopAbandonedServers } = await import('./postgres.js');
  stopAbandonedServers();
}
