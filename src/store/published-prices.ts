/**
 * The vendor's price list as a worker last fetched it (`GET /v1/prices`), kept beside the episodes (file store:
 * `<data dir>/vendor-prices.json`; PostgreSQL: the one row of `vendor_prices`), so the review desk shows prices
 * without holding the vendor key. Workers publish it at start and every minute; the desk shows it while it is fresh.
 * Whatever can write the store can write this record: readers treat it as untrusted input (bounded, parsed with zod).
 */
import { z } from 'zod';

/** How often a worker asks the vendor for its prices and publishes them. */
export const PRICES_PUBLISH_INTERVAL_MS = 60_000;
/** The desk shows a list at most this old (a few missed publications), else "price unavailable". */
export const PRICES_MAX_AGE_MS = 5 * 60_000;
/** A stored list larger than this is refused unread: four prices take a few hundred bytes. */
export const MAX_PUBLISHED_PRICES_BYTES = 4096;

const cents = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** A metered step's price is a range: its estimate (`amount_cents`) up to its declared maximum. */
const priceSchema = z
  .strictObject({ amount_cents: cents, currency: z.string().regex(/^[A-Z]{3}$/), max_cents: cents.optional() })
  .refine((p) => p.max_cents === undefined || p.max_cents >= p.amount_cents, 'max_cents is below amount_cents');

export const publishedPricesSchema = z.strictObject({
  schema: z.literal('vendor-prices/v1'),
  fetched_at: z.iso.datetime({ offset: true }),
  /** One price per paid step, as the vendor quoted it. */
  prices: z.strictObject({ video: priceSchema, cover: priceSchema, rework: priceSchema, assembly: priceSchema }),
});
export type PublishedPrices = z.infer<typeof publishedPricesSchema>;

export interface PublishedPricesStore {
  readonly description: string;
  /** Replaces the stored list (the last worker to publish wins). */
  publish(list: PublishedPrices): Promise<void>;
  /** The stored list, undefined when none was ever published; StoreCorrupt when what is stored is not one. */
  read(): Promise<PublishedPrices | undefined>;
}
