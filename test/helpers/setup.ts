/** Mocha root setup: quiet SDK logs (warnings and errors still show). */
import { DefaultLogger, Runtime } from '@temporalio/worker';

Runtime.install({ logger: new DefaultLogger('WARN') });
