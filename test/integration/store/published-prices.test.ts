/**
 * The price list workers publish for the review desk, on both stores: read back as written, the last publish wins,
 * none before the first, and what a reader finds is untrusted (another user, another host's database role may have
 * written it): anything but a valid list of bounded size is StoreCorrupt, never a price.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { openPublishedPrices } from '../../../src/store/open-store';
import { PostgresEpisodeStore } from '../../../src/store/postgres-store';
import { MAX_PUBLISHED_PRICES_BYTES, type PublishedPrices } from '../../../src/store/published-prices';
import { freshDatabase, withDatabase } from '../../../testkit/postgres';

const usd = (amount_cents: number) => ({ amount_cents, currency: 'USD' });
const list = (assembly: number, at = '2026-08-03T09:00:00.000Z'): PublishedPrices => ({
  schema: 'vendor-prices/v1',
  fetched_at: at,
  prices: { video: usd(4200), cover: usd(300), rework: usd(1500), assembly: usd(assembly) },
});
const corrupt = (e: unknown) => isPipelineError(e, ErrorType.StoreCorrupt);

/** Stored texts that must never be read as prices (and, for some, the reason the refusal must give). */
const HOSTILE: [what: string, text: string, reason?: RegExp][] = [
  ['not JSON', '{'],
  ['a negative price', JSON.stringify({ ...list(800), prices: { ...list(800).prices, assembly: usd(-1) } })],
  ['a missing step', JSON.stringify({ ...list(800), prices: { video: usd(1), cover: usd(1), rework: usd(1) } })],
  ['an extra field', JSON.stringify({ ...list(800), note: 'x' })],
  ['no time', JSON.stringify({ ...list(800), fetched_at: 'yesterday' })],
  [
    'a currency that is not a code',
    JSON.stringify({ ...list(800), prices: { ...list(800).prices, cover: { amount_cents: 1, currency: '<b>' } } }),
  ],
  ['oversized', JSON.stringify({ ...list(800), padding: 'x'.repeat(MAX_PUBLISHED_PRICES_BYTES) }), /over 4096 bytes/],
];

function describeContract(
  name: string,
  /** `plant` writes a text where the list lives, or says false when that store cannot hold it (jsonb holds JSON). */
  open: () => Promise<{ store: FileEpisodeStore | PostgresEpisodeStore; plant: (text: string) => Promise<boolean> }>,
) {
  describe(`published prices: ${name}`, function () {
    this.timeout(60_000);
    let store: FileEpisodeStore | PostgresEpisodeStore;
    let plant: (text: string) => Promise<boolean>;
    beforeEach(async () => ({ store, plant } = await open()));
    afterEach(() => store.close());

    it('none before the first publish; then what was published, the last publish winning', async () => {
      const prices = openPublishedPrices(store);
      assert.equal(await prices.read(), undefined);
      await prices.publish(list(800));
      assert.deepEqual(await prices.read(), list(800));
      await prices.publish(list(1234, '2026-08-03T09:01:00.000Z'));
      assert.deepEqual(await openPublishedPrices(store).read(), list(1234, '2026-08-03T09:01:00.000Z'));
    });

    for (const [what, text, reason] of HOSTILE) {
      it(`refuses what a reader finds when it is ${what}`, async function () {
        await openPublishedPrices(store).publish(list(800));
        if (!(await plant(text))) this.skip();
        await assert.rejects(openPublishedPrices(store).read(), (e) => corrupt(e) && (reason?.test(String(e)) ?? true));
      });
    }

    it('refuses to publish a list that is not one', async () => {
      const bad = { ...list(800), prices: { ...list(800).prices, video: usd(0.5) } };
      await assert.rejects(openPublishedPrices(store).publish(bad), /amount_cents|int/i);
    });
  });
}

describeContract('file store', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'published-prices-'));
  const store = new FileEpisodeStore(dir);
  const file = path.join(dir, 'vendor-prices.json');
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await fs.rm(dir, { recursive: true, force: true });
  };
  return Promise.resolve({ store, plant: (text: string) => fs.writeFile(file, text).then(() => true) });
});

describeContract('postgres store', async () => {
  const url = await freshDatabase('prices');
  const store = new PostgresEpisodeStore({ url, mediaDir: os.tmpdir() });
  const plant = async (text: string) => {
    try {
      JSON.parse(text);
    } catch {
      return false;
    }
    await withDatabase(url, (c) => c.query('UPDATE vendor_prices SET record = $1::jsonb', [text]));
    return true;
  };
  return { store, plant };
});

describe('published prices: the file store reads only a regular file, without following a link', function () {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'published-prices-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it('a symlink (even to a valid list) and a FIFO are refused; a FIFO does not hold the reader', async () => {
    const file = path.join(dir, 'vendor-prices.json');
    const elsewhere = path.join(dir, 'elsewhere.json');
    writeFileSync(elsewhere, JSON.stringify(list(800)));
    symlinkSync(elsewhere, file);
    const prices = openPublishedPrices(new FileEpisodeStore(dir));
    await assert.rejects(prices.read(), corrupt);
    await fs.rm(file);
    execFileSync('mkfifo', [file]);
    await assert.rejects(prices.read(), corrupt);
  });
});
