/**
 * Preloaded with `NODE_OPTIONS=--require` into one contender of the stale-lock test: its first removal of the
 * `pipeline.lock` directory waits RELIABILITY_SLOW_LOCK_RMDIR_MS before it happens, as if the process had been
 * descheduled right after it judged the lock stale (what a loaded machine does now and then). Nothing else changes.
 */
// Default import: the module object itself (a namespace import would be a copy that patching cannot reach).
import fs from 'node:fs';
import * as path from 'node:path';

const delayMs = Number(process.env.RELIABILITY_SLOW_LOCK_RMDIR_MS ?? 0);
let pending = delayMs > 0;

/** True once, for the first removal of the lock directory. */
function delayThis(p: unknown): boolean {
  if (!pending || typeof p !== 'string' || path.basename(p) !== 'pipeline.lock') return false;
  pending = false;
  process.stderr.write(`slow-lock-removal: delaying the removal of ${p} by ${delayMs} ms\n`); // the test checks it
  return true;
}

const rmdir = fs.rmdir.bind(fs) as (...args: unknown[]) => void;
(fs as { rmdir: unknown }).rmdir = (...args: unknown[]): void => {
  if (delayThis(args[0])) setTimeout(() => rmdir(...args), delayMs);
  else rmdir(...args);
};
const rmdirPromise = fs.promises.rmdir.bind(fs.promises);
fs.promises.rmdir = async (p, options) => {
  if (delayThis(p)) await new Promise((resolve) => setTimeout(resolve, delayMs));
  return rmdirPromise(p, options);
};
