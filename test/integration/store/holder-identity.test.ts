/**
 * When a waiter may take over a file store lock before its heartbeat goes stale: only when the kernel proves the
 * holder dead (src/store/holder-identity.ts). Each test plants a lock directory whose holder entry names a real
 * process (or none), as a holder of this version would, then allocates with a one-minute stale time: a takeover that
 * is not proven must wait (here, time out), a proven one goes at once.
 *
 * Proofs (run by hand, reported in the PR): without the start-time comparison, the reused-pid test times out; without
 * the boot-id (or pid-namespace) comparison, the other-boot test takes the lock.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs, mkdirSync, mkdtempSync, readFileSync, readlinkSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';

const W32 = parseWeekId('2026-W32');
const by = { kind: 'test', note: 'holder-identity' } as const;
const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
const pidNs = /\d+/.exec(readlinkSync('/proc/self/ns/pid'))![0];

function startTime(pid: number): string {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[19]!;
}

describe("taking over a lock whose holder's death the kernel proves, and only then", function () {
  this.timeout(60_000);
  let dir: string;
  let sleeper: ChildProcess;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'holder-identity-'));
    sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
  });
  afterEach(async () => {
    sleeper.kill('SIGKILL');
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** A lock held (fresh heartbeat) by the holder `entry` names. */
  const plant = (entry: string) => {
    mkdirSync(path.join(dir, 'pipeline.lock', entry), { recursive: true, mode: 0o700 });
  };
  const allocate = (timeoutMs: number) =>
    allocateEpisodeOn(
      new FileEpisodeStore(dir, { timeoutMs, staleMs: 60_000 }),
      { allocationKey: 'k', weekId: W32 },
      by,
    );
  const timesOut = (e: unknown) => isPipelineError(e) && e.type === ErrorType.LockTimeout;

  it('a live holder (pid and start time match): waited for', async () => {
    const pid = sleeper.pid!;
    plant(`holder-${pid}-${startTime(pid)}-${pidNs}-${bootId}`);
    await assert.rejects(allocate(2000), timesOut);
  });

  it('a reused pid (alive, but started at another time): taken over at once', async () => {
    const pid = sleeper.pid!;
    plant(`holder-${pid}-${Number(startTime(pid)) - 1}-${pidNs}-${bootId}`);
    assert.equal((await allocate(10_000)).episodeId, '2026-W32-0');
  });

  it('a pid that no longer exists: taken over at once', async () => {
    const pid = sleeper.pid!;
    const entry = `holder-${pid}-${startTime(pid)}-${pidNs}-${bootId}`;
    sleeper.kill('SIGKILL');
    await new Promise((resolve) => sleeper.once('exit', resolve));
    plant(entry);
    assert.equal((await allocate(10_000)).episodeId, '2026-W32-0');
  });

  it('a holder from another boot, or another pid namespace, proves nothing: waited for', async () => {
    // A pid that does not exist here, so only the boot id or the namespace keeps the waiter out.
    const gone = 4_000_000;
    const otherBoot = bootId.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    plant(`holder-${gone}-1-${pidNs}-${otherBoot}`);
    await assert.rejects(allocate(2000), timesOut);
    await fs.rm(path.join(dir, 'pipeline.lock'), { recursive: true });
    plant(`holder-${gone}-1-${Number(pidNs) + 1}-${bootId}`);
    await assert.rejects(allocate(2000), timesOut);
  });

  it('an entry it cannot read (an older version, or junk): waited for', async () => {
    plant('holder-4000000-0123456789abcdef-1');
    await assert.rejects(allocate(2000), timesOut);
  });
});
