/**
 * 001: episodes, their remote jobs and ledger, and completed history.
 *
 * The allocation invariants are enforced twice: by the pipeline lock (pg_advisory_xact_lock around read-decide-write,
 * see postgres-store.ts) and by the constraints below, so that even a writer that skipped the lock cannot create a
 * second episode for a key or a second owner of a (week, sequence). Timestamps are ISO 8601 text exactly as the
 * domain wrote them (zod validates them on every read); JSONB holds the open-shaped parts.
 */
export const migration001 = {
  version: 1,
  name: 'initial-schema',
  sql: `
CREATE TABLE episodes (
  episode_id     text PRIMARY KEY,
  week_id        text NOT NULL CHECK (week_id ~ '^[0-9]{4}-W[0-9]{2}$'),
  sequence       integer NOT NULL CHECK (sequence BETWEEN 0 AND 999999),
  -- NULL only for episodes migrated from the legacy format; non-NULL keys are unique (NULLs are distinct).
  allocation_key text,
  allocated_by   jsonb NOT NULL,
  created_at     text NOT NULL,
  status         text NOT NULL,
  approval       jsonb,
  media          jsonb NOT NULL DEFAULT '{}'::jsonb,
  completed_at   text,
  migration      jsonb,
  legacy         jsonb,
  -- Where the episode's media files live (a file or object path); media themselves never enter the database.
  media_dir      text NOT NULL,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT episodes_week_sequence_key UNIQUE (week_id, sequence),
  CONSTRAINT episodes_allocation_key_key UNIQUE (allocation_key),
  CONSTRAINT episodes_id_is_week_and_sequence CHECK (episode_id = week_id || '-' || sequence::text)
);

-- One row per paid-step submission (the state's steps map, keyed '<step>-r<round>'). The spec is open-shaped.
CREATE TABLE remote_jobs (
  episode_id      text NOT NULL REFERENCES episodes (episode_id),
  step_key        text NOT NULL,
  step            text NOT NULL,
  round           integer NOT NULL CHECK (round >= 0),
  status          text NOT NULL,
  idempotency_key text NOT NULL,
  remote_job_id   text,
  record          jsonb NOT NULL,
  PRIMARY KEY (episode_id, step_key)
);
CREATE INDEX remote_jobs_remote_job_id_idx ON remote_jobs (remote_job_id) WHERE remote_job_id IS NOT NULL;

-- The charges of an episode, in the order they were recorded.
CREATE TABLE ledger_entries (
  episode_id    text NOT NULL REFERENCES episodes (episode_id),
  position      integer NOT NULL CHECK (position >= 0),
  step          text NOT NULL,
  round         integer NOT NULL CHECK (round >= 0),
  remote_job_id text NOT NULL,
  amount_cents  bigint NOT NULL CHECK (amount_cents >= 0),
  currency      text NOT NULL,
  recorded_at   text NOT NULL,
  PRIMARY KEY (episode_id, position)
);

-- Completed history: one immutable entry per episode (append-only; the store never updates or deletes a row).
CREATE TABLE history (
  episode_id       text PRIMARY KEY,
  week_id          text NOT NULL,
  sequence         integer NOT NULL,
  allocation_key   text,
  completed_at     text NOT NULL,
  total_cost_cents bigint NOT NULL CHECK (total_cost_cents >= 0),
  currency         text NOT NULL,
  entry            jsonb NOT NULL,
  recorded_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT history_id_is_week_and_sequence CHECK (episode_id = week_id || '-' || sequence::text)
);
CREATE INDEX history_week_idx ON history (week_id, sequence);
`,
} as const;
