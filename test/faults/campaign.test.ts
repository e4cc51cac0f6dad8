/**
 * The smoke campaign (`npm run campaign` at a small size): 8 weeks of two episodes under about 15 faults, on each
 * store, must exit 0 with every invariant holding and every planned fault kind hitting something in flight. The
 * fixed seeds make the plan the same on every run (the faults still land where the system is at that moment).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runNode } from '../../testkit/processes';

const SMOKE = ['--weeks', '8', '--per-week', '2', '--faults', '15', '--workers', '3'];
const SEEDS = { file: 11, postgres: 12 } as const;
// Under `npm run test:faults` (EPISODES_FAULTS=full) until the campaign's findings are fixed (docs/reliability.md):
// chosen before the tests are defined, as the other fault files choose their rows.
const STORES = process.env.EPISODES_FAULTS === 'full' ? (['file', 'postgres'] as const) : [];

interface Report {
  seed: number;
  store: string;
  invariants: { name: string; violations: number; details: string[] }[];
  faults: { kind: string; injected: number; hit: number; recovered: number }[];
  counts: { episodes: number; completed: number; charges: number; ledgerEntries: number };
  ledgerMinusBillingCents: number;
}

describe('campaign smoke: 8 weeks under about 15 faults', function () {
  this.timeout(20 * 60_000);
  const dirs: string[] = [];
  after(async () => {
    await Promise.all(dirs.map((d) => fs.rm(d, { recursive: true, force: true })));
  });

  for (const store of STORES) {
    it(`${store} store: exit 0, no violation, every hit recovered`, async () => {
      const out = mkdtempSync(path.join(os.tmpdir(), `campaign-smoke-${store}-`));
      dirs.push(out);
      const run = await runNode('campaign/run.js', [
        ...SMOKE,
        '--store',
        store,
        '--seed',
        String(SEEDS[store]),
        '--out',
        out,
      ]);
      const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as Report;
      const broken = report.invariants.filter((i) => i.violations > 0);
      assert.deepEqual(
        broken.map((i) => `${i.name}: ${i.details.slice(0, 5).join('; ')}`),
        [],
        `no invariant violated (${run.stdout.slice(-3000)})`,
      );
      assert.equal(run.code, 0, run.stderr.slice(-3000));
      assert.equal(report.seed, SEEDS[store]);
      assert.ok(report.faults.length >= (store === 'file' ? 10 : 13), `every kind planned: ${report.faults.length}`);
      for (const k of report.faults) assert.equal(k.recovered, k.hit, `${k.kind}: every hit recovered`);
      assert.equal(report.counts.completed, report.counts.episodes);
      assert.ok(report.counts.episodes >= 16, `16 planned runs and a trigger (${report.counts.episodes})`);
      assert.equal(report.counts.charges, report.counts.ledgerEntries);
      assert.equal(report.ledgerMinusBillingCents, 0);
    });
  }
});
