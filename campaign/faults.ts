/**
 * How each planned fault is injected, how the campaign knows it hit something in flight, and how it is healed. Every
 * step is a line in history.jsonl (injected, hit, healed, missed, failed); the checker counts them per kind.
 *
 * A hit is a fact the campaign checked, never a timer's guess: the armed worker died by SIGKILL at its failpoint; the
 * vendor answered a request the fault changed; a worker was stopped while the store showed it holding a lock
 * (worker-freeze); a completion was reported again to a paid step that still waited for it (vendor-repeat); and so
 * on, per kind below. A fault whose injection throws is `failed`, and fails the campaign.
 */
import { paidStepSchema } from '../src/domain/episode-state';
import { paidStepWorkflowId } from '../src/domain/names';
import { sleep } from '../testkit/wait';
import type { FaultLine, History } from './history';
import type { HeldLock } from './locks';
import type { PlannedFault } from './plan';
import { JOB_DURATION_MS, LOCK_STALE_MS, type Stack } from './stack';
import { PostgresStoreHost } from './store-host';
import type { AdapterName, VendorEvent } from './vendors';
import { isStopped, type ArmedSlot } from './workers';
import type { WorkerProcess } from '../testkit/reliability';

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
  onVendor(listener: (entry: VendorEvent) => void): () => void;
  /** A restart happened (late decisions wait for one). */
  restarted(): void;
  /** The store forgot writes (a restore, a failover) and workers run again: the runbook's `episodes repair` is due. */
  forgot(): void;
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
  /** One worker frozen at a time, one completion repeated at a time. */
  private readonly freezes = new Mutex();
  private readonly repeats = new Mutex();
  /** One webhook fault at a time: two would pick the same next job (its simulator gives it only one). */
  private readonly webhookFaults = new Mutex();
  private readonly lost: PlannedFault[] = [];
  private readonly expired: PlannedFault[] = [];
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
        return void (await this.armed(f, f.failpoint!));
      case 'worker-freeze':
        return this.freeze(f);
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
        return this.vendorFault(f, { fail5xx: outage(f) }, (e) => e.status === 503);
      case 'vendor-gateway-5xx':
        return targetOf(f) === 'fal'
          ? this.vendorFault(f, { gateway5xxAfterQueue: { count: 1 } }, (e) => e.accepted && e.status === 504)
          : this.vendorFault(f, { fail5xx: { count: 1, created: true } }, (e) => e.accepted && e.status === 502);
      case 'vendor-expired':
        return this.vendorExpired(f);
      case 'vendor-metered':
        return this.vendorMetered(f);
      case 'webhook-twice':
      case 'webhook-late':
      case 'webhook-never':
        return this.webhookFaults.run(() => this.vendorWebhook(f));
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
   * One armed worker per slot at a time: started with `failpoint` (`point=kill@n`), it either dies there by SIGKILL
   * (the hit) or is retired as missed after ARMED_PATIENCE more accepted submissions. Resolves with whether it hit.
   */
  private armed(f: PlannedFault, failpoint: string, { onArmed }: { onArmed?: () => void } = {}): Promise<boolean> {
    const slot: ArmedSlot = 'wave' in f.trigger ? 'alloc' : f.kind.startsWith('vendor-') ? 'vendor' : 'main';
    return this.armedQueues[slot].run(async () => {
      const { pool } = this.env.stack;
      let ended!: (outcome: 'hit' | 'exit') => void;
      const done = new Promise<'hit' | 'exit'>((resolve) => (ended = resolve));
      this.line(f, 'injected', { failpoint });
      const w = await this.processes.run(() =>
        pool.arm(slot, failpoint, (how) => ended(how.signal === 'SIGKILL' ? 'hit' : 'exit')),
      );
      onArmed?.();
      const patience = this.env.untilAccepted(this.env.accepted() + ARMED_PATIENCE).then(() => 'timeout' as const);
      const outcome = await Promise.race([done, patience, this.finishing.then(() => 'timeout' as const)]);
      if (outcome !== 'hit') {
        this.line(f, 'missed', { failpoint, note: outcome === 'exit' ? 'exited otherwise' : 'failpoint not reached' });
        await this.processes.run(() => pool.retireArmed(slot));
        return false;
      }
      this.line(f, 'hit', { failpoint, worker: w.name });
      this.line(f, 'healed', { note: 'the base workers carry on; Temporal retries elsewhere' });
      return true;
    });
  }

  /** Resolves once ARMED_PATIENCE more submissions are accepted, or the campaign ends: a fault waiting gives up. */
  private patience(): Promise<void> {
    return Promise.race([this.env.untilAccepted(this.env.accepted() + ARMED_PATIENCE), this.finishing]);
  }

  // ---- a worker frozen holding a lock ----

  /**
   * worker-freeze: the store's locks are watched (campaign/locks.ts) until a base worker holds one (the pipeline lock
   * for a fault planned at a wave's allocations; any lock otherwise); that worker is stopped (SIGSTOP), and it is a
   * hit only if, once stopped, the lock is still its own. Frozen past the lock's stale time (others take the lock
   * over meanwhile), then resumed: its stale writes must be refused. Missed if no worker is seen holding a lock
   * within ARMED_PATIENCE submissions. A fault `atStagedCommit` (the no-fence proof's) freezes only a holder seen at an
   * allocation's commit point (its week index staged, campaign/locks.ts), before and once stopped.
   */
  private freeze(f: PlannedFault): Promise<void> {
    const wanted = 'wave' in f.trigger ? 'pipeline' : undefined;
    // Aimed at a commit point, no other process fault (a SIGKILL of all workers) may end the frozen worker first.
    const alone = <T>(body: () => Promise<T>) => (f.atStagedCommit ? this.processes.run(body) : body());
    return this.freezes.run(() =>
      alone(async () => {
        const { pool } = this.env.stack;
        const reader = this.env.stack.store.locks();
        this.line(f, 'injected', { watching: wanted ?? 'any lock' });
        let over = false;
        void this.patience().then(() => (over = true));
        let tries = 0;
        try {
          while (!over) {
            const seen = (await reader.held()).filter(
              (h) =>
                (wanted === undefined || h.lock === wanted) && (!f.atStagedCommit || reader.stagedCommit?.(h) === true),
            );
            const holder = seen.map((h) => ({ h, w: pool.baseByPid(h.pid) })).find((x) => x.w !== undefined);
            if (!holder?.w) {
              await sleep(10);
              continue;
            }
            const { h, w } = holder;
            tries += 1;
            w.child.kill('SIGSTOP');
            for (let i = 0; i < 200 && w.alive() && !isStopped(w); i++) await sleep(5);
            const still = isStopped(w) && (await reader.held()).some((x) => x.lock === h.lock && x.pid === h.pid);
            const staged = reader.stagedCommit?.(h) === true;
            if (!still || (f.atStagedCommit && !staged)) {
              w.child.kill('SIGCONT'); // it let the lock go before it stopped: not a hit, look again
              continue;
            }
            this.line(f, 'hit', {
              lock: h.lock,
              pid: h.pid,
              worker: w.name,
              tries,
              staged,
              note: 'stopped holding the lock',
            });
            const frozenMs = LOCK_STALE_MS * 2 + 1_000;
            await sleep(frozenMs);
            const after = (await reader.held()).filter((x) => x.lock === h.lock);
            w.child.kill('SIGCONT');
            this.env.restarted();
            // Aimed: the resumed worker gets to finish or drop its staged commit before another fault may end it.
            let resumedMs = 0;
            for (; f.atStagedCommit && resumedMs < 5_000 && reader.stagedCommit?.(h) === true; resumedMs += 10) {
              await sleep(10);
            }
            const lockAfter = describeHolders(after, h.pid);
            return this.line(f, 'healed', {
              resumed: true,
              frozenMs,
              lockAfter,
              ...(f.atStagedCommit ? { resumedMs } : {}),
            });
          }
          this.line(f, 'missed', { tries, note: 'no base worker was seen holding a lock' });
        } finally {
          await reader.close();
        }
      }),
    );
  }

  // ---- the vendor ----

  /**
   * Sets `faults` on the fault's target simulator until `isHit` sees a request of that vendor it affected and the
   * counts are used up; then clears them.
   */
  private async vendorFault(
    f: PlannedFault,
    faults: Record<string, unknown>,
    isHit: (e: VendorEvent) => boolean,
  ): Promise<void> {
    const { vendors } = this.env.stack;
    const target = targetOf(f);
    const hit = this.waitForVendor((e) => e.adapter === target && isHit(e));
    this.line(f, 'injected', { target, faults });
    vendors.patch(target, faults);
    const entry = await hit.promise;
    this.line(f, 'hit', { method: entry.method, path: entry.path, status: entry.status, job: entry.jobId });
    while (Object.keys(faults).some((k) => vendors.countLeft(target, k) > 0)) await sleep(200);
    vendors.clear(target, Object.keys(faults));
    this.line(f, 'healed', {});
  }

  private waitForVendor(match: (e: VendorEvent) => boolean): { promise: Promise<VendorEvent>; cancel(): void } {
    let off: () => void = () => undefined;
    const promise = new Promise<VendorEvent>((resolve) => {
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
    const target = targetOf(f);
    const { vendors } = this.env.stack;
    const ignoreKeys = f.keysIgnored === true && target === 'native' && !this.keysWindowOpen;
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
      const ignore = () => ignoreKeys && vendors.patch('native', { noIdempotency: true });
      let hit: boolean;
      // Keys are ignored from the moment the fault can fire: the armed worker polls, or the drop is set.
      if (f.failpoint) hit = await this.armed(f, f.failpoint, { onArmed: ignore });
      else {
        ignore();
        const dropped = this.waitForVendor((e) => e.dropped && e.adapter === target);
        this.line(f, 'injected', { target, ignoreKeys });
        vendors.patch(target, { acceptThenDrop: { count: 1 } });
        const e = await dropped.promise;
        this.line(f, 'hit', { key: e.idempotencyKey, job: e.jobId });
        hit = true;
      }
      afterHit = true;
      if (hit && ignoreKeys) await Promise.race([retry, this.env.untilAccepted(this.env.accepted() + ARMED_PATIENCE)]);
    } finally {
      off();
      vendors.clear(target, ['acceptThenDrop']);
      if (ignoreKeys) vendors.clear('native', ['noIdempotency']);
      if (ignoreKeys) this.keysWindowOpen = false;
    }
    if (!f.failpoint) this.line(f, 'healed', { keysIgnoredUntilRetry: ignoreKeys });
  }

  /** The next accepted job is lost; it is found again when the operator asks about it (see the operator). */
  private vendorLose(f: PlannedFault): Promise<void> {
    const target = targetOf(f);
    const { vendors } = this.env.stack;
    // Replicate's documented loss is a failed prediction (billed, then the step fails); `vanished` is the lost job.
    const faults =
      target === 'replicate'
        ? { losePredictions: { count: 1 + vendors.countLeft(target, 'losePredictions'), mode: 'vanished' } }
        : { loseJobs: { count: 1 + vendors.countLeft(target, 'loseJobs') } };
    const note = 'a poll got 404 for a job the vendor accepted';
    return this.parkingFault(f, faults, (e) => e.note === 'lost', note, this.lost);
  }

  /** The operator asked the vendor about a lost job: the vendor finds its lost jobs again. */
  findLostJobs(): void {
    this.env.stack.vendors.findLost();
    for (const f of this.lost.splice(0)) this.line(f, 'healed', { note: "found again at the operator's request" });
  }

  /**
   * The next job's output answers 404 before anyone fetched it (for as long as the fault set keeps it): a hit when a
   * paid step's download got that 404; the step parks, never sends again. Healed when the operator asks the vendor
   * to serve it again (`serveExpired`) and settles the step with its own job.
   */
  private vendorExpired(f: PlannedFault): Promise<void> {
    const target = targetOf(f);
    const key = target === 'fal' ? 'expireFiles' : 'expireOutputs';
    const faults = { [key]: { count: 1 + this.env.stack.vendors.countLeft(target, key) } };
    const note = "a step's download of a finished job's output got 404";
    return this.parkingFault(f, faults, (e) => e.download && e.status === 404, note, this.expired);
  }

  /** The operator asked the vendor for outputs it deleted early: it serves them again. */
  serveExpired(): void {
    this.env.stack.vendors.serveExpired();
    for (const f of this.expired.splice(0)) this.line(f, 'healed', { note: "served again at the operator's request" });
  }

  /** A fault whose hit parks its step: healed once the operator asks the vendor (the fault waits in `parked`). */
  private async parkingFault(
    f: PlannedFault,
    faults: Record<string, unknown>,
    isHit: (e: VendorEvent) => boolean,
    note: string,
    parked: PlannedFault[],
  ): Promise<void> {
    const target = targetOf(f);
    const hit = this.waitForVendor((e) => e.adapter === target && isHit(e));
    this.line(f, 'injected', { target, faults });
    this.env.stack.vendors.patch(target, faults);
    const e = await hit.promise;
    this.line(f, 'hit', { job: e.jobId, note });
    parked.push(f);
  }

  /** native: the job takes `amount` ms longer; fal: the platform retries its runner (new attempts, billed once). */
  private async vendorSlow(f: PlannedFault): Promise<void> {
    const target = targetOf(f);
    const { vendors } = this.env.stack;
    const accepted = this.waitForVendor((e) => e.adapter === target && e.accepted && !e.dropped);
    const ms = f.amount ?? 8_000;
    const faults =
      target === 'fal' ? { runnerRetries: { count: 1, attempts: 2 + (ms % 8) } } : { slowJobs: { count: 1, ms } };
    this.line(f, 'injected', { target, faults });
    vendors.patch(target, faults);
    const job = (await accepted.promise).jobId!;
    const acceptedAt = Date.now();
    const polled = this.waitForVendor(
      (e) =>
        e.adapter === target &&
        e.jobId === job &&
        e.method === 'GET' &&
        !e.download &&
        Date.now() - acceptedAt > JOB_DURATION_MS,
    );
    await polled.promise;
    this.line(f, 'hit', { job, note: 'polled while slower than usual' });
    vendors.clear(target, Object.keys(faults));
    this.line(f, 'healed', {});
  }

  /**
   * The next job is billed other than the estimate (fal: `amount` output units instead of 5; Replicate: predict_time
   * × amount / 10): a hit once the vendor's journal shows that charge. The checker's ledger − billing then says
   * whether the ledger recorded the billed amount.
   */
  private async vendorMetered(f: PlannedFault): Promise<void> {
    const target = targetOf(f);
    const { vendors } = this.env.stack;
    const amount = f.amount ?? 13;
    const faults =
      target === 'fal'
        ? { meteredUnits: { count: 1, units: amount } }
        : { meteredDrift: { count: 1, factor: amount / 10 } };
    const from = vendors.billedCount(target);
    this.line(f, 'injected', { target, faults });
    vendors.patch(target, faults);
    let over = false;
    void this.patience().then(() => (over = true));
    while (!over) {
      const charge = vendors.meteredCharges(target, from)[0];
      if (charge) {
        this.line(f, 'hit', { ...charge, note: 'billed other than the estimate' });
        vendors.clear(target, Object.keys(faults));
        return this.line(f, 'healed', {});
      }
      await sleep(200);
    }
    vendors.clear(target, Object.keys(faults));
    this.line(f, 'missed', { note: 'no job billed with the changed amount' });
  }

  /**
   * Webhook faults on the next job of the target vendor (the workers take callbacks, each on its own port):
   * - twice: a hit once two deliveries of its completion were answered by a worker (the second changes nothing);
   * - late: a hit once the late delivery was answered by a worker (before the step fetched the output by polling,
   *   or after it: the detail says which);
   * - never: a hit once the step fetched the output (polling did the work) and no delivery was ever made.
   */
  private async vendorWebhook(f: PlannedFault): Promise<void> {
    const target = targetOf(f);
    const { vendors } = this.env.stack;
    const faults =
      f.kind === 'webhook-twice'
        ? { webhookTwice: { count: 1 } }
        : f.kind === 'webhook-late'
          ? { webhookLate: { count: 1, ms: f.amount ?? 4_000 } }
          : { webhookNever: { count: 1 } };
    const accepted = this.waitForVendor((e) => e.adapter === target && e.accepted);
    let downloadedAt: number | undefined;
    let job: string | undefined;
    const off = this.env.onVendor((e) => {
      if (job !== undefined && e.adapter === target && e.jobId === job && e.download && e.status === 200)
        downloadedAt ??= Date.now();
    });
    this.line(f, 'injected', { target, faults });
    vendors.patch(target, faults);
    try {
      const e = await Promise.race([accepted.promise, this.patience().then(() => undefined)]);
      accepted.cancel();
      vendors.clear(target, Object.keys(faults));
      if (!e?.jobId) return this.line(f, 'missed', { note: 'no job accepted' });
      job = e.jobId;
      const answered = () => vendors.deliveries(target, job!).filter((d) => d.status !== null && d.status < 300);
      let over = false;
      void Promise.race([sleep(90_000), this.finishing]).then(() => (over = true));
      for (; !over; await sleep(200)) {
        const ok = answered();
        if (f.kind === 'webhook-twice' && ok.length >= 2) {
          return this.hitHealed(f, { job, deliveries: ok.length, note: 'the second delivery changed nothing' });
        }
        if (f.kind === 'webhook-late' && ok.length > 0) {
          const note =
            downloadedAt === undefined
              ? 'delivered late to a worker; the step still waited for it'
              : 'delivered late to a worker, after the step fetched the output by polling';
          return this.hitHealed(f, { job, note });
        }
        if (f.kind === 'webhook-never' && downloadedAt !== undefined && Date.now() - downloadedAt > 2_000) {
          if (vendors.deliveries(target, job).length > 0) return this.line(f, 'missed', { job, note: 'delivered' });
          return this.hitHealed(f, { job, note: 'no delivery; the step fetched the output by polling' });
        }
      }
      this.line(f, 'missed', { job, answered: answered().length, downloaded: downloadedAt !== undefined });
    } finally {
      off();
    }
  }

  private hitHealed(f: PlannedFault, detail: Record<string, unknown>): void {
    this.line(f, 'hit', detail);
    this.line(f, 'healed', {});
  }

  /**
   * vendor-repeat: a paid step's await activity is seen polling its job before the job finished (the vendor's
   * answer); Temporal names the worker running that attempt. The vendor will report that job's completion twice
   * (`repeatCompletion` for it alone: after its first download, `running`, then `succeeded` again), and the worker
   * is killed the moment its download is answered, before it can save anything. The step still waits: its retry
   * polls the same job and is told of the completion a second time, then downloads and charges again, which the
   * pipeline must take as the same completion. A hit once the repeated completion was answered to that step while
   * its await activity was still open (its history shows it completing after that answer).
   */
  private vendorRepeat(f: PlannedFault): Promise<void> {
    return this.repeats.run(async () => {
      this.line(f, 'injected', {});
      let over = false;
      const giveUp = this.patience().then(() => (over = true));
      const tried = new Set<string>();
      while (!over) {
        const polled = this.waitForVendor(
          (e) =>
            e.adapter === 'native' &&
            e.method === 'GET' &&
            e.status === 200 &&
            !!e.jobId &&
            !tried.has(e.jobId) &&
            isWaiting(e.jobStatus),
        );
        const e = await Promise.race([polled.promise, giveUp.then(() => undefined)]);
        polled.cancel();
        if (!e?.jobId) break;
        const jobId = e.jobId;
        tried.add(jobId);
        // Downloaded while its poller was being looked up: too late to repeat this one.
        let early = false;
        const offEarly = this.env.onVendor((x) => (early ||= x.jobId === jobId && isDownload(x)));
        const target = await this.pollerOf(jobId);
        offEarly();
        if (!target || early) continue;
        const outcome = await this.repeatFor(target);
        if (outcome === 'retry') continue;
        if (outcome.hit) {
          this.line(f, 'hit', { ...outcome.detail, note: 'completion reported again while the step still waited' });
          this.line(f, 'healed', {});
        } else this.line(f, 'missed', outcome.detail);
        return;
      }
      this.line(f, 'missed', { tried: tried.size, note: 'no await activity seen polling an unfinished job' });
    });
  }

  /** The base worker running the await activity of `jobId`'s step now, from the vendor's job and Temporal. */
  private async pollerOf(jobId: string): Promise<RepeatTarget | undefined> {
    const { vendors, client, pool } = this.env.stack;
    const charge = vendors.native!.billing().find((c) => c.job_id === jobId);
    const step = paidStepSchema.safeParse(charge?.kind);
    const round = /:r(\d+)$/.exec(charge?.client_ref ?? '')?.[1];
    if (!charge || !step.success || round === undefined) return undefined;
    const workflowId = paidStepWorkflowId(charge.episode_id, step.data, Number(round));
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      const attempt = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'awaitPaidStep');
      const pid = Number(/^(\d+)@/.exec(attempt?.lastWorkerIdentity ?? '')?.[1]);
      const worker = pool.baseByPid(pid);
      return worker ? { jobId, workflowId, worker, attempt: attempt?.attempt ?? 0 } : undefined;
    } catch {
      return undefined; // not found yet, or the server restarts: another job
    }
  }

  /**
   * Repeats `t.jobId`'s completion and kills its poller at its download; then waits for the repeated completion and
   * for the await activity to close. `retry` when the job was downloaded by no one in time (another job, then).
   */
  private async repeatFor(t: RepeatTarget): Promise<'retry' | { hit: boolean; detail: Record<string, unknown> }> {
    const { pool } = this.env.stack;
    const downloaded = this.waitForVendor((e) => e.jobId === t.jobId && isDownload(e));
    const repeated = this.waitForVendor((e) => e.jobId === t.jobId && e.note === 'repeat-completion');
    let killed = false;
    const off = this.env.onVendor((e) => {
      // At once, in the vendor's answer to the download: the worker has not read a byte of it yet.
      if (e.jobId !== t.jobId || !isDownload(e) || killed) return;
      killed = true;
      void pool.killBase(t.worker);
    });
    this.env.stack.vendors.patch('native', { repeatCompletion: { count: 1, jobs: [t.jobId] } });
    try {
      const first = await Promise.race([downloaded.promise, sleep(20_000).then(() => undefined)]);
      if (!first || !killed) return 'retry';
      const detail = { job: t.jobId, workflowId: t.workflowId, killed: t.worker.name };
      // The retry comes after the await activity's heartbeat timeout (30 s).
      const again = await Promise.race([repeated.promise, sleep(180_000).then(() => undefined)]);
      if (!again) return { hit: false, detail: { ...detail, note: 'no poll saw the repeated completion' } };
      // Asked before it was answered; the activity can only have closed after the answer.
      const askedAt = Date.parse(again.at);
      const closedAt = await this.awaitClosedAt(t.workflowId);
      const hit = closedAt !== undefined && closedAt > askedAt;
      const closed = closedAt === undefined ? null : new Date(closedAt).toISOString();
      return { hit, detail: { ...detail, attempt: t.attempt, repeatAskedAt: again.at, awaitClosedAt: closed } };
    } finally {
      off();
      downloaded.cancel();
      repeated.cancel();
      this.env.stack.vendors.clear('native', ['repeatCompletion']);
    }
  }

  /** When the paid step's last awaitPaidStep activity completed (ms), from its history; undefined if not in 3 min. */
  private async awaitClosedAt(workflowId: string): Promise<number | undefined> {
    const handle = this.env.stack.client.workflow.getHandle(workflowId);
    for (let i = 0; i < 360; i++) {
      try {
        const d = await handle.describe();
        if (!d.raw.pendingActivities?.some((a) => a.activityType?.name === 'awaitPaidStep')) {
          const events = (await handle.fetchHistory()).events ?? [];
          const scheduled = new Set(
            events
              .filter((ev) => ev.activityTaskScheduledEventAttributes?.activityType?.name === 'awaitPaidStep')
              .map((ev) => String(ev.eventId)),
          );
          const completed = events.filter((ev) =>
            scheduled.has(String(ev.activityTaskCompletedEventAttributes?.scheduledEventId ?? '')),
          );
          const at = completed.at(-1)?.eventTime;
          return at ? Number(at.seconds ?? 0) * 1_000 + Math.floor((at.nanos ?? 0) / 1e6) : undefined;
        }
      } catch {
        // the server restarts: look again
      }
      await sleep(500);
    }
    return undefined;
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
      this.env.forgot();
      if (lost > 0) this.line(f, 'hit', { walBytesLost: lost });
      else this.line(f, 'missed', { walBytesLost: 0 });
      this.line(f, 'healed', { note: 'workers repointed at the promoted standby' });
    });
  }

  private async restore(f: PlannedFault): Promise<void> {
    const store = this.env.stack.store;
    // Not while a process fault runs: pg_basebackup streams WAL from the primary, and a PostgreSQL restart (seed 4242,
    // --vendor mixed) cut that stream and failed the backup.
    const backup = await this.processes.run(() => store.backup(f.id));
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
      this.env.forgot();
      const forgot = this.env.accepted() - backedUp;
      if (forgot > 0 && inFlight > 0) this.line(f, 'hit', { parked, inFlight, submissionsForgotten: forgot });
      else this.line(f, 'missed', { parked, inFlight, submissionsForgotten: forgot });
      this.line(f, 'healed', { note: 'workers started on the restored store' });
    });
  }
}

interface RepeatTarget {
  jobId: string;
  /** The paid step's workflow. */
  workflowId: string;
  /** The worker running its await activity. */
  worker: WorkerProcess;
  attempt: number;
}

function isDownload(e: VendorEvent): boolean {
  return e.download;
}

/**
 * The 503s of an outage, before anything is queued. fal: at most 3, since its client cannot tell them from a gateway
 * 5xx after queueing and its listing may not show a queued request yet, so each parks its step until the operator
 * looks (docs/vendors.md, fal's profile); Replicate: nothing created.
 */
function outage(f: PlannedFault): Record<string, unknown> {
  const count = f.amount ?? 20;
  const target = targetOf(f);
  if (target === 'fal') return { count: 1 + (count % 3) };
  return target === 'replicate' ? { count, created: false } : { count };
}

/** The simulator a vendor fault is injected into (plans before `--vendor` name none: the native one). */
function targetOf(f: PlannedFault): AdapterName {
  return f.target ?? 'native';
}

/** A job's status as a poll saw it: not finished yet, so the step polling it still waits. */
function isWaiting(status: VendorEvent['jobStatus']): boolean {
  return status === 'queued' || status === 'running';
}

/** Who holds `lock` now, after the frozen holder `pid`'s lease ran out. */
function describeHolders(after: readonly HeldLock[], pid: number): string {
  if (after.length === 0) return 'free';
  return after.map((x) => (x.pid === pid ? 'still the frozen worker' : `taken over by pid ${x.pid}`)).join(', ');
}
