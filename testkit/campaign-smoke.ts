/**
 * The smoke campaign (`npm run campaign` at a small size) on one store, in `npm test` (test/faults/campaign-<store>.test.ts,
 * one file per store so that the two run side by side): a few weeks of two episodes
 * under overlapping faults, every invariant holding (a kind injected 3 times that never hit is one) and every hit
 * recovered. Each run draws a new seed and adapter (EPISODES_CAMPAIGN_SEED replays one) and prints them with the
 * replay command; a failing run keeps its plan, history and report under $EPISODES_CI_OUT (.ci/run: .ci-out/), or in a temp folder.
 * `npm run test:faults` runs each store with each adapter (native, fal, replicate, mixed).
 *
 * The proof switch (test-only): EPISODES_CAMPAIGN_UNSAFE=V runs the campaign with `--unsafe V`, workers on a store with
 * one protection taken away (testkit/unsafe-stores.ts), and the test must then fail, e.g.
 * `EPISODES_CAMPAIGN_UNSAFE=no-fence EPISODES_CAMPAIGN_SEED=S npx mocha dist/test/faults/campaign-file.test.js`.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { promises as fs, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runNode } from './processes';

const SIZE = ['--weeks', '3', '--per-week', '2', '--faults', '12'];
/** campaign/'s STORE_KINDS and VENDOR_CHOICES (testkit imports no campaign code; the CLI checks them). */
type Store = 'file' | 'postgres';
export const SMOKE_VENDORS = ['native', 'fal', 'replicate', 'mixed'] as const;
type Vendor = (typeof SMOKE_VENDORS)[number];

interface Report {
  seed: number;
  store: string;
  replay: string;
  invariants: { name: string; violations: number; details: string[] }[];
  faults: { kind: string; injected: number; hit: number; recovered: number }[];
  counts: { episodes: number; completed: number; charges: number; ledgerEntries: number };
  ledgerMinusBillingCents: number;
}

/** This run's seed, drawn anew or the one EPISODES_CAMPAIGN_SEED names, and its adapter (when not given). */
function draw(store: Store, vendor?: Vendor): { seed: number; vendor: Vendor } {
  const given = process.env.EPISODES_CAMPAIGN_SEED;
  const seed = given ? Number(given) : randomInt(1, 2 ** 31 - 1);
  assert.ok(Number.isInteger(seed) && seed > 0, `EPISODES_CAMPAIGN_SEED is a positive integer: ${given}`);
  return { seed, vendor: vendor ?? SMOKE_VENDORS[(seed + (store === 'file' ? 0 : 1)) % SMOKE_VENDORS.length]! };
}

/** Where a run keeps its files: removed when it passes, kept (and named) when it fails. */
function outDir(store: string, seed: number): string {
  const base = process.env.EPISODES_CI_OUT;
  if (!base) return mkdtempSync(path.join(os.tmpdir(), `campaign-smoke-${store}-`));
  const dir = path.join(path.resolve(base), `campaign-${store}-${seed}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** `npm test`: the store once, its adapter drawn with the seed. `npm run test:faults`: the store with each adapter. */
export function describeCampaignSmoke(store: Store): void {
  const runs: (Vendor | undefined)[] = process.env.EPISODES_FAULTS === 'full' ? [...SMOKE_VENDORS] : [undefined];
  describe(`campaign smoke, ${store} store (${SIZE.join(' ')})`, function () {
    this.timeout(25 * 60_000);
    for (const fixed of runs) smokeRun(store, fixed);
  });
}

function smokeRun(store: Store, fixed: Vendor | undefined): void {
  const title = `${store} store${fixed ? `, ${fixed} vendor` : ''}`;
  it(`${title}: exit 0, no violation, every planned kind counted, every hit recovered`, async function () {
    const { seed, vendor } = draw(store, fixed);
    const out = outDir(store, seed);
    const args = [...SIZE, '--store', store, '--vendor', vendor, '--seed', String(seed), '--out', out];
    // The campaign checks the variant's name and store (exit 2 on a wrong one).
    const unsafe = process.env.EPISODES_CAMPAIGN_UNSAFE;
    if (unsafe) args.push('--unsafe', unsafe);
    console.log(
      `campaign smoke, ${store} store: seed ${seed}, vendor ${vendor}${unsafe ? `, UNSAFE ${unsafe}` : ''}; out ${out}`,
    );
    const run = await runNode('campaign/run.js', args);
    console.log(run.stdout.slice(run.stdout.indexOf('\n| fault')));
    const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as Report;
    const plan = JSON.parse(readFileSync(path.join(out, 'plan.json'), 'utf8')) as { faults: { kind: string }[] };
    const broken = report.invariants.filter((i) => i.violations > 0);
    assert.deepEqual(
      broken.map((i) => `${i.name}: ${i.details.slice(0, 5).join('; ')}`),
      [],
      `no invariant violated; kept in ${out}; replay: ${report.replay}`,
    );
    assert.equal(run.code, 0, `${run.stderr.slice(-3000)}; kept in ${out}`);
    assert.equal(report.seed, seed);
    assert.match(report.replay, new RegExp(`--store ${store} .*--seed ${seed}${unsafe ? ` --unsafe ${unsafe}` : ''}$`));
    const planned = [...new Set(plan.faults.map((f) => f.kind))].sort();
    assert.deepEqual(report.faults.map((k) => k.kind).sort(), planned, 'every planned kind is counted');
    for (const k of report.faults) assert.equal(k.recovered, k.hit, `${k.kind}: every hit recovered`);
    assert.equal(report.counts.completed, report.counts.episodes);
    assert.ok(report.counts.episodes >= 6, `6 planned runs and a trigger (${report.counts.episodes})`);
    assert.equal(report.counts.charges, report.counts.ledgerEntries);
    assert.equal(report.ledgerMinusBillingCents, 0);
    await fs.rm(out, { recursive: true, force: true });
  });
}
