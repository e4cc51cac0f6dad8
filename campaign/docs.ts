/**
 * The campaign's part of docs/reliability.md, between `<!-- campaign:<name> -->` and `<!-- /campaign:<name> -->`: a
 * table per store (`npm run campaign -- --docs`), a line per unsafe variant (`... --docs --unsafe V`). From a kept
 * report: `node dist/campaign/docs.js <out>/report.json` (test/docs/doc-tables.test.ts runs this path).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { CheckResult } from './check/checker';
import { markdownTable, violations, type ReportHeader } from './check/report';
import { FAULT_TITLES } from './plan';

/** The test-only unsafe workers the proofs run (test/helpers/unsafe-stores.ts). */
export const CAMPAIGN_UNSAFE = ['no-lock', 'no-intent', 'no-reassert'] as const;

/** What `npm run campaign` keeps in `<out>/report.json` (and more). */
export type SavedReport = Omit<ReportHeader, 'titles'> & CheckResult & { unsafe: string | null };

/** What an unsafe build's run found: exit code and the invariants it violated, with the first violation. */
function proofLine(r: SavedReport, variant: string): string {
  const found = r.invariants
    .filter((i) => i.violations > 0)
    .map((i) => `${i.name}: **${i.violations}** (e.g. ${i.details[0]})`)
    .join('; ');
  return ` \`--unsafe ${variant}\`, seed ${r.seed}: exit ${violations(r) > 0 ? 1 : 0}; ${found || 'nothing found'}.`;
}

/** The marker a report goes between, and its text there. */
export function campaignDocText(r: SavedReport): { name: string; text: string } {
  if (r.unsafe) return { name: r.unsafe, text: proofLine(r, r.unsafe) };
  return { name: r.store, text: `\n${markdownTable(r, { ...r, titles: FAULT_TITLES })}\n` };
}

/** Writes the report's text between its markers in `docFile`; returns the marker's name. */
export async function writeCampaignDocs(docFile: string, r: SavedReport): Promise<string> {
  const { name, text } = campaignDocText(r);
  const doc = await fs.readFile(docFile, 'utf8');
  const open = `<!-- campaign:${name} -->`;
  const close = `<!-- /campaign:${name} -->`;
  const start = doc.indexOf(open);
  const end = doc.indexOf(close);
  if (start < 0 || end < start) throw new Error(`${docFile} has no ${open} ... ${close} markers`);
  await fs.writeFile(docFile, `${doc.slice(0, start + open.length)}${text}${doc.slice(end)}`);
  return name;
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node dist/campaign/docs.js <out>/report.json');
  const doc = path.resolve(__dirname, '..', '..', 'docs', 'reliability.md');
  fs.readFile(file, 'utf8')
    .then((text) => writeCampaignDocs(doc, JSON.parse(text) as SavedReport))
    .then(
      (name) => console.log(`wrote docs/reliability.md campaign:${name}`),
      (e: unknown) => {
        console.error(e);
        process.exit(1);
      },
    );
}
