/**
 * Entry point of the worker (`node dist/src/worker.js`): runs workflows and activities on the task queue until SIGINT or
 * SIGTERM, with the settings of the environment (docs/configuration.md). The wiring is in src/process/worker.ts.
 */
import { PipelineError } from './domain/errors';
import { loadConfig, type PipelineConfig } from './process/config';
import { redactSecrets } from './process/temporal-connection';
import { runWorker } from './process/worker';

let config: PipelineConfig | undefined;
Promise.resolve()
  .then(() => runWorker((config = loadConfig())))
  .then(
    () => process.exit(0),
    (e: unknown) => {
      // One line, as the CLI's errors: a stack trace would bury the cause (and could quote a secret).
      const text = e instanceof PipelineError ? `${e.type}: ${e.message}` : e instanceof Error ? e.message : String(e);
      console.error(`worker failed: ${redactSecrets(text, { apiKey: config?.temporal.apiKey })}`.replace(/\s+/g, ' '));
      process.exit(1);
    },
  );
