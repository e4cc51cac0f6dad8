/**
 * Mocha root setup. SDK and activity logs are captured (tests check that no secret ever reaches them) and only
 * errors are printed: tests provoke failures on purpose, so warnings would be noise.
 */
import { inspect } from 'node:util';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { killLeftoverProcesses } from './processes';

const MAX_CAPTURED = 50_000;
export const capturedLogs: string[] = [];

Runtime.install({
  logger: new DefaultLogger('DEBUG', (entry: LogEntry) => {
    const line = `${entry.level} ${entry.message} ${inspect(entry.meta, { depth: 6 })}`;
    if (capturedLogs.length < MAX_CAPTURED) capturedLogs.push(line);
    if (entry.level === 'ERROR') console.error(line);
  }),
});

/** Root hooks: no child process outlives the run. */
export const mochaHooks = {
  afterAll(): void {
    killLeftoverProcesses();
  },
};
