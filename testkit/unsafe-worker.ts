/**
 * Test-only entry point: the worker (src/worker.ts, same settings) on a store with one protection taken away, the
 * proof that a test of that protection can fail. Usage: node unsafe-worker.js <variant> (see unsafe-stores.ts).
 */
import { loadConfig } from '../src/process/config';
import { storeApplicationName } from '../src/store/open-store';
import { runWorker } from '../src/process/worker';
import { openUnsafeStore, unsafeVariantSchema } from './unsafe-stores';

const variant = unsafeVariantSchema.parse(process.argv[2]);
runWorker(loadConfig(), () => openUnsafeStore(variant, { applicationName: storeApplicationName('worker') })).then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(`unsafe worker (${variant}) failed:`, e);
    process.exit(1);
  },
);
