#!/usr/bin/env node
// `npm run vendor:conformance -- NAME`: the pay-once fault rows (test/integration/vendors/conformance.ts) against one adapter and
// its simulator, i.e. the compiled test/integration/vendors/NAME-conformance.test.ts, one file on one worker. See docs/vendors.md.
import { spawnSync } from 'node:child_process';
import console from 'node:console';
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIR = path.join(ROOT, 'dist', 'test', 'integration', 'vendors');
const SUFFIX = '-conformance.test.js';

const name = process.argv[2] ?? '';
const file = path.join(DIR, `${name}${SUFFIX}`);
if (!/^[a-z][a-z0-9-]{0,31}$/.test(name) || !existsSync(file)) {
  const known = existsSync(DIR) ? readdirSync(DIR).filter((f) => f.endsWith(SUFFIX)) : [];
  console.error(`usage: npm run vendor:conformance -- NAME`);
  console.error(`NAME: one of ${known.map((f) => f.slice(0, -SUFFIX.length)).join(', ') || '(none built)'}`);
  process.exit(2);
}
const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'run-tests.mjs'), '--jobs', '1', file], {
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
