/**
 * 003: the vendor's price list as a worker last published it (src/store/published-prices.ts): one row at most, the
 * JSON the file store writes.
 */
export const migration003 = {
  version: 3,
  name: 'vendor-prices',
  sql: `
CREATE TABLE vendor_prices (
  id     boolean PRIMARY KEY DEFAULT true CHECK (id),
  record jsonb NOT NULL
);
`,
} as const;
