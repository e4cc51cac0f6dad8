/**
 * The result tables of docs/benchmarks.md, one per section, written by `npm run bench -- --write-docs` (or, from a
 * results file a run already wrote, `node dist/bench/doc-tables.js bench/results/<file>.json`). Each names the
 * command, the commit and the machine of its run.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  markdownTable,
  runCaption,
  runFactsSchema,
  writeDocTables,
  type DocTableGenerator,
} from '../testkit/doc-tables';
import { fmt, other } from './report';
import {
  profileSchema,
  resultsSchema,
  rowSchema,
  SECTIONS,
  type BenchResults,
  type Profile,
  type Row,
  type Section,
} from './results';

const input = z.strictObject({ run: runFactsSchema, rows: z.array(rowSchema), profiles: z.array(profileSchema) });
type BenchInput = z.infer<typeof input>;

/** A profile as one sentence: its parts from the largest, down to 5 % of the whole. */
function profileLine(p: Profile): string {
  const parts = Object.entries(p.parts_ms)
    .sort((a, b) => b[1] - a[1])
    .filter(([, ms]) => ms >= 0.05 * p.total_ms)
    .map(([k, ms]) => {
      const calls = p.calls[k];
      return `${k} ${fmt(ms)} ms (${Math.round((100 * ms) / p.total_ms)} %${calls === undefined ? '' : `, ${fmt(calls)} calls`})`;
    });
  return `Where the time of \`${p.row}\` goes (${p.what}; mean of ${p.samples}, ${fmt(p.total_ms)} ms): ${parts.join('; ')}.`;
}

/** Row, p50, p99, the other metrics, and each target with its verdict (a run with a failed check writes no docs). */
function cells(r: Row): string[] {
  if (r.status !== 'measured') return [r.label, '', '', r.reason, r.status];
  const ms = (v: number | undefined) => (v === undefined ? '' : fmt(v));
  const targets = r.targets.map((t) => `${t.name} ${fmt(t.value)} (≤ ${fmt(t.limit)}): ${t.pass ? 'PASS' : 'MISS'}`);
  return [r.label, ms(r.metrics.p50_ms), ms(r.metrics.p99_ms), other(r), targets.join('; ')];
}

function render(_table: string, i: BenchInput): string {
  const table = markdownTable(['row', 'p50 ms', 'p99 ms', 'other', 'target'], i.rows.map(cells));
  return [runCaption(i.run), table, ...i.profiles.map(profileLine)].join('\n\n');
}

export const benchDocTables: DocTableGenerator<BenchInput> = {
  name: 'bench',
  doc: 'docs/benchmarks.md',
  tables: SECTIONS,
  input,
  render,
};

/** One input per section the run measured; notes stay in the results file. */
export function benchTableInputs(results: BenchResults): Partial<Record<Section, BenchInput>> {
  const { hostname: _, ...machine } = results.machine;
  const run = {
    command: results.command,
    commit: results.git_commit.slice(0, 7),
    dirty: results.git_dirty,
    started_at: results.started_at,
    duration_s: Math.round(results.duration_s),
    machine,
  };
  const inputs: Partial<Record<Section, BenchInput>> = {};
  for (const section of SECTIONS) {
    const rows = results.rows
      .filter((r) => r.section === section)
      .map((r) => (r.status === 'measured' ? { ...r, notes: [] } : r));
    const profiles = results.profiles.filter((p) => p.row.startsWith(`${section}/`));
    if (rows.length) inputs[section] = { run, rows, profiles };
  }
  return inputs;
}

export async function writeBenchDocs(results: BenchResults): Promise<string[]> {
  if (results.mode !== 'full') throw new Error('--write-docs: only a full run writes the docs (not --smoke)');
  const failed = results.rows.filter(
    (r) => r.status === 'failed' || (r.status === 'measured' && r.checks.some((c) => !c.pass)),
  );
  if (failed.length) throw new Error(`a run with failed rows writes no docs: ${failed.map((r) => r.id).join(', ')}`);
  return writeDocTables(benchDocTables, benchTableInputs(results));
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node dist/bench/doc-tables.js bench/results/<file>.json');
  writeBenchDocs(resultsSchema.parse(JSON.parse(readFileSync(file, 'utf8')))).then(
    (written) => written.forEach((w) => console.log(`wrote ${w}`)),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
