/**
 * The campaign's part of docs/reliability.md, like every generated table (testkit/doc-tables.ts): a table per
 * store and a line per unsafe variant, each between `<!-- campaign:<name> -->` markers, written by
 * `npm run campaign -- --docs` or from a kept report by `node dist/campaign/docs.js <out>/report.json`.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { writeDocTables, type DocTableGenerator } from '../testkit/doc-tables';
import { campaignTable, violations } from './check/report';
import { FAULT_TITLES, STORE_KINDS, type StoreKind } from './plan';

/** The test-only unsafe workers the proofs run (testkit/unsafe-stores.ts). */
export const CAMPAIGN_UNSAFE = ['no-lock', 'no-intent', 'no-reassert', 'no-fence'] as const;
export type CampaignUnsafe = (typeof CAMPAIGN_UNSAFE)[number];

/** The variants that exist for one store only: PostgreSQL has no lock fence (a frozen session's transaction ends). */
export const CAMPAIGN_UNSAFE_STORE: Partial<Record<CampaignUnsafe, StoreKind>> = {
  'no-fence': 'file',
};

const count = z.number().int().nonnegative();

/** What a table is rendered from: the part of `<out>/report.json` it shows. */
const reportSchema = z.object({
  store: z.string(),
  vendor: z.string().optional(),
  seed: z.number().int(),
  weeks: count,
  perWeek: count,
  wallSeconds: z.number().nonnegative(),
  replay: z.string(),
  commit: z.string().optional(),
  machine: z.string(),
  unsafe: z.string().nullable(),
  invariants: z.array(z.object({ name: z.string(), violations: count, details: z.array(z.string()) })),
  faults: z.array(z.object({ kind: z.string(), injected: count, hit: count, recovered: count })),
  counts: z.object({ episodes: count, completed: count, charges: count, ledgerEntries: count, billedCents: count }),
  ledgerMinusBillingCents: z.number(),
  replayed: count,
  // Reports written before the checker accounted for gaps have none.
  accountedGaps: z.array(z.string()).default([]),
});
export type SavedReport = z.infer<typeof reportSchema>;

/** What an unsafe build's run found: exit code and the invariants it violated, with the first violation. */
function proofLine(r: SavedReport): string {
  const found = r.invariants
    .filter((i) => i.violations > 0)
    .map((i) => `${i.name}: **${i.violations}**${i.details[0] ? ` (e.g. ${i.details[0]})` : ''}`)
    .join('; ');
  const code = r.commit ? ` at ${r.commit}` : '';
  return `\`${r.replay}\`${code}: exit ${violations(r) > 0 ? 1 : 0}; ${found || 'nothing found'}.`;
}

export const campaignDocTables: DocTableGenerator<SavedReport> = {
  name: 'campaign',
  doc: 'docs/reliability.md',
  tables: [...STORE_KINDS, ...CAMPAIGN_UNSAFE],
  input: reportSchema,
  render: (_table, r) => (r.unsafe ? proofLine(r) : campaignTable(r, { ...r, titles: FAULT_TITLES })),
};

/** A report's marker: its unsafe variant, or its store. */
export function campaignTableOf(r: SavedReport): string {
  return r.unsafe ?? r.store;
}

/** Writes the report's table between its markers and records it (each violation's first example, shortened). */
export function writeCampaignDocs(report: unknown, root?: string): Promise<string[]> {
  const r = reportSchema.parse(report);
  const invariants = r.invariants.map((i) => ({ ...i, details: i.details.slice(0, 1).map((d) => shorten(d, 80)) }));
  return writeDocTables(campaignDocTables, { [campaignTableOf(r)]: { ...r, invariants } }, root);
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node dist/campaign/docs.js <out>/report.json');
  writeCampaignDocs(JSON.parse(readFileSync(file, 'utf8'))).then(
    (written) => written.forEach((w) => console.log(`wrote ${w}`)),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
