/**
 * How each planned fault is injected, how the campaign knows it hit something in flight, and how it is healed. Every
 * step is a line in history.jsonl (injected, hit, healed, missed, failed); the checker counts them per kind.
 */
import type { RequestLog } from '../src/vendor-sim/simulator';
import type { VendorFaults } from '../src/vendor-sim/faults';
import { sleep } from '../test/helpers/wait';
import type { FaultLine, History } from './history';
import type { PlannedFault } from './plan';
import { JOB_DURATION_MS, LOCK_STALE_MS, type Stack } from './stack';
import { PostgresStoreHost } from './store-host';
import { isStopped, type ArmedSlot } from './workers';
import type { WorkerProcess } from '../test/helpers/reliability';

/** An armed worker that has not hit its failpoint after this many more accepted submissions is retired (missed). */
const ARMED_PATIENCE = 20;

export interface FaultEnv {
  stack: Stack;
  history: History;
  out: string;
  /** Episodes allocated and not completed now. */
  inFlight(): string[];
  /** Episodes waiting for a decision now. */
  awaiting(): string[];
  /** Every approval round the reviewer has seen open so far (`<episode>:r<round>`). */
  roundsOpened(): string[];
  accepted(): number;
  /** Resolves once the vendor has accepted `n` submissions in all. */
  untilAccepted(n: number): Promise<void>;
  /** Subscribes to every vendor request once answered; returns the unsubscribe. */
  onVendor(listener: (entry: RequestLog) => void): () => void;
  /** A restart happened (late decisions wait for one). */
  restarted(): void;
  log(line: string): void;
}

/** Serialises what must not overlap: process restarts, store swaps, the one armed worker. */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  run<T>(body: () => Promise<T>): Promise<T> {
    const result = this.tail.then(body);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

export class FaultRunner {
  private readonly processes = new Mutex();
  private readonly storeFaults = new Mutex();
  private readonly armedQueues: Record<ArmedSlot, Mutex> = {
    alloc: new Mutex(),
    main: new Mutex(),
    vendor: new Mutex(),
  };
  private readonly lost: PlannedFault[] = [];
  private keysWindowOpen = false;
  private endCampaign!: () => void;
  private ending = false;
  private readonly finishing = new Promise<void>((resolve) => (this.endCampaign = resolve));
  /** Faults not finished yet (each resolves once healed or missed). */
  readonly pending = new Set<Promise<void>>();

  constructor(private readonly env: FaultEnv) {}

  /**
   * Starts `fault` now; it runs on by itself until healed. A fault whose injection (or healing) throws is `failed`
   * with its error: the checker fails the campaign for it, since a fault that did not happen proves nothing.
   */
  fire(fault: PlannedFault): void {
    const run = this.run(fault).catch((e: unknown) => {
      this.env.log(`${fault.id} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      this.line(fault, 'failed', { error: (e instanceof Error ? e.message : String(e)).slice(0, 500) });
    });
    this.pending.add(run);
    void run.finally(() => this.pending.delete(run));
  }

  /** The campaign is over: the armed worker is retired (its fault, if not hit, is missed). */
  async finish(): Promise<void> {
    this.ending = true;
    this.endCampaign();
    await Promise.all(Object.values(this.armedQueues).map((q) => q.run(() => this.env.stack.pool.retireArmed())));
  }

  private line(f: PlannedFault, step: FaultLine['step'], detail: Record<string, unknown>) {
    this.env.history.fault({
      id: f.id,
      kind: f.kind,
      step,
      detail,
      ...(step === 'injected' ? { inFlight: this.env.inFlight() } : {}),
    });
  }

  private async run(f: PlannedFault): Promise<void> {
    const { stack } = this.env;
    switch (f.kind) {
      case 'worker-kill':
        return void (await this.armed(f, f.failpoint!, 'kill'));
      case 'worker-freeze':
        return void (await this.armed(f, f.failpoint!, 'freeze'));
      case 'vendor-drop':
        return this.drop(f);
      case 'workers-kill-all':
        return this.processes.run(async () => {
          this.line(f, 'injected', { accepted: this.env.accepted() });
          const killed = await stack.pool.killAll();
          this.env.restarted();
          if (killed > 0) this.line(f, 'hit', { killed, note: 'a submission was accepted and not yet saved' });
          this.line(f, 'healed', { restarted: stack.pool.all().length });
        });
      case 'temporal-restart':
        return this.processes.run(async () => {
          const running = this.env.inFlight().length;
          this.line(f, 'injected', { running });
          const how = await stack.server.stop();
          await stack.server.start();
          this.env.restarted();
          if (running > 0) this.line(f, 'hit', { stoppedBy: how, productionsRunning: running });
          this.line(f, 'healed', {});
        });
      case 'webhook-down':
        return this.webhookDown(f);
      case 'vendor-outage':
        return this.vendorFault(f, { fail5xx: { count: f.amount ?? 20 } }, (e) => e.status === 503);
      case 'vendor-lose':
        return this.vendorLose(f);
      case 'vendor-slow':
        return this.vendorSlow(f);
      case 'vendor-repeat':
        return this.vendorRepeat(f);
      case 'pg-restart':
      case 'pg-terminate':
        return this.postgres(f);
      case 'pg-failover':
        return this.storeFaults.run(() => this.failover(f));
      case 'store-restore':
        return this.storeFaults.run(() => this.restore(f));
    }
  }

  // ---- the armed worker: kill or freeze at a failpoint ----

  /**
   * One armed worker at a time: started with `failpoint`, it either hits it (killed, or frozen then resumed) or is
   * retired as missed after ARMED_PATIENCE more accepted submissions. Resolves with whether it hit.
   */
  private armed(
    f: PlannedFault,
    failpoint: string,
    mode: 'kill' | 'freeze',
    { quiet = false, onArmed }: { quiet?: boolean; onArmed?: () => void } = {},
  ): Promise<boolean> {
    const slot: ArmedSlot = 'wave' in f.trigger ? 'alloc' : f.kind.startsWith('vendor-') ? 'vendor' : 'main';
    return this.armedQueues[slot].run(async () => {
      const { pool } = this.env.stack;
      let ended!: (outcome: 'hit' | 'exit') => void;
      const done = new Promise<'hit' | 'exit'>((resolve) => (ended = resolve));
      this.line(f, 'injected', { failpoint });
      const w = await this.processes.run(() =>
        pool.arm(slot, failpoint, (how) => ended(mode === 'kill' && how.signal === 'SIGKILL' ? 'hit' : 'exit')),
      );
      onArmed?.();
      if (mode === 'freeze') void this.watchFreeze(w).then((stopped) => stopped && ended('hit'));
      const patience = this.env.untilAccepted(this.env.accepted() + ARMED_PATIENCE).then(() => 'timeout' as const);
      const outcome = await Promise.race([done, patience, this.finishing.then(() => 'timeout' as const)]);
      if (outcome !== 'hit') {
        this.line(f, 'missed', { failpoint, note: outcome === 'exit' ? 'exited otherwise' : 'failpoint not reached' });
        await this.processes.run(() => pool.retireArmed(slot));
        return false;
      }
      if (quiet) return true;
      this.line(f, 'hit', { failpoint, worker: w.name });
      if (mode === 'freeze') await this.thaw(f, w);
      else this.line(f, 'healed', { note: 'the base workers carry on; Temporal retries elsewhere' });
      return true;
    });
  }

  /** Resolves true once the worker is stopped (SIGSTOP at its failpoint), false if it exits first. */
  private async watchFreeze(w: WorkerProcess): Promise<boolean> {
    while (w.alive()) {
      if (isStopped(w)) return true;
      await sleep(100);
    }
    return false;
  }

  /** Frozen past its lease (others take the lock over meanwhile), then resumed: its stale writes must be refused. */
  private async thaw(f: PlannedFault, w: WorkerProcess): Promise<void> {
    const frozenMs = LOCK_STALE_MS * 2 + 1_000;
    await sleep(frozenMs);
    w.child.kill('SIGCONT');
    this.env.restarted();
    this.line(f, 'healed', { resumed: true, frozenMs });
  }

  // ---- the vendor ----

  private updateVendor(change: (f: VendorFaults) => VendorFaults): void {
    const vendor = this.env.stack.vendor;
    vendor.setFaults(change(vendor.faults()));
  }

  /** Sets `faults` until `isHit` sees a request it affected and the counts are used up; then clears them. */
  private async vendorFault(f: PlannedFault, faults: VendorFaults, isHit: (e: RequestLog) => boolean): Promise<void> {
    const hit = this.waitForVendor((e) => isHit(e));
    this.line(f, 'injected', { faults });
    this.updateVendor((current) => ({ ...current, ...faults }));
    const entry = await hit.promise;
    this.line(f, 'hit', { method: entry.method, path: entry.path, status: entry.status });
    while (Object.keys(faults).some((k) => countLeft(this.env.stack.vendor.faults(), k as keyof VendorFaults) > 0)) {
      await sleep(200);
    }
    this.updateVendor((current) => withoutKeys(current, Object.keys(faults) as (keyof VendorFaults)[]));
    this.line(f, 'healed', {});
  }

  private waitForVendor(match: (e: RequestLog) => boolean): { promise: Promise<RequestLog>; cancel(): void } {
    let off: () => void = () => undefined;
    const promise = new Promise<RequestLog>((resolve) => {
      off = this.env.onVendor((e) => {
        if (!match(e)) return;
        off();
        resolve(e);
      });
    });
    return { promise, cancel: off };
  }

  /**
   * A charge whose reply is lost: the vendor drops the connection after charging, or the worker dies before it saves
   * the reply. With `keysIgnored` the vendor also ignores idempotency keys (and cannot look jobs up) until a step
   * charged meanwhile is asked about again: the retry of the lost reply then cannot lean on the vendor's memory.
   */
  private async drop(f: PlannedFault): Promise<void> {
    const ignoreKeys = f.keysIgnored === true && !this.keysWindowOpen;
    if (ignoreKeys) this.keysWindowOpen = true;
    const posts = new Map<string, number>();
    let retried!: () => void;
    const retry = new Promise<void>((resolve) => (retried = resolve));
    let afterHit = false;
    // After the hit: a lookup of, or a POST again with, a key charged meanwhile is the lost reply's retry.
    const off = this.env.onVendor((e) => {
      const lookup = /[?&]client_ref=([^&]+)/.exec(e.path)?.[1];
      if (afterHit && lookup !== undefined && posts.has(decodeURIComponent(lookup))) retried();
      if (e.method !== 'POST' || !e.idempotencyKey) return;
      if (afterHit && posts.has(e.idempotencyKey)) retried();
      posts.set(e.idempotencyKey, (posts.get(e.idempotencyKey) ?? 0) + 1);
    });
    try {
      const ignore = () => ignoreKeys && this.updateVendor((c) => ({ ...c, noIdempotency: true }));
      let hit: boolean;
      // Keys are ignored from the moment the fault can fire: the armed worker polls, or the drop is set.
      if (f.failpoint) hit = await this.armed(f, f.failpoint, 'kill', { onArmed: ignore });
      else {
        ignore();
        const dropped = this.waitForVendor((e) => e.dropped);
        this.line(f, 'injected', { ignoreKeys });
        this.updateVendor((c) => ({ ...c, acceptThenDrop: { count: 1 } }));
        const e = await dropped.promise;
        this.line(f, 'hit', { key: e.idempotencyKey, job: e.jobId });
        hit = true;
      }
      afterHit = true;
      if (hit && ignoreKeys) await Promise.race([retry, this.env.untilAccepted(this.env.accepted() + ARMED_PATIENCE)]);
    } finally {
      off();
      this.updateVendor((c) => withoutKeys(c, ['acceptThenDrop', ...(ignoreKeys ? (['noIdempotency'] as const) : [])]));
      if (ignoreKeys) this.keysWindowOpen = false;
    }
    if (!f.failpoint) this.line(f, 'healed', { keysIgnoredUntilRetry: ignoreKeys });
  }

  /** The next accepted job is lost; it is found again when the operator asks about it (see the operator). */
  private async vendorLose(f: PlannedFault): Promise<void> {
    const hit = this.waitForVendor((e) => e.note === 'lost');
    this.line(f, 'injected', {});
    this.updateVendor((c) => ({ ...c, loseJobs: { count: 1 + countLeft(c, 'loseJobs') } }));
    const e = await hit.promise;
    this.line(f, 'hit', { job: e.jobId, note: 'a poll got 404 for a job the vendor accepted' });
    // Healed by the operator (`findLostJobs`), once the step is parked with its reason.
    this.lost.push(f);
  }

  /** The operator asked the vendor about a lost job: the vendor finds its lost jobs again. */
  findLostJobs(): void {
    this.updateVendor((c) => withoutKeys(c, ['loseJobs']));
    for (const f of this.lost.splice(0)) this.line(f, 'healed', { note: "found again at the operator's request" });
  }

  private async vendorSlow(f: PlannedFault): Promise<void> {
    const accepted = this.waitForVendor((e) => e.method === 'POST' && e.status === 202 && e.jobId !== null);
    const ms = f.amount ?? 8_000;
    this.line(f, 'injected', { extraMs: ms });
    this.updateVendor((c) => ({ ...c, slowJobs: { count: 1, ms } }));
    const job = (await accepted.promise).jobId!;
    const acceptedAt = Date.now();
    const polled = this.waitForVendor(
      (e) => e.jobId === job && e.method === 'GET' && Date.now() - acceptedAt > JOB_DURATION_MS,
    );
    await polled.promise;
    this.line(f, 'hit', { job, note: 'polled while slower than usual' });
    this.updateVendor((c) => withoutKeys(c, ['slowJobs']));
    this.line(f, 'healed', {});
  }

  /**
   * Completions are reported again after their first download while an armed worker dies right after a download: its
   * retry polls the same job and gets the completion a second time.
   */
  private async vendorRepeat(f: PlannedFault): Promise<void> {
    const repeated = this.waitForVendor((e) => e.note === 'repeat-completion');
    this.updateVendor((c) => ({ ...c, repeatCompletion: { count: 1_000 } }));
    const killed = await this.armed(f, 'submission.artifact-downloaded=kill@1', 'kill', { quiet: true });
    const e = killed
      ? await Promise.race([repeated.promise, this.env.untilAccepted(this.env.accepted() + ARMED_PATIENCE)])
      : undefined;
    repeated.cancel();
    this.updateVendor((c) => withoutKeys(c, ['repeatCompletion']));
    if (e) {
      this.line(f, 'hit', { job: e.jobId, note: 'a completion already downloaded was reported again' });
      this.line(f, 'healed', {});
    } else if (killed) this.line(f, 'missed', { note: 'no poll saw the repeated completion' });
  }

  // ---- the webhook receiver ----

  private async webhookDown(f: PlannedFault): Promise<void> {
    const { stack } = this.env;
    const before = new Set(this.env.roundsOpened());
    this.line(f, 'injected', {});
    await stack.receiverDown();
    const downAt = this.env.accepted();
    // Up again once a round opened meanwhile (its notice could not be sent), or 20 submissions later.
    let due: string[] = [];
    while (this.env.accepted() < downAt + 20 && !this.ending) {
      due = this.env.roundsOpened().filter((r) => !before.has(r));
      if (due.length > 0) break;
      await sleep(200);
    }
    await sleep(2_000);
    await stack.receiverUp();
    if (due.length === 0) return this.line(f, 'missed', { note: 'no round opened while it was down' });
    this.line(f, 'hit', { due });
    const keys = due.map((r) => r.replace(/:r(\d+)$/, ':review:r$1'));
    const seen = () => keys.every((k) => stack.notices.some((n) => n.key === k));
    for (let i = 0; i < 1_800 && !seen(); i++) await sleep(200);
    this.line(f, 'healed', { delivered: seen() });
  }

  // ---- PostgreSQL ----

  private postgres(f: PlannedFault): Promise<void> {
    const store = this.env.stack.store;
    if (!(store instanceof PostgresStoreHost)) return Promise.resolve(this.line(f, 'missed', { note: 'file store' }));
    return this.processes.run(async () => {
      this.line(f, 'injected', { accepted: this.env.accepted() });
      if (f.kind === 'pg-restart') {
        await store.restartImmediate();
        this.line(f, 'hit', { note: 'a submission was accepted and not yet saved' });
      } else {
        const n = await store.terminateWorkers();
        if (n > 0) this.line(f, 'hit', { sessions: n });
        else this.line(f, 'missed', { sessions: 0 });
      }
      this.line(f, 'healed', {});
    });
  }

  private async failover(f: PlannedFault): Promise<void> {
    const store = this.env.stack.store;
    if (!(store instanceof PostgresStoreHost)) return this.line(f, 'missed', { note: 'file store' });
    const cutAt = await store.cutReplication();
    this.line(f, 'injected', { cutAt, until: f.until });
    await this.env.untilAccepted(f.until!);
    await this.processes.run(async () => {
      let lost: number;
      try {
        lost = await store.failover();
      } finally {
        await this.env.stack.pool.restartAll();
      }
      this.env.restarted();
      if (lost > 0) this.line(f, 'hit', { walBytesLost: lost });
      else this.line(f, 'missed', { walBytesLost: 0 });
      this.line(f, 'healed', { note: 'workers repointed at the promoted standby' });
    });
  }

  private async restore(f: PlannedFault): Promise<void> {
    const store = this.env.stack.store;
    const backup = await store.backup(f.id);
    const backedUp = this.env.accepted();
    this.line(f, 'injected', { backupAt: backedUp, until: f.until, ...backup });
    await this.env.untilAccepted(f.until!);
    await this.processes.run(async () => {
      const parked = this.env.awaiting().length;
      const inFlight = this.env.inFlight().length;
      await this.env.stack.pool.killAll(false);
      try {
        await store.restore(backup);
      } finally {
        await this.env.stack.pool.startAll();
      }
      this.env.restarted();
      const forgot = this.env.accepted() - backedUp;
      if (forgot > 0 && inFlight > 0) this.line(f, 'hit', { parked, inFlight, submissionsForgotten: forgot });
      else this.line(f, 'missed', { parked, inFlight, submissionsForgotten: forgot });
      this.line(f, 'healed', { note: 'workers started on the restored store' });
    });
  }
}

function countLeft(f: VendorFaults, key: keyof VendorFaults): number {
  const v = f[key] as { count?: number } | undefined;
  return typeof v === 'object' && v !== null && typeof v.count === 'number' ? v.count : 0;
}

function withoutKeys(f: VendorFaults, keys: readonly (keyof VendorFaults)[]): VendorFaults {
  const copy = { ...f };
  for (const k of keys) delete copy[k];
  return copy;
}
