/**
 * The fault tables are built from the rows the reliability tests keep: only from a run of every row (a quick run's
 * subset would pass for the whole), only with every scenario reported, and with totals that add up.
 */
import assert from 'node:assert/strict';
import { runFacts } from '../../../testkit/doc-tables';
import { faultDocTables } from '../../../testkit/fault-tables';

const crash = (store: string, point: string) => ({
  store,
  point,
  died: 'yes (SIGKILL)',
  billedAtDeath: 1,
  outcome: 'completed',
  charges: 3,
  ledger: 3,
  verify: 'clean',
  lock: 'released',
  seconds: 20,
});
const soak = (store: string) => ({
  store,
  runs: 63,
  'SIGKILLs (lock holders)': 3,
  charges: 189,
  'ledger entries': 189,
});
const database = { fault: 'crash', moment: 'queued', 'npm test': 'yes', runs: 4, outcome: 'completed' };

function parts(full: boolean): Record<string, unknown> {
  const of = (rows: unknown[]) => ({ full, rows });
  return {
    'crash-matrix': of([crash('file', 'allocation.decided'), crash('postgres', 'allocation.decided')]),
    'concurrency-soak-file-store': of([soak('file')]),
    'concurrency-soak-postgres-store': of([soak('postgres')]),
    'server-restarts': of([1, 2].map(() => ({ runs: 6, charges: 18, 'ledger entries': 18 }))),
    'stale-lock-takeover': of([1, 2, 3].map((round) => ({ round, contenders: 6 }))),
    'database-faults': of([{ ...database, 'recovery s': 9, charges: 12, 'ledger entries': 12, seconds: 50 }]),
  };
}

describe('fault tables from a test run', () => {
  const run = runFacts('npm run test:faults -- --write-docs', new Date(), [1, 1, 1]);
  const fromParts = faultDocTables.fromParts!;

  it('adds up the scenarios of a full run', () => {
    const inputs = fromParts(parts(true), run);
    assert.deepEqual(Object.keys(inputs).sort(), ['crash-matrix', 'database', 'summary']);
    const summary = faultDocTables.render('summary', inputs.summary!);
    assert.match(summary, /\*\*13\*\* \| \*\*134 weekly runs \+ 18 allocations\*\* \| \*\*402 = 402\*\*/);
    assert.match(
      faultDocTables.render('crash-matrix', inputs['crash-matrix']!),
      /`allocation.decided` \| 1 → 3 = 3, 20 s/,
    );
    assert.match(faultDocTables.render('database', inputs.database!), /\| crash † \| queued \| 4 \|/);
  });

  it('refuses a quick run and a run that did not report every scenario', () => {
    assert.throws(() => fromParts(parts(false), run), /run npm run test:faults/);
    const { 'server-restarts': _, ...partial } = parts(true);
    assert.throws(() => fromParts(partial, run), /did not report server-restarts/);
    assert.deepEqual(fromParts({ 'some-other-table': {} }, run), {});
  });
});
