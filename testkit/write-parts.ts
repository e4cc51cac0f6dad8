/**
 * Run by `scripts/run-tests.mjs --write-docs` after a passing run: the rows the fault test files kept
 * (recordDocTablePart) become the fault tables of docs/reliability.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { runFacts, writeDocTables } from './doc-tables';
import { faultDocTables } from './fault-tables';

const runStart = z.strictObject({ command: z.string(), started_at: z.iso.datetime(), load_start: z.array(z.number()) });

async function main(dir: string): Promise<void> {
  const read = (file: string): unknown => JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
  const start = runStart.parse(read('run.json'));
  const files = readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'run.json');
  const parts = Object.fromEntries(files.map((f) => [f.slice(0, -'.json'.length), read(f)]));
  const facts = runFacts(start.command, new Date(start.started_at), start.load_start);
  const written = await writeDocTables(faultDocTables, faultDocTables.fromParts?.(parts, facts) ?? {});
  for (const line of written) console.log(`wrote ${line}`);
  if (written.length === 0) console.log('--write-docs: no test in this run produces a doc table');
}

main(process.argv[2] ?? '').catch((e: unknown) => {
  console.error(`--write-docs: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
