/**
 * Tables that are one run's output live in the docs between markers and are written by the command that measured
 * them, never pasted:
 *
 *     <!-- bench:contention -->
 *     (written by the generator)
 *     <!-- /bench:contention -->
 *
 * The marker's first part names a generator (bench/doc-tables.ts, campaign/docs.ts, testkit/fault-tables.ts), the
 * second one of its tables. Each caption names the command, the commit and the machine (runCaption); the table is as
 * true as that run, and a reader can run it again. test/unit/docs/markers.test.ts checks that every marker is closed
 * and every table names its commit.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as prettier from 'prettier';
import { z } from 'zod';
import { gitFacts, machineFacts } from './machine';
import { machineSchema } from './machine';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

export interface DocTableGenerator<Input> {
  /** The marker prefix: `<!-- name:table -->`. */
  readonly name: string;
  /** The doc that holds its tables, relative to the repository root. */
  readonly doc: string;
  readonly tables: readonly string[];
  /** What one table is rendered from. */
  readonly input: z.ZodType<Input>;
  /** Markdown for one table, caption included. */
  render(table: string, input: Input): string;
  /** For tables a test run produces: their inputs from the rows its files kept (recordDocTablePart). */
  readonly fromParts?: (parts: Record<string, unknown>, run: RunFacts) => Partial<Record<string, Input>>;
}

// ---- the run a table came from: named in its caption ----

export const runFactsSchema = z.strictObject({
  command: z.string(),
  commit: z.string(),
  dirty: z.boolean(),
  started_at: z.iso.datetime(),
  duration_s: z.number().nonnegative(),
  machine: machineSchema.omit({ hostname: true }),
});
export type RunFacts = z.infer<typeof runFactsSchema>;

/** The facts of a run that started at `startedAt` with 1/5/15-min load `loadStart` and ends now. */
export function runFacts(command: string, startedAt: Date, loadStart: number[], dataPath = os.tmpdir()): RunFacts {
  const git = gitFacts(REPO_ROOT);
  const { hostname: _, ...machine } = machineFacts(dataPath, loadStart);
  return {
    command,
    commit: git.commit.slice(0, 7),
    dirty: git.dirty,
    started_at: startedAt.toISOString(),
    duration_s: Math.round((Date.now() - startedAt.getTime()) / 1000),
    machine,
  };
}

/** One line naming the command, the code and the machine: the caption above every generated table. */
export function runCaption(f: RunFacts): string {
  const m = f.machine;
  const when = f.started_at.slice(0, 16).replace('T', ' ');
  const took = f.duration_s >= 120 ? `${Math.round(f.duration_s / 60)} min` : `${f.duration_s} s`;
  const load = (l: number[]) => (l[0] ?? 0).toFixed(1);
  return wrap(
    `\`${f.command}\` at ${f.commit}${f.dirty ? ' (uncommitted changes)' : ''}, ${when} UTC, ${took}; ` +
      `${m.cpu_model}, ${m.cores} cores, ${Math.round(m.memory_mib / 1024)} GiB, Node ${m.node}, ${m.os}, ` +
      `${m.disk.fs_type} on ${m.disk.device}; load ${load(m.load_avg_start)} at start, ${load(m.load_avg_end)} at end.`,
  );
}

/** Prose lines of at most 120 characters, as the docs are written (prettier keeps line breaks as they are). */
function wrap(text: string, width = 120): string {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines.join('\n');
}

/** A markdown table: a header row, its rule, then the rows (a `|` inside a cell is escaped). */
export function markdownTable(head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) =>
    `| ${cells.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

// ---- markers ----

export interface Marker {
  generator: string;
  table: string;
  /** The text between the opening and the closing marker, trimmed. */
  content: string;
}

/** A marker stands alone on its line; one inside a fenced code block is an example, not a marker. */
const MARKER = /^<!--\s*(\/?)([a-z][a-z0-9-]*):([a-z0-9][a-z0-9-]*)\s*-->$/gm;
const blankCodeBlocks = (text: string) => text.replace(/^```[^]*?^```/gm, (block) => block.replace(/[^\n]/g, ' '));

/** Every marker pair of a doc; throws, naming the doc, on a marker left open, closed twice, nested or repeated. */
export function findMarkers(text: string, doc: string): Marker[] {
  const found: Marker[] = [];
  let open: { generator: string; table: string; after: number } | undefined;
  for (const m of blankCodeBlocks(text).matchAll(MARKER)) {
    const [whole, slash, generator, table] = m as unknown as [string, string, string, string];
    const id = `${generator}:${table}`;
    if (!slash) {
      if (open) throw new Error(`${doc}: <!-- ${id} --> inside <!-- ${open.generator}:${open.table} -->`);
      if (found.some((f) => f.generator === generator && f.table === table)) throw new Error(`${doc}: ${id} twice`);
      open = { generator, table, after: m.index + whole.length };
    } else {
      if (!open || open.generator !== generator || open.table !== table) {
        throw new Error(`${doc}: <!-- /${id} --> closes nothing`);
      }
      found.push({ generator, table, content: text.slice(open.after, m.index).trim() });
      open = undefined;
    }
  }
  if (open) throw new Error(`${doc}: <!-- ${open.generator}:${open.table} --> is never closed`);
  return found;
}

function replaceBlock(text: string, doc: string, id: string, body: string): string {
  const scan = blankCodeBlocks(text);
  const start = scan.search(new RegExp(`^<!-- ${id} -->$`, 'm'));
  const end = scan.search(new RegExp(`^<!-- /${id} -->$`, 'm'));
  if (start < 0 || end < start) throw new Error(`${doc} has no <!-- ${id} --> ... <!-- /${id} --> to write into`);
  return `${text.slice(0, start)}<!-- ${id} -->\n\n${body}\n\n${text.slice(end)}`;
}

/** A table rendered and formatted as `npm run lint` wants it, so that writing it leaves the doc lint-clean. */
export async function renderDocTable<I>(generator: DocTableGenerator<I>, table: string, input: I): Promise<string> {
  const md = generator.render(table, input);
  return (await prettier.format(md, { ...(await prettierOptions()), parser: 'markdown' })).trim();
}

async function prettierOptions(): Promise<prettier.Options> {
  return (await prettier.resolveConfig(path.join(REPO_ROOT, 'README.md'))) ?? {};
}

/** Writes the given tables into the generator's doc; the other tables stay as they are. */
export async function writeDocTables<I>(
  generator: DocTableGenerator<I>,
  inputs: Partial<Record<string, I>>,
  root = REPO_ROOT,
): Promise<string[]> {
  if (Object.values(inputs).every((i) => i === undefined)) return [];
  const docFile = path.join(root, generator.doc);
  let text = await fs.readFile(docFile, 'utf8');
  const written: string[] = [];
  for (const [table, input] of Object.entries(inputs)) {
    if (input === undefined) continue;
    if (!generator.tables.includes(table)) throw new Error(`${generator.name} has no table ${table}`);
    const parsed = generator.input.parse(input);
    const body = await renderDocTable(generator, table, parsed);
    text = replaceBlock(text, generator.doc, `${generator.name}:${table}`, body);
    written.push(`${generator.doc} ${generator.name}:${table}`);
  }
  await fs.writeFile(docFile, text);
  return written;
}

// ---- tables that a test run produces (npm run test:faults -- --write-docs) ----

/** Set by `scripts/run-tests.mjs --write-docs` for the test files: the directory their tables' rows go to. */
const PARTS_DIR = 'EPISODES_DOC_TABLE_PARTS';

/** Keeps one table's rows of this test run for the generator, when the run was asked to write the docs. */
export async function recordDocTablePart(name: string, data: unknown): Promise<void> {
  const dir = process.env[PARTS_DIR];
  if (!dir) return;
  await fs.writeFile(path.join(dir, `${name}.json`), JSON.stringify(data));
}
