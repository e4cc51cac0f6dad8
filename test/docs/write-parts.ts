/**
 * Run by `scripts/run-tests.mjs --write-docs` after a passing run: the rows the test files kept (recordDocTablePart)
 * go to every generator that builds tables from them, and those tables are written into the docs.
 *
 * `node dist/test/docs/write-parts.js --rerender` writes every table again from its recorded run, for a change to
 * a generator's format (the numbers and the run they name stay what they were).
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { readRecorded, runFacts, writeDocTables, type DocTableGenerator } from '../helpers/doc-tables';
import * as registered from './generators';

const runStart = z.strictObject({ command: z.string(), started_at: z.iso.datetime(), load_start: z.array(z.number()) });

const generators = Object.values(registered) as DocTableGenerator<unknown>[];

async function rerender(): Promise<void> {
  for (const generator of generators) {
    for (const line of await writeDocTables(generator, await readRecorded(generator))) console.log(`wrote ${line}`);
  }
}

async function main(dir: string): Promise<void> {
  const read = (file: string): unknown => JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
  const start = runStart.parse(read('run.json'));
  const files = readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'run.json');
  const parts = Object.fromEntries(files.map((f) => [f.slice(0, -'.json'.length), read(f)]));
  const facts = runFacts(start.command, new Date(start.started_at), start.load_start);
  let written = 0;
  for (const generator of generators) {
    const inputs = generator.fromParts?.(parts, facts) ?? {};
    for (const line of await writeDocTables(generator, inputs)) {
      console.log(`wrote ${line}`);
      written += 1;
    }
  }
  if (written === 0) console.log('--write-docs: no test in this run produces a doc table');
}

(process.argv[2] === '--rerender' ? rerender() : main(process.argv[2] ?? '')).catch((e: unknown) => {
  console.error(`--write-docs: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
