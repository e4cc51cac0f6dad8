import assert from 'node:assert/strict';
import { parseOptions, unsafeStoreError, USAGE } from '../../../campaign/options';
import { FAULT_KINDS } from '../../../campaign/plan';

describe('campaign options', () => {
  it('--help and -h ask for the usage, which names every option', () => {
    assert.deepEqual(parseOptions(['--help']), { kind: 'help' });
    assert.deepEqual(parseOptions(['--weeks', '8', '-h']), { kind: 'help' });
    for (const option of ['--weeks', '--per-week', '--faults', '--seed', '--store', '--vendor', '--workers', '--out']) {
      assert.ok(USAGE.includes(option), option);
    }
    for (const option of ['--replay', '--docs', '--without', '--unsafe', '--help']) assert.ok(USAGE.includes(option));
    for (const kind of FAULT_KINDS) assert.ok(USAGE.includes(kind), kind);
  });

  it('an unknown option or a bad value is an error that says which, not an exception', () => {
    const unknown = parseOptions(['--bogus']);
    assert.equal(unknown.kind, 'error');
    assert.match(unknown.kind === 'error' ? unknown.error : '', /--bogus/);
    const store = parseOptions(['--store', 'mysql']);
    assert.equal(store.kind, 'error');
    assert.match(store.kind === 'error' ? store.error : '', /--store/);
    const vendor = parseOptions(['--vendor', 'acme']);
    assert.equal(vendor.kind, 'error');
    assert.match(vendor.kind === 'error' ? vendor.error : '', /--vendor/);
    const without = parseOptions(['--without', 'worker-kill,no-such-kind']);
    assert.equal(without.kind, 'error');
    assert.match(without.kind === 'error' ? without.error : '', /--without/);
  });

  it('defaults: the default year on the file store, a random seed drawn once', () => {
    const parsed = parseOptions([], () => 1234);
    assert.equal(parsed.kind, 'run');
    if (parsed.kind !== 'run') return;
    assert.deepEqual(
      { ...parsed.options },
      {
        weeks: 52,
        'per-week': 2,
        faults: 100,
        seed: 1234,
        store: 'file',
        vendor: 'native',
        workers: 3,
        docs: false,
        without: [],
      },
    );
  });

  it('a smoke campaign as CI runs it', () => {
    const parsed = parseOptions([
      '--weeks',
      '8',
      '--seed',
      '7',
      '--store',
      'postgres',
      '--out',
      '/x',
      '--without',
      'pg-failover',
    ]);
    assert.equal(parsed.kind, 'run');
    if (parsed.kind !== 'run') return;
    assert.equal(parsed.options.weeks, 8);
    assert.equal(parsed.options.seed, 7);
    assert.equal(parsed.options.store, 'postgres');
    assert.equal(parsed.options.out, '/x');
    assert.deepEqual(parsed.options.without, ['pg-failover']);
  });

  it("--unsafe no-fence is the file store's variant: on PostgreSQL an error that says so", () => {
    const file = parseOptions(['--unsafe', 'no-fence'], () => 1);
    assert.equal(file.kind === 'run' && file.options.unsafe, 'no-fence');
    const postgres = parseOptions(['--unsafe', 'no-fence', '--store', 'postgres'], () => 1);
    assert.equal(postgres.kind, 'error');
    assert.match(postgres.kind === 'error' ? postgres.error : '', /no-fence .*file store only.*postgres/);
    // A replayed plan names its store: run.ts asks the same question of it.
    assert.equal(parseOptions(['--unsafe', 'no-fence', '--replay', 'p.json', '--store', 'postgres']).kind, 'run');
    assert.match(unsafeStoreError('no-fence', 'postgres') ?? '', /file store only/);
    assert.equal(unsafeStoreError('no-lock', 'postgres'), undefined);
    assert.equal(unsafeStoreError(undefined, 'postgres'), undefined);
  });
});
