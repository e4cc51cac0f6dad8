import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  countFaults,
  faultInvariants,
  kindsNeverHit,
  readFaultLines,
  type FaultLine,
} from '../../../campaign/check/fault-counts';
import { exitCode } from '../../../campaign/check/report';
import { FaultRunner, type FaultEnv } from '../../../campaign/faults';
import { History } from '../../../campaign/history';
import type { PlannedFault } from '../../../campaign/plan';
import type { Stack } from '../../../campaign/stack';

const line = (id: string, kind: string, step: FaultLine['step'], detail?: Record<string, unknown>): FaultLine => ({
  type: 'fault',
  id,
  kind,
  step,
  ...(detail ? { detail } : {}),
});

/** `n` faults of `kind`, injected; the first `hits` of them hit (and healed). */
function faults(kind: string, n: number, hits: number): FaultLine[] {
  return Array.from({ length: n }, (_, i) => {
    const id = `f${i}-${kind}`;
    const steps: FaultLine[] = [line(id, kind, 'injected')];
    return i < hits
      ? [...steps, line(id, kind, 'hit'), line(id, kind, 'healed')]
      : [...steps, line(id, kind, 'missed')];
  }).flat();
}

describe('campaign checker: faults that did not happen fail the campaign', () => {
  it('at any size, a kind injected 3 times or more that never hit; at the default year, any kind that never hit', () => {
    const kinds = countFaults(
      [...faults('worker-freeze', 3, 0), ...faults('vendor-repeat', 2, 0), ...faults('worker-kill', 5, 1)],
      new Set(),
    );
    assert.deepEqual(kindsNeverHit(kinds, false), ['worker-freeze: injected 3, hit 0']);
    assert.deepEqual(kindsNeverHit(kinds, true), [
      'worker-freeze: injected 3, hit 0',
      'vendor-repeat: injected 2, hit 0',
    ]);
    assert.deepEqual(kindsNeverHit(countFaults(faults('worker-freeze', 3, 1), new Set()), false), []);
  });

  it('recovered: hit, healed, and every episode in flight at the injection completed', () => {
    const lines = [
      { ...line('f1', 'worker-kill', 'injected'), inFlight: ['2020-W01-0'] },
      line('f1', 'worker-kill', 'hit'),
      line('f1', 'worker-kill', 'healed'),
    ];
    assert.deepEqual(countFaults(lines, new Set()), [{ kind: 'worker-kill', injected: 1, hit: 1, recovered: 0 }]);
    assert.deepEqual(countFaults(lines, new Set(['2020-W01-0'])), [
      { kind: 'worker-kill', injected: 1, hit: 1, recovered: 1 },
    ]);
  });

  it('a fault whose injection failed is a violation naming the fault and its error: exit 1', () => {
    const lines = [
      ...faults('worker-kill', 2, 2),
      line('f7-store-restore', 'store-restore', 'failed', { error: 'EACCES' }),
    ];
    const invariants = faultInvariants(lines, countFaults(lines, new Set()), false).map((i) => ({
      ...i,
      violations: i.details.length,
    }));
    const failed = invariants.find((i) => i.name.startsWith('planned faults whose injection failed'))!;
    assert.deepEqual(failed.details, ['f7-store-restore (store-restore): EACCES']);
    assert.equal(exitCode({ invariants }), 1);
    assert.equal(exitCode({ invariants: invariants.map((i) => ({ ...i, violations: 0 })) }), 0);
  });

  it('the fault runner records an injection that throws as failed, and the check turns it into exit 1', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'campaign-failed-'));
    try {
      const history = new History(path.join(dir, 'history.jsonl'));
      const store = {
        backup: () => Promise.reject(new Error('pg_basebackup: could not access directory: Permission denied')),
      };
      const env = {
        stack: { store } as unknown as Stack,
        history,
        out: dir,
        inFlight: () => [],
        awaiting: () => [],
        roundsOpened: () => [],
        accepted: () => 0,
        untilAccepted: () => new Promise<void>(() => undefined),
        onVendor: () => () => undefined,
        restarted: () => undefined,
        forgot: () => undefined,
        log: () => undefined,
      } satisfies FaultEnv;
      const runner = new FaultRunner(env);
      const fault: PlannedFault = {
        id: 'f001-store-restore',
        kind: 'store-restore',
        trigger: { accepted: 1 },
        until: 5,
      };
      runner.fire(fault);
      await Promise.all(runner.pending);
      const lines = readFaultLines(history.file);
      const invariants = faultInvariants(lines, countFaults(lines, new Set()), false).map((i) => ({
        ...i,
        violations: i.details.length,
      }));
      assert.deepEqual(invariants.find((i) => i.details.length > 0)?.details, [
        'f001-store-restore (store-restore): pg_basebackup: could not access directory: Permission denied',
      ]);
      assert.equal(exitCode({ invariants }), 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
