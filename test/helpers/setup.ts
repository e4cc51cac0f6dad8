/** Mocha root setup: quiet SDK logs: tests provoke failures on purpose, so only errors show. */
import { DefaultLogger, Runtime } from '@temporalio/worker';

Runtime.install({ logger: new DefaultLogger('ERROR') });
