/**
 * The smoke campaign (`npm run campaign` at a small size) on each store, in `npm test`: a few weeks of two episodes
 * under overlapping faults, every invariant holding (a kind injected 3 times that never hit is one) and every hit
 * recovered. Each run draws a new seed and adapter (EPISODES_CAMPAIGN_SEED replays one) and prints them with the
 * replay command; a failing run keeps its plan, history and report under $EPISODES_CI_OUT (.ci/run: .ci-out/), or in a temp folder.
 * `npm run test:faults` runs the larger size.
 *
 * The proof switch (test-only): EPISODES_CAMPAIGN_UNSAFE=V runs the campaign with `--unsafe V`, workers on a store with
 * one protection taken away (testkit/unsafe-stores.ts; V one of CAMPAIGN_UNSAFE in campaign/docs.ts), and the test
 * must then fail, e.g. `EPISODES_CAMPAIGN_UNSAFE=no-fence EPISODES_CAMPAIGN_SEED=S npx mocha
 * dist/test/faults/campaign.test.js -g file`. A variant of one store only skips the other store's test.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { promises as fs, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CAMPAIGN_UNSAFE, CAMPAIGN_UNSAFE_STORE, type CampaignUnsafe } from '../../campaign/docs';
import { STORE_KINDS } from '../../campaign/plan';
import { VENDOR_CHOICES } from '../../campaign/vendors';
import { runNode } from '../../testkit/processes';

const FULL = process.env.EPISODES_FAULTS === 'full';
const SIZE = FULL
  ? ['--weeks', '8', '--per-week', '2', '--faults', '15']
  : ['--weeks', '3', '--per-week', '2', '--faults', '12'];

interface Report {
  seed: number;
  store: string;
  replay: string;
  invariants: { name: string; violations: number; details: string[] }[];
  faults: { kind: string; injected: number; hit: number; recovered: number }[];
  counts: { episodes: number; completed: number; charges: number; ledgerEntries: number };
  ledgerMinusBillingCents: number;
}

/** This run's seed and adapter for a store: drawn anew, or the one EPISODES_CAMPAIGN_SEED names. */
function draw(store: (typeof STORE_KINDS)[number]): { seed: number; vendor: string } {
  const given = process.env.EPISODES_CAMPAIGN_SEED;
  const seed = given ? Number(given) : randomInt(1, 2 ** 31 - 1);
  assert.ok(Number.isInteger(seed) && seed > 0, `EPISODES_CAMPAIGN_SEED is a positive integer: ${given}`);
  return { seed, vendor: VENDOR_CHOICES[(seed + STORE_KINDS.indexOf(store)) % VENDOR_CHOICES.length]! };
}

/** The proof switch: the unsafe variant EPISODES_CAMPAIGN_UNSAFE names, if any. */
function unsafeVariant(): CampaignUnsafe | undefined {
  const given = process.env.EPISODES_CAMPAIGN_UNSAFE;
  if (!given) return undefined;
  const known = CAMPAIGN_UNSAFE.find((v) => v === given);
  assert.ok(known, `EPISODES_CAMPAIGN_UNSAFE is one of ${CAMPAIGN_UNSAFE.join(', ')}: ${given}`);
  return known;
}

/** Where a run keeps its files: removed when it passes, kept (and named) when it fails. */
function outDir(store: string, seed: number): string {
  const base = process.env.EPISODES_CI_OUT;
  if (!base) return mkdtempSync(path.join(os.tmpdir(), `campaign-smoke-${store}-`));
  const dir = path.join(path.resolve(base), `campaign-${store}-${seed}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

describe(`campaign smoke on each store (${SIZE.join(' ')})`, function () {
  this.timeout(25 * 60_000);

  for (const store of STORE_KINDS) {
    it(`${store} store: exit 0, no violation, every planned kind counted, every hit recovered`, async function () {
      const unsafe = unsafeVariant();
      if (unsafe && (CAMPAIGN_UNSAFE_STORE[unsafe] ?? store) !== store) this.skip();
      const { seed, vendor } = draw(store);
      const out = outDir(store, seed);
      const args = [...SIZE, '--store', store, '--vendor', vendor, '--seed', String(seed), '--out', out];
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
      assert.match(
        report.replay,
        new RegExp(`--store ${store} .*--seed ${seed}${unsafe ? ` --unsafe ${unsafe}` : ''}$`),
      );
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
});
