/**
 * The PostgreSQL store's published price list: the one row of `vendor_prices` (migration 003), on the episode
 * store's pool. Its size is checked in the database, so an oversized record is refused without being sent.
 */
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { parseJsonText } from '../files/durable-fs';
import type { SessionQuery } from './postgres-review-sessions';
import {
  MAX_PUBLISHED_PRICES_BYTES,
  publishedPricesSchema,
  type PublishedPrices,
  type PublishedPricesStore,
} from './published-prices';

const row = z.object({ bytes: z.number().int(), text: z.string().nullable() });

export class PostgresPublishedPrices implements PublishedPricesStore {
  constructor(
    readonly description: string,
    private readonly query: SessionQuery,
  ) {}

  async publish(list: PublishedPrices): Promise<void> {
    await this.query(
      'publish vendor prices',
      `INSERT INTO vendor_prices (id, record) VALUES (true, $1)
       ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record`,
      [JSON.stringify(publishedPricesSchema.parse(list))],
    );
  }

  async read(): Promise<PublishedPrices | undefined> {
    const { rows } = await this.query(
      'read vendor prices',
      `SELECT octet_length(record::text) AS bytes,
              CASE WHEN octet_length(record::text) <= $1 THEN record::text END AS text
         FROM vendor_prices`,
      [MAX_PUBLISHED_PRICES_BYTES],
    );
    if (rows.length === 0) return undefined;
    const { bytes, text } = row.parse(rows[0]);
    if (text === null) {
      throw new PipelineError(ErrorType.StoreCorrupt, `vendor_prices: over ${MAX_PUBLISHED_PRICES_BYTES} bytes`, {
        bytes,
      });
    }
    return parseJsonText('vendor_prices', text, publishedPricesSchema);
  }
}
