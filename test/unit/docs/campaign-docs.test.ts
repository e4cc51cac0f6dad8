/**
 * The campaign's markers in docs/reliability.md (`npm run campaign -- --docs`): each names a store or an unsafe
 * variant, each has its marker, and the table-writing path writes a saved report between its markers and nowhere
 * else. No campaign runs here: the report is built below.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CAMPAIGN_UNSAFE,
  campaignDocTables,
  campaignTableOf,
  writeCampaignDocs,
  type SavedReport,
} from '../../../campaign/docs';
import { STORE_KINDS } from '../../../campaign/plan';
import { REPO_ROOT, renderDocTable } from '../../../testkit/doc-tables';

const DOC = 'docs/reliability.md';

function savedReport(unsafe: string | null): SavedReport {
  const lost = unsafe ? 2 : 0;
  return {
    store: 'file',
    seed: 11,
    weeks: 52,
    perWeek: 2,
    wallSeconds: 3_700,
    replay: `npm run campaign -- --store file --weeks 52 --per-week 2 --faults 100 --seed 11${unsafe ? ` --unsafe ${unsafe}` : ''}`,
    commit: '1a2b3c4',
    machine: '2 cores (AMD EPYC), load 1.0 at start, 1.2 at end',
    unsafe,
    invariants: [
      { name: 'double charges', violations: 0, details: [] },
      { name: 'lost runs', violations: lost, details: lost ? ['campaign-2020-11-09T09:00:00Z: no episode'] : [] },
    ],
    faults: [{ kind: 'worker-kill', injected: 9, hit: 8, recovered: 8 }],
    counts: { episodes: 104, completed: 104, charges: 312, ledgerEntries: 312, billedCents: 2_000 },
    ledgerMinusBillingCents: 0,
    replayed: 104,
    accountedGaps: [],
  };
}

/** Marker name → the text between `<!-- campaign:name -->` and its closing marker. */
function campaignMarkers(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(/<!-- campaign:([a-z0-9-]+) -->([^]*?)<!-- \/campaign:\1 -->/g))
    found.set(m[1]!, m[2]!);
  return found;
}

describe('campaign tables in docs/reliability.md', () => {
  const doc = readFileSync(path.join(REPO_ROOT, DOC), 'utf8');

  it('has one marker for each store and each unsafe variant, and no other', () => {
    const names = [...campaignMarkers(doc).keys()].sort();
    assert.deepEqual(names, [...STORE_KINDS, ...CAMPAIGN_UNSAFE].sort());
    assert.equal((doc.match(/<!-- campaign:/g) ?? []).length, names.length, 'every opening marker is closed');
  });

  it('writes a saved report between its markers and leaves the rest of the doc as it was', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'campaign-docs-'));
    try {
      const file = path.join(root, DOC);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, doc);
      for (const report of [savedReport(null), savedReport('no-lock')]) {
        const name = campaignTableOf(report);
        await writeCampaignDocs(report, root);
        const written = await fs.readFile(file, 'utf8');
        // The sample's details are short: written as they are.
        const rendered = campaignDocTables.input.parse(report);
        assert.equal(
          campaignMarkers(written).get(name)?.trim(),
          await renderDocTable(campaignDocTables, name, rendered),
        );
        const outside = (t: string) => t.replace(/<!-- campaign:([a-z0-9-]+) -->[^]*?<!-- \/campaign:\1 -->/g, '');
        assert.equal(outside(written), outside(doc));
      }
      const text = await fs.readFile(file, 'utf8');
      // prettier pads the table's columns
      assert.match(
        campaignMarkers(text).get('file')!,
        /\| \*\*total\*\* +\| \*\*9\*\* +\| \*\*8\*\* +\| \*\*8\*\* +\|/,
      );
      assert.match(
        campaignMarkers(text).get('no-lock')!,
        /`npm run campaign -- .* --seed 11 --unsafe no-lock` at 1a2b3c4: exit 1; lost runs: \*\*2\*\*/,
      );
      assert.match(
        campaignMarkers(text).get('file')!,
        /commit 1a2b3c4;.*Replay: `npm run campaign -- --store file --weeks 52/s,
      );
      await fs.writeFile(file, 'no markers');
      await assert.rejects(writeCampaignDocs(savedReport(null), root), /has no <!-- campaign:file -->/);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
