/**
 * Versioned schema migrations of the PostgreSQL store, applied in order on start by runner.ts.
 * Plain numbered SQL kept in .ts modules so that `tsc` ships them in dist/ with no copy step. A migration is never
 * edited once released: add `NNN-<name>.ts` with the next version and append it here.
 */
import { migration001 } from './001-initial-schema';
import { migration002 } from './002-review-sessions';
import { migration003 } from './003-vendor-prices';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = [migration001, migration002, migration003];

export const LATEST_SCHEMA_VERSION = MIGRATIONS.length;
