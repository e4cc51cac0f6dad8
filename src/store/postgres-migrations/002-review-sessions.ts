/**
 * 002: the review desk's sessions (src/store/review-sessions.ts). Only the sha256 of a session id is stored; the
 * record is the JSON the file store writes, with the columns the desk filters and orders by beside it.
 */
export const migration002 = {
  version: 2,
  name: 'review-sessions',
  sql: `
CREATE TABLE review_sessions (
  id_sha256    text PRIMARY KEY CHECK (id_sha256 ~ '^[0-9a-f]{64}$'),
  identity     text NOT NULL,
  last_seen_at timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  record       jsonb NOT NULL
);
CREATE INDEX review_sessions_identity_idx ON review_sessions (identity, last_seen_at);
`,
} as const;
