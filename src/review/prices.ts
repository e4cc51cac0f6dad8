/**
 * The vendor's prices, which the desk shows before a click: the list a worker last published to the store
 * (src/process/price-publisher.ts), while it is at most PRICES_MAX_AGE_MS old. The desk holds no vendor key and never
 * asks the vendor: a list that is missing, old or unreadable gives "price unavailable" and why, never an old number.
 * A paid step's own submission asks the vendor again and checks the budget with that quote.
 */
import { PRICES_MAX_AGE_MS, type PublishedPrices, type PublishedPricesStore } from '../store/published-prices';

export type PriceList = { ok: true; prices: PublishedPrices['prices']; at: Date } | { ok: false; reason: string };

export interface PriceSource {
  current(): Promise<PriceList>;
}

/** A list dated this far ahead of the desk's clock is still believed (hosts' clocks differ a little). */
export const PRICES_CLOCK_SKEW_MS = 60_000;

export interface PublishedPriceOptions {
  maxAgeMs?: number;
  now?: () => number;
  /** Where the full error of an unreadable list goes (the page shows a short reason). Default: stderr. */
  log?: (line: string) => void;
}

/** Reads the published list for each page (one small file or row): a newer one shows at once. */
export function publishedPriceSource(store: PublishedPricesStore, o: PublishedPriceOptions = {}): PriceSource {
  const now = o.now ?? Date.now;
  const maxAgeMs = o.maxAgeMs ?? PRICES_MAX_AGE_MS;
  const log = o.log ?? ((line: string) => process.stderr.write(`review desk: ${line}\n`));
  return {
    async current(): Promise<PriceList> {
      let list: PublishedPrices | undefined;
      try {
        list = await store.read();
      } catch (e) {
        log(`published prices unreadable: ${e instanceof Error ? e.message : String(e)}`);
        return { ok: false, reason: 'the published price list cannot be read (see the desk’s log)' };
      }
      if (list === undefined) return { ok: false, reason: 'no worker has published prices yet' };
      const at = new Date(list.fetched_at);
      const age = now() - at.getTime();
      if (age > maxAgeMs) return { ok: false, reason: `no worker has published prices since ${at.toISOString()}` };
      if (age < -PRICES_CLOCK_SKEW_MS) {
        return { ok: false, reason: `the published prices are dated ${at.toISOString()}, ahead of the desk’s clock` };
      }
      return { ok: true, prices: list.prices, at };
    },
  };
}
