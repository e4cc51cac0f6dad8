/**
 * The file store's lock against hostile processes on the same machine (issue 19), each a real process. The lock rests
 * on the filesystem and the kernel alone, so whoever cannot write the data dir cannot make a store process allocate,
 * wait, crash or take over. In each test a holder sleeps inside the pipeline lock while the attack runs and a waiter
 * starts beside it; the waiter never finishes while the holder is in the lock (seen in the lock directory), the week ends with
 * exactly sequences 0..n-1, and `episodes verify` is clean.
 *
 * Proof: at aae379a (the lock with a socket handoff), the EMFILE test fails: the holder at its fd limit accepts and
 * closes the waiter's connection, the waiter reads that as the holder's death, removes its lock and allocates while the
 * holder still sleeps in it (which then fails with LockCompromised).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, promises as fs, readdirSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AllocOutcome } from '../../../testkit/alloc-client';
import { collect, DIST_ROOT, runCli, spawnNode, type ProcessResult } from '../../../testkit/processes';
import { listeningAddresses } from '../../../testkit/process-sockets';
import { waitFor } from '../../../testkit/wait';

const WEEK = '2026-W32';
/** How long the holder sleeps inside the lock: the attacks and the waiter run meanwhile. */
const HOLD_MS = 4000;

interface Exited extends ProcessResult {
  at: number;
}

function exited(child: ReturnType<typeof spawnNode>): Promise<Exited> {
  return collect(child).then((r) => ({ ...r, at: Date.now() }));
}

function allocate(dir: string, key: string, extra: NodeJS.ProcessEnv = {}) {
  const child = spawnNode('testkit/alloc-client.js', ['0', JSON.stringify([{ key, week: WEEK }])], {
    EPISODES_DATA_DIR: dir,
    EPISODES_STORE_URL: '',
    EPISODES_LOCK_TIMEOUT_MS: '30000',
    ...extra,
  });
  return { child, done: exited(child) };
}

/** A holder inside the pipeline lock for HOLD_MS, its entry already in the lock directory. */
async function startHolder(dir: string) {
  const holder = allocate(dir, 'holder', { EPISODES_FAILPOINTS: `allocation.lock-taken=delay:${HOLD_MS}` });
  const lock = path.join(dir, 'pipeline.lock');
  await waitFor(
    () => existsSync(lock) && readdirSync(lock).some((e) => e.startsWith('holder-')),
    15_000,
    'the holder to take the lock',
  );
  return holder;
}

/**
 * Whether the waiter exited while the holder's entry was still in the lock directory, watched until the holder exits.
 * The exit is read before the lock, so a waiter that exited only after the holder let go is never counted. (Exit
 * times alone would not do: a holder that let go may take longer to exit than the waiter takes to allocate.)
 */
async function finishedInsideHold(dir: string, holder: Promise<unknown>, waiter: Promise<unknown>): Promise<boolean> {
  let holderExited = false;
  let waiterExited = false;
  void holder.then(() => (holderExited = true));
  void waiter.then(() => (waiterExited = true));
  const lock = path.join(dir, 'pipeline.lock');
  while (!holderExited) {
    const exitedBefore = waiterExited;
    const held = existsSync(lock) && readdirSync(lock).some((e) => e.startsWith('holder-'));
    if (exitedBefore && held) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

function outcomes(r: ProcessResult): AllocOutcome[] {
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as AllocOutcome[];
}

/** The week holds exactly sequences 0..n-1, one per successful allocation, and verify finds nothing wrong. */
async function assertWeekClean(dir: string, allocated: AllocOutcome[]): Promise<void> {
  const ok = allocated.filter((o) => 'episodeId' in o);
  const index = JSON.parse(readFileSync(path.join(dir, 'index', 'weeks', `${WEEK}.json`), 'utf8')) as {
    episodes: { sequence: number; allocation_key: string }[];
  };
  assert.deepEqual(
    index.episodes.map((e) => e.sequence),
    ok.map((_, i) => i),
  );
  assert.deepEqual(index.episodes.map((e) => e.allocation_key).sort(), ok.map((o) => o.key).sort());
  const verify = await runCli(['--data-dir', dir, 'verify', '--json']);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  assert.equal((JSON.parse(verify.stdout) as { ok: boolean }).ok, true, verify.stdout);
}

/** Starts the attacker against `pid` and waits for its report (what it found and did). */
async function attack(pid: number, plan: object) {
  const child = spawnNode('testkit/lock-attacker.js', [String(pid), JSON.stringify(plan)]);
  const report = await new Promise<{ addresses: string[]; connected: number; squatted: string[] }>(
    (resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(JSON.parse(out.slice(0, out.indexOf('\n'))) as never);
      });
      child.on('exit', (code) => reject(new Error(`attacker exited ${code}`)));
    },
  );
  return { child, report };
}

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

describe('the lock against hostile local processes', function () {
  this.timeout(90_000);
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'lock-peers-'));
    dirs.push(dir);
    return dir;
  };
  after(async () => {
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
  });

  it('a holder driven to EMFILE (prlimit, idle connections held to it): the waiter waits for it', async () => {
    const dir = tempDir();
    const holder = await startHolder(dir);
    const pid = holder.child.pid!;
    const open = readdirSync(`/proc/${pid}/fd`).length;
    execFileSync('prlimit', ['--pid', String(pid), `--nofile=${open + 2}:`]);
    const attacker = await attack(pid, { idle: 8, garbage: 0, noNewlineBytes: 0 });
    const waiter = allocate(dir, 'waiter');
    const inside = finishedInsideHold(dir, holder.done, waiter.done);
    const [held, waited] = await Promise.all([holder.done, waiter.done]);
    attacker.child.kill('SIGKILL');
    console.log(
      `      holder at ${open + 2} fds, ${attacker.report.connected} idle connections to it; ` +
        `waiter done ${waited.at - held.at} ms after the holder exited`,
    );
    assert.equal(await inside, false, 'the waiter finished while the holder was in the lock');
    const all = [...outcomes(held), ...outcomes(waited)];
    // At its fd limit the holder may fail its own writes (StorageFailure); its lock is never taken from it.
    assert.ok(
      all.every((o) => 'episodeId' in o || o.error === 'StorageFailure'),
      JSON.stringify(all),
    );
    assert.ok('episodeId' in all[1]!, JSON.stringify(all));
    await assertWeekClean(dir, all);
  });

  it('garbage, 10 MB without a newline, 1,000 idle connections, a squatter on the old socket name: nothing moves', async () => {
    const dir = tempDir();
    const holder = await startHolder(dir);
    const pid = holder.child.pid!;
    const before = rssKb(pid);
    const attacker = await attack(pid, { idle: 1000, garbage: 1 << 20, noNewlineBytes: 10 << 20, squat: dir });
    const waiter = allocate(dir, 'waiter');
    const inside = finishedInsideHold(dir, holder.done, waiter.done);
    const during = rssKb(pid);
    const [held, waited] = await Promise.all([holder.done, waiter.done]);
    attacker.child.kill('SIGKILL');
    console.log(
      `      holder listens on ${attacker.report.addresses.length} sockets; squatter on ${attacker.report.squatted.length}` +
        ` old names; holder RSS ${before} -> ${during} kB; waiter done ${waited.at - held.at} ms after the holder`,
    );
    assert.deepEqual(attacker.report.addresses, [], 'the holder listens on nothing another process could reach');
    assert.ok(attacker.report.squatted.length > 0, 'the squatter listens');
    assert.ok(during - before < 32 * 1024, `the holder grew by ${during - before} kB`);
    assert.equal(await inside, false, 'the waiter finished while the holder was in the lock');
    const all = [...outcomes(held), ...outcomes(waited)];
    assert.deepEqual(
      all.map((o) => ('episodeId' in o ? o.episodeId : o.error)),
      [`${WEEK}-0`, `${WEEK}-1`],
    );
    await assertWeekClean(dir, all);
  });

  it('a process as user nobody tries every way in: it cannot allocate, wait, take over or disturb the holder', async function () {
    // Becoming another user takes root; as anyone else this is reported pending, not passed.
    if (process.getuid?.() !== 0) return this.skip();
    const dir = tempDir();
    const holder = await startHolder(dir);
    const probe = spawn(
      'setpriv',
      [
        '--reuid=nobody',
        '--regid=nogroup',
        '--clear-groups',
        process.execPath,
        path.join(DIST_ROOT, 'testkit/lock-intruder.js'),
        dir,
        String(holder.child.pid),
        JSON.stringify(listeningAddresses(holder.child.pid!).map(String)),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const tried = await collect(probe);
    assert.equal(tried.code, 0, tried.stderr);
    const report = JSON.parse(tried.stdout) as Record<string, string>;
    console.log(`      as nobody: ${JSON.stringify(report)}`);
    for (const [way, result] of Object.entries(report)) assert.notEqual(result, 'ok', `${way} succeeded as nobody`);
    const waiter = allocate(dir, 'waiter');
    const inside = finishedInsideHold(dir, holder.done, waiter.done);
    const [held, waited] = await Promise.all([holder.done, waiter.done]);
    assert.equal(await inside, false, 'the waiter finished while the holder was in the lock');
    const all = [...outcomes(held), ...outcomes(waited)];
    assert.deepEqual(
      all.map((o) => ('episodeId' in o ? o.episodeId : o.error)),
      [`${WEEK}-0`, `${WEEK}-1`],
    );
    await assertWeekClean(dir, all);
  });
});
