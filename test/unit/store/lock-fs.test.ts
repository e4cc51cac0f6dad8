/**
 * The takeover mutex (`<lock>.reclaim`) left behind by a killed holder: two contenders that both find it stale must
 * not both come to hold it, whichever of their file calls the other's whole takeover falls between.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdirSync, mkdtempSync, readdirSync, utimesSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { takeMutex, type MutexFs, type MutexHold } from '../../../src/store/lock-fs';

const STALE_MS = 1_000;

/** A contender as the lock's takeover is one: a few attempts in a row. */
async function contender(mutex: string, fsp: MutexFs): Promise<MutexHold | undefined> {
  for (let i = 0; i < 3; i++) {
    const hold = await takeMutex(mutex, STALE_MS, fsp);
    if (hold !== undefined) return hold;
  }
  return undefined;
}

/** node's fs.promises, with the calls `stopsAt` picks held back until `open` resolves; `reached` once one was. */
function gated(stopsAt: (call: string, args: unknown[]) => boolean, open: Promise<unknown>) {
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const real = fs as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const fsp = new Proxy(real, {
    get:
      (target, call: string) =>
      async (...args: unknown[]) => {
        if (stopsAt(call, args)) {
          reach();
          await open;
        }
        return target[call]!(...args);
      },
  }) as unknown as MutexFs;
  return { fsp, reached };
}

describe('the takeover mutex of a lock', () => {
  let dir: string;
  let mutex: string;
  /** Left by a holder killed inside, an hour ago: with its entry, or empty (as builds before this one made it). */
  const leaveStale = (withEntry: boolean) => {
    mkdirSync(withEntry ? path.join(mutex, 'holder-dead') : mutex, { recursive: true });
    const anHourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(mutex, anHourAgo, anHourAgo);
  };
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'reclaim-mutex-'));
    mutex = path.join(dir, 'pipeline.lock.reclaim');
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  const inside = (args: unknown[]) => String(args[0]).startsWith(`${mutex}${path.sep}`);
  const interleavings: Record<string, (call: string, args: unknown[]) => boolean> = {
    'B stopped before reading the holder': (call) => call === 'readdir',
    'B stopped between reading the holder and its age': (call) => call === 'stat',
    'B stopped just before its takeover': (call, args) => call === 'rename' && inside(args),
    'B stopped before removing a stale mutex': (call) => call === 'rmdir',
  };
  for (const [name, stopsAt] of Object.entries(interleavings)) {
    for (const withEntry of [true, false]) {
      const shape = withEntry ? 'with its entry' : 'empty';
      it(`two contenders for a stale mutex (${shape}): one holds it; ${name}, A's whole takeover between`, async () => {
        leaveStale(withEntry);
        let openGate!: () => void;
        const gate = gated(stopsAt, new Promise<void>((resolve) => (openGate = resolve)));
        const b = contender(mutex, gate.fsp);
        await Promise.race([gate.reached, b]);
        const a = await contender(mutex, fs);
        openGate();
        // (B takes it alone when it never makes the call it would be stopped at.)
        const holds = [a, await b].filter((h) => h !== undefined);
        assert.equal(holds.length, 1, 'exactly one contender holds the mutex');
        await holds[0]!.release();
        assert.deepEqual(readdirSync(dir), [], 'released: nothing left behind');
      });
    }
  }

  it('a fresh mutex is not taken; once released it is', async () => {
    leaveStale(true);
    const first = await takeMutex(mutex, STALE_MS);
    assert.ok(first !== undefined, 'the stale one is taken over');
    assert.equal(await takeMutex(mutex, STALE_MS), undefined, 'held and fresh');
    await first.release();
    const second = await takeMutex(mutex, STALE_MS);
    assert.ok(second !== undefined);
    await second.release();
  });
});
