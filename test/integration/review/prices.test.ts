/**
 * The desk's prices come from the store, where workers publish the vendor's list (GET /v1/prices over HTTP to the
 * simulator): shown while fresh, else "price unavailable" and why, and the desk needs no vendor key for them. The last
 * test runs the real processes: a worker (`node dist/src/worker.js`, with the key) publishes, and `episodes review
 * serve` with no usable key shows the prices in Chromium.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdirSync, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { chromium } from 'playwright-core';
import { publishVendorPrices, startPricePublisher } from '../../../src/process/price-publisher';
import { PRICES_CLOCK_SKEW_MS, publishedPriceSource } from '../../../src/review/prices';
import { ReviewerStore } from '../../../src/review/reviewers';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { openPublishedPrices } from '../../../src/store/open-store';
import { PRICES_MAX_AGE_MS } from '../../../src/store/published-prices';
import { staticCredentialsLoader } from '../../../src/vendor-api/credentials';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { WORKFLOW_TEST_API_KEY, startTestVendor } from '../../../testkit/deps';
import { collect, spawnNode } from '../../../testkit/processes';
import { startWorkerProcess } from '../../../testkit/reliability';
import { createTestEnv, uniqueTaskQueue } from '../../../testkit/temporal';
import { until } from '../../../testkit/wait';
import { chromiumPath } from './harness';
import { nativeVendors } from '../../../src/vendors/directory';

describe('review desk prices, as workers publish them to the store', function () {
  this.timeout(60_000);
  let dir: string;
  let store: FileEpisodeStore;
  let vendor: VendorSimulator;
  const deps = () => ({
    store,
    vendors: nativeVendors(staticCredentialsLoader(WORKFLOW_TEST_API_KEY), {
      baseUrl: new URL(vendor.url),
      timeoutMs: 2_000,
    }),
  });
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'desk-prices-'));
    store = new FileEpisodeStore(dir);
    vendor = await startTestVendor({ pricesCents: { assembly: 800, rework: 1500 } });
  });
  afterEach(async () => {
    await vendor.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('shows the published list while it is fresh, then says since when none was published; none yet says so', async () => {
    let clock = Date.now();
    const source = publishedPriceSource(openPublishedPrices(store), { now: () => clock });
    assert.deepEqual(await source.current(), { ok: false, reason: 'no worker has published prices yet' });
    const published = await publishVendorPrices(deps());
    const at = Date.parse(published.fetched_at);
    assert.ok(Math.abs(at - clock) < 60_000, 'stamped with the time it was fetched');
    clock = at + PRICES_MAX_AGE_MS;
    const fresh = await source.current();
    assert.ok(fresh.ok);
    assert.deepEqual(fresh.prices.assembly, { amount_cents: 800, currency: 'USD' });
    assert.deepEqual(fresh.prices.rework, { amount_cents: 1500, currency: 'USD' });
    assert.equal(fresh.at.toISOString(), published.fetched_at);
    clock += 1;
    assert.deepEqual(await source.current(), {
      ok: false,
      reason: `no worker has published prices since ${published.fetched_at}`,
    });
    // A list dated ahead of the desk's clock by more than hosts' clocks differ is not believed either.
    clock = at - PRICES_CLOCK_SKEW_MS - 1;
    assert.deepEqual(await source.current(), {
      ok: false,
      reason: `the published prices are dated ${published.fetched_at}, ahead of the desk’s clock`,
    });
  });

  it('a list that cannot be read gives a short reason; the detail goes to the log', async () => {
    await fs.writeFile(path.join(dir, 'vendor-prices.json'), JSON.stringify({ schema: 'vendor-prices/v1', x: 1 }));
    const lines: string[] = [];
    const source = publishedPriceSource(openPublishedPrices(store), { log: (l) => lines.push(l) });
    assert.deepEqual(await source.current(), {
      ok: false,
      reason: 'the published price list cannot be read (see the desk’s log)',
    });
    assert.match(lines[0] ?? '', /published prices unreadable: .*vendor-prices\.json/);
  });

  it('the publisher: a failing vendor keeps the last list and logs once per reason; then it publishes again', async () => {
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(`info ${m}`), warn: (m: string) => lines.push(`warn ${m}`) };
    const prices = openPublishedPrices(store);
    const stop = startPricePublisher(deps(), log, 20);
    try {
      const first = await until('the first list', () => prices.read());
      vendor.setFaults({ fail5xx: { count: 30 } });
      await until('the faults used up', () => Promise.resolve(vendor.faults().fail5xx?.count === 0 || undefined));
      assert.deepEqual(
        lines.filter((l) => l.startsWith('warn')),
        [lines.find((l) => l.startsWith('warn'))],
        'one line for many failed rounds',
      );
      assert.match(lines[0] ?? '', /^warn vendor prices not published .*503/);
      await until('published again', () =>
        Promise.resolve(lines.includes('info vendor prices published again') || undefined),
      );
      assert.ok(Date.parse((await prices.read())!.fetched_at) > Date.parse(first.fetched_at));
    } finally {
      await stop();
    }
  });
});

describe('the desk process shows the prices a worker process published, with no vendor key of its own', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  before(async () => (env = await createTestEnv()));
  after(async () => env?.teardown());

  it('review serve with no key (and a key file it cannot read) shows the worker’s prices', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'desk-no-key-'));
    const dataDir = path.join(root, 'data');
    const vendor = await startTestVendor({ pricesCents: { assembly: 777, rework: 1999 } });
    const worker = startWorkerProcess('prices', {
      address: env.address,
      taskQueue: uniqueTaskQueue('prices'),
      dataDir,
      vendorUrl: vendor.url,
    });
    const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
    try {
      await worker.waitUntilPolling();
      const store = new FileEpisodeStore(dataDir);
      await until('the worker’s first price list', () => openPublishedPrices(store).read());
      await worker.stop();
      const token = await new ReviewerStore(path.join(dataDir, 'review', 'reviewers.json')).add('alice');
      // Not a key: a directory. The desk would fail on it at once if it ever tried to read a key.
      const notAKey = path.join(root, 'no-key');
      mkdirSync(notAKey);
      const desk = spawnNode('src/cli.js', ['--data-dir', dataDir, 'review', 'serve', '--listen', '127.0.0.1:0'], {
        EPISODES_DATA_DIR: '',
        EPISODES_STORE_URL: '',
        EPISODES_REVIEWERS_FILE: '',
        EPISODES_VENDOR_API_KEY: '',
        EPISODES_VENDOR_API_KEY_FILE: notAKey,
        EPISODES_VENDOR_BASE_URL: vendor.url,
      });
      const done = collect(desk);
      let out = '';
      desk.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      const url = await until('the desk URL', () =>
        Promise.resolve(/review desk on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]),
      );
      const page = await (await browser.newContext({ baseURL: url })).newPage();
      await page.goto('/');
      await page.getByLabel('Token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('Next paid step: approve: assembly 7.77 USD · rework: 19.99 USD.').waitFor();
      desk.kill('SIGTERM');
      const r = await done;
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /vendor/i, 'the desk never looked for a vendor key');
    } finally {
      await browser.close();
      await worker.stop();
      await vendor.close();
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
