/**
 * The desk's price list from the vendor simulator over HTTP: shared while fresh, asked again after, and once the
 * vendor cannot be reached a reason instead of the last list (never a price older than a minute).
 */
import assert from 'node:assert/strict';
import { cachedPriceSource, priceProblem, PRICES_FRESH_MS, PRICES_RETRY_MS } from '../../src/review/prices';
import { createVendorClient } from '../../src/vendor-api/client';
import { staticCredentialsLoader } from '../../src/vendor-api/credentials';
import { PipelineError } from '../../src/domain/errors';
import { ErrorType } from '../../src/domain/errors';
import { WORKFLOW_TEST_API_KEY, startTestVendor } from '../helpers/deps';

describe('review desk prices (vendor simulator over HTTP)', function () {
  this.timeout(30_000);

  it('one fetch while fresh, a new one after; an unreachable vendor gives its reason, not the old list', async () => {
    const vendor = await startTestVendor({ pricesCents: { assembly: 800, rework: 1500 } });
    let clock = 1_000_000;
    let fetches = 0;
    const client = await createVendorClient(staticCredentialsLoader(WORKFLOW_TEST_API_KEY), {
      baseUrl: vendor.url,
      timeoutMs: 2_000,
    });
    const lines: string[] = [];
    const source = cachedPriceSource(
      () => {
        fetches += 1;
        return client.getPrices();
      },
      { now: () => clock, log: (l) => lines.push(l) },
    );
    try {
      const [a, b] = await Promise.all([source.current(), source.current()]);
      assert.ok(a.ok && b.ok);
      assert.deepEqual(a.prices.assembly, { amount_cents: 800, currency: 'USD' });
      assert.deepEqual(a.prices.rework, { amount_cents: 1500, currency: 'USD' });
      clock += PRICES_FRESH_MS - 1;
      assert.equal((await source.current()).ok, true);
      assert.equal(fetches, 1, 'one fetch for all pages within the minute');
    } finally {
      await vendor.close();
    }
    clock += 1;
    const gone = await source.current();
    assert.deepEqual(gone, { ok: false, reason: 'the vendor did not answer (connect-failed)' }, 'no stale price');
    assert.equal(fetches, 2);
    assert.match(lines[0] ?? '', /vendor prices unavailable: .*ECONNREFUSED/, 'the full error is logged');
    clock += PRICES_RETRY_MS - 1;
    await source.current();
    assert.equal(fetches, 2, 'a failure is remembered for a while');
    clock += 1;
    await source.current();
    assert.equal(fetches, 3, 'then asked again');
  });

  it('says why in words a reviewer can act on, without the detail', () => {
    const noKey = new PipelineError(
      ErrorType.CredentialsMissing,
      'cannot open vendor API key file /etc/secret: ENOENT',
    );
    assert.equal(priceProblem(noKey), 'the desk has no vendor API key');
    assert.equal(priceProblem(new Error('/some/path exploded')), 'unexpected error (see the desk’s log)');
  });
});
