/**
 * The fault tables of docs/reliability.md, written by `npm run test:faults -- --write-docs` from the rows the
 * reliability tests kept (their `reportTable` calls) once the whole run has passed: every row completed and ended in
 * `assertInvariants`, so no duplicate, no lost charge, `episodes verify` clean and no lock left are asserted, not
 * counted here.
 */
import { z } from 'zod';
import { markdownTable, runCaption, runFactsSchema, type DocTableGenerator, type RunFacts } from './doc-tables';

const cell = z.union([z.string(), z.number()]);
const num = z.number().int().nonnegative();
const part = <T extends z.ZodType>(row: T) => z.object({ full: z.boolean(), rows: z.array(row) });

const crashRow = z.object({
  store: z.enum(['file', 'postgres']),
  point: z.string(),
  billedAtDeath: cell,
  outcome: z.string(),
  charges: cell,
  ledger: cell,
  verify: z.string(),
  lock: z.string(),
  seconds: cell,
});
const soakRow = z.object({
  store: z.string(),
  runs: num,
  'SIGKILLs (lock holders)': num,
  charges: num,
  'ledger entries': num,
});
const restartRow = z.object({ runs: num, charges: num, 'ledger entries': num });
const staleRow = z.object({ round: cell, contenders: num });
const databaseRow = z.object({
  fault: z.string(),
  moment: z.string(),
  'npm test': z.string(),
  runs: num,
  outcome: z.string(),
  'recovery s': cell,
  charges: num,
  'ledger entries': num,
  seconds: num,
});
const summaryRow = z.strictObject({
  scenario: z.string(),
  faults: num,
  faultsText: z.string(),
  runs: num,
  runsText: z.string(),
  charges: num.nullable(),
  ledger: num.nullable(),
});

/** The reliability test files' parts, by the titles they print (`reportTable`). */
const PARTS = {
  'crash-matrix': part(crashRow),
  'concurrency-soak-file-store': part(soakRow),
  'concurrency-soak-postgres-store': part(soakRow),
  'server-restarts': part(restartRow),
  'stale-lock-takeover': part(staleRow),
  'database-faults': part(databaseRow),
};

const input = z.discriminatedUnion('table', [
  z.strictObject({ table: z.literal('summary'), run: runFactsSchema, rows: z.array(summaryRow) }),
  z.strictObject({ table: z.literal('crash-matrix'), run: runFactsSchema, rows: z.array(crashRow) }),
  z.strictObject({ table: z.literal('database'), run: runFactsSchema, rows: z.array(databaseRow) }),
]);
type FaultInput = z.infer<typeof input>;
type SummaryRow = z.infer<typeof summaryRow>;
type CrashRow = z.infer<typeof crashRow>;

const STORE = { file: 'file store', postgres: 'PostgreSQL' } as const;

function renderSummary(rows: SummaryRow[]): string {
  const sum = (f: (r: SummaryRow) => number | null) => rows.reduce((n, r) => n + (f(r) ?? 0), 0);
  const money = (r: Pick<SummaryRow, 'charges' | 'ledger'>) =>
    r.charges === null ? '-' : `${r.charges} = ${r.ledger}`;
  const weekly = sum((r) => (r.runsText.endsWith('weekly runs') ? r.runs : 0));
  const total = [
    '**total**',
    `**${sum((r) => r.faults)}**`,
    `**${weekly} weekly runs + ${sum((r) => r.runs) - weekly} allocations**`,
    `**${money({ charges: sum((r) => r.charges), ledger: sum((r) => r.ledger) })}**`,
  ];
  return markdownTable(
    ['scenario', 'faults injected', 'runs', 'charges = ledger'],
    [...rows.map((r) => [r.scenario, r.faultsText, r.runsText, money(r)]), total],
  );
}

/** One row per point: per store, vendor charges when the worker died → charges = ledger at the end, seconds. */
function renderCrashMatrix(rows: CrashRow[]): string {
  const points = [...new Set(rows.map((r) => r.point))];
  const at = (point: string, store: CrashRow['store']) => {
    const r = rows.find((x) => x.point === point && x.store === store);
    if (!r) return '-';
    const clean = r.outcome === 'completed' && r.verify === 'clean' && r.lock === 'released';
    return `${clean ? '' : `${r.outcome}, verify ${r.verify}, lock ${r.lock}: `}${r.billedAtDeath} → ${r.charges} = ${r.ledger}, ${r.seconds} s`;
  };
  return markdownTable(
    ['point', STORE.file, STORE.postgres],
    points.map((p) => [`\`${p}\``, at(p, 'file'), at(p, 'postgres')]),
  );
}

function renderDatabase(rows: z.infer<typeof databaseRow>[]): string {
  const body = rows.map((r) => [
    `${r.fault}${r['npm test'] ? ' †' : ''}`,
    r.moment,
    r.runs,
    r.outcome,
    r['recovery s'],
    `${r.charges} = ${r['ledger entries']}`,
    r.seconds,
  ]);
  const runs = rows.reduce((n, r) => n + r.runs, 0);
  const charges = rows.reduce((n, r) => n + r.charges, 0);
  const ledger = rows.reduce((n, r) => n + r['ledger entries'], 0);
  return markdownTable(
    ['fault', 'moment', 'runs', 'outcome', 'recovery s', 'charges = ledger', 's'],
    [...body, ['**total**', '', `**${runs}**`, '', '', `**${charges} = ${ledger}**`, '']],
  );
}

function summarize(parts: { [K in keyof typeof PARTS]: z.infer<(typeof PARTS)[K]> }): SummaryRow[] {
  const crash = (store: CrashRow['store']): SummaryRow => {
    const rows = parts['crash-matrix'].rows.filter((r) => r.store === store);
    const n = (f: (r: CrashRow) => unknown) =>
      rows.reduce((s, r) => s + (typeof f(r) === 'number' ? Number(f(r)) : 0), 0);
    const scenario = `crash matrix (${STORE[store]}): a worker SIGKILLed at one point, a fresh one finishes`;
    const runs = { runs: rows.length, runsText: `${rows.length} weekly runs` };
    const faults = { faults: rows.length, faultsText: `${rows.length} SIGKILLs` };
    return { scenario, ...faults, ...runs, charges: n((r) => r.charges), ledger: n((r) => r.ledger) };
  };
  const soak = (key: 'concurrency-soak-file-store' | 'concurrency-soak-postgres-store', store: string): SummaryRow => {
    const r = parts[key].rows[0]!;
    const kills = r['SIGKILLs (lock holders)'];
    return {
      scenario: `concurrency soak (${store}): 3 workers, backfill and triggers into 4 weeks`,
      faults: kills,
      faultsText: `${kills} SIGKILLs of lock holders, replaced`,
      runs: r.runs,
      runsText: `${r.runs} weekly runs`,
      charges: r.charges,
      ledger: r['ledger entries'],
    };
  };
  const restarts = parts['server-restarts'].rows;
  const stale = parts['stale-lock-takeover'].rows;
  const allocations = stale.reduce((n, r) => n + r.contenders, 0);
  return [
    crash('file'),
    crash('postgres'),
    soak('concurrency-soak-file-store', STORE.file),
    soak('concurrency-soak-postgres-store', STORE.postgres),
    {
      scenario: 'server restart: the dev server stopped mid-production, started on the same database',
      faults: restarts.length,
      faultsText: `${restarts.length} server stops`,
      runs: restarts[0]?.runs ?? 0,
      runsText: `${restarts[0]?.runs ?? 0} weekly runs`,
      charges: restarts[0]?.charges ?? 0,
      ledger: restarts[0]?.['ledger entries'] ?? 0,
    },
    {
      scenario: "stale lock: a dead holder's lock taken over by several processes at once",
      faults: stale.length,
      faultsText: `${stale.length} dead holders' locks, one contender delayed`,
      runs: allocations,
      runsText: `${allocations} allocations`,
      charges: null,
      ledger: null,
    },
  ];
}

function fromParts(found: Record<string, unknown>, run: RunFacts): Partial<Record<string, FaultInput>> {
  const names = Object.keys(PARTS) as (keyof typeof PARTS)[];
  if (!names.some((n) => n in found)) return {};
  const missing = names.filter((n) => !(n in found));
  if (missing.length) throw new Error(`fault tables: the run did not report ${missing.join(', ')}`);
  const parts = Object.fromEntries(names.map((n) => [n, PARTS[n].parse(found[n])])) as Parameters<typeof summarize>[0];
  // The migration's points are killed by test/faults/migration-crash.test.ts; the matrix only lists them.
  parts['crash-matrix'].rows = parts['crash-matrix'].rows.filter((r) => !r.point.startsWith('migration.'));
  const quick = names.filter((n) => !parts[n].full);
  if (quick.length)
    throw new Error(`fault tables come from every row: run npm run test:faults (quick: ${quick.join(', ')})`);
  return {
    summary: { table: 'summary', run, rows: summarize(parts) },
    'crash-matrix': { table: 'crash-matrix', run, rows: parts['crash-matrix'].rows },
    database: { table: 'database', run, rows: parts['database-faults'].rows },
  };
}

export const faultDocTables: DocTableGenerator<FaultInput> = {
  name: 'faults',
  doc: 'docs/reliability.md',
  tables: ['summary', 'crash-matrix', 'database'],
  input,
  render(_table, i) {
    const body =
      i.table === 'summary'
        ? renderSummary(i.rows)
        : i.table === 'crash-matrix'
          ? renderCrashMatrix(i.rows)
          : renderDatabase(i.rows);
    return `${runCaption(i.run)}\n\n${body}`;
  },
  fromParts,
};
