/**
 * The campaign's worker processes (`node dist/src/worker.js` as deployed, through the tests' startWorkerProcess): N
 * base workers, each replaced when it dies, plus at most one armed worker per slot (`alloc` for the allocations of a
 * wave, `vendor` for the vendor faults that need a worker's death, `main` for the rest), started with a failpoint (`point=kill@n` or `point=stop@n`) so that a fault fires at a
 * logical moment of the protocol.
 */
import type { UnsafeVariant } from '../testkit/unsafe-stores';
import { readFileSync } from 'node:fs';
import { freePort } from '../testkit/dev-server';
import { startWorkerProcess, type WorkerProcess } from '../testkit/reliability';
import type { StoreHost } from './store-host';

export interface WorkerSettings {
  address: () => string;
  taskQueue: string;
  vendorUrl: string;
  /** The vendor assignment and each adapter's endpoint and key (campaign/vendors.ts). */
  vendorEnv: Record<string, string>;
  /**
   * Whether workers take vendor callbacks: each worker slot (base i, each armed slot) has its own port, kept by the
   * worker that replaces it, so that a webhook meant for a dead worker reaches its successor on redelivery.
   */
  callbacks: boolean;
  webhookUrl: string;
  store: StoreHost;
  /** EPISODES_LOCK_STALE_MS: short, so that a frozen holder's lease runs out within the campaign. */
  lockStaleMs: number;
  /** A test-only worker variant (testkit/unsafe-stores.ts), to show that the checker bites. */
  unsafe?: UnsafeVariant;
}

export type ArmedSlot = 'alloc' | 'main' | 'vendor';
/** How an armed worker ended, when the pool did not end it. */
export type ArmedExit = (how: { signal: NodeJS.Signals | null; code: number | null }) => void;

export class WorkerPool {
  private readonly base: (WorkerProcess | undefined)[];
  private readonly armedWorkers = new Map<ArmedSlot, WorkerProcess>();
  /** Each armed slot's failpoint, until its fault has its outcome: a worker the pool stopped is armed again. */
  private readonly armedSpecs = new Map<ArmedSlot, { failpoint: string; onExit: ArmedExit }>();
  private incarnation = 0;
  /** Workers this pool stopped or killed on purpose: their exit is not a fault's hit. */
  private readonly expected = new WeakSet<WorkerProcess>();
  private paused = false;
  private readonly ports = new Map<string, number>();

  constructor(
    private readonly settings: WorkerSettings,
    size: number,
    private readonly log: (line: string) => void,
  ) {
    this.base = Array.from({ length: size }, () => undefined);
  }

  /** With callbacks, a free port for each worker slot, kept for the campaign. */
  async reservePorts(): Promise<void> {
    if (!this.settings.callbacks) return;
    const slots = [...this.base.map((_, i) => `w${i}`), 'alloc', 'main', 'vendor'];
    for (const slot of slots) this.ports.set(slot, await freePort());
  }

  /** Set once the receiver listens (its port is fixed from then on). */
  setWebhookUrl(url: string): void {
    this.settings.webhookUrl = url;
  }

  /**
   * Every base worker, and every armed worker the pool stopped (killAll, stopAll) before its fault had its outcome,
   * again with its failpoint: a kill of all workers or a failover must not take an armed fault's chance away.
   */
  async startAll(): Promise<void> {
    this.paused = false;
    const rearm = [...this.armedSpecs.keys()].filter((slot) => this.armedWorkers.get(slot)?.alive() !== true);
    await Promise.all([...this.base.map((_, i) => this.startBase(i)), ...rearm.map((slot) => this.startArmed(slot))]);
  }

  /** The armed worker has started (it logs its task queue just before it starts polling). */
  armedReady(slot: ArmedSlot): boolean {
    const w = this.armedWorkers.get(slot);
    return w?.alive() === true && w.output().includes('worker: task queue');
  }

  /** The process id of the armed worker of `slot`, if one is alive. */
  armedPid(slot: ArmedSlot): number | undefined {
    const w = this.armedWorkers.get(slot);
    return w?.alive() === true ? w.child.pid : undefined;
  }

  /** Every base worker running (after the campaign's last fault). */
  async ensureRunning(): Promise<void> {
    this.paused = false;
    await Promise.all(this.base.map((w, i) => (w?.alive() ? Promise.resolve() : this.startBase(i))));
  }

  /** Every worker process alive now (base and armed). */
  all(): WorkerProcess[] {
    return [...this.base, ...this.armedWorkers.values()].filter(
      (w): w is WorkerProcess => w !== undefined && w.alive(),
    );
  }

  /** SIGKILL every worker at once; base workers are started again right away unless `restart` is false. */
  async killAll(restart = true): Promise<number> {
    const victims = this.all();
    for (const w of victims) this.expected.add(w);
    this.paused = !restart;
    for (const w of victims) w.child.kill('SIGKILL');
    await Promise.all(victims.map((w) => w.exited));
    this.armedWorkers.clear();
    if (restart) await this.startAll();
    return victims.length;
  }

  /** SIGTERM every worker (they drain; a frozen one is resumed to), and keep them stopped until `startAll`. */
  async stopAll(): Promise<void> {
    this.paused = true;
    const victims = this.all();
    for (const w of victims) this.expected.add(w);
    await Promise.all(
      victims.map(async (w) => {
        const stopped = w.stop();
        if (isStopped(w)) w.child.kill('SIGCONT');
        await stopped;
      }),
    );
    this.armedWorkers.clear();
  }

  /** The base worker (not an armed one) of process id `pid`, if it is alive. */
  baseByPid(pid: number): WorkerProcess | undefined {
    return this.base.find((w) => w?.alive() === true && w.child.pid === pid);
  }

  /** SIGKILL one base worker (a fault's doing, not a death to report); another takes its place. */
  async killBase(w: WorkerProcess): Promise<void> {
    const i = this.base.indexOf(w);
    if (i < 0 || !w.alive()) return;
    this.expected.add(w);
    w.child.kill('SIGKILL');
    await w.exited;
    if (!this.paused && this.base[i] === w) await this.startBase(i);
  }

  /** Repoints every worker at the store's current place: stopped, then started with the new environment. */
  async restartAll(): Promise<void> {
    await this.stopAll();
    await this.startAll();
  }

  /**
   * Starts the armed worker of `slot` with `failpoint` (retiring that slot's previous one, if any); resolves with it
   * once it polls. `onExit` learns how it ended, unless the pool ended it.
   */
  async arm(slot: ArmedSlot, failpoint: string, onExit: ArmedExit): Promise<WorkerProcess> {
    await this.retireArmed(slot);
    this.armedSpecs.set(slot, { failpoint, onExit });
    return this.startArmed(slot);
  }

  private async startArmed(slot: ArmedSlot): Promise<WorkerProcess> {
    const { failpoint, onExit } = this.armedSpecs.get(slot)!;
    const w = this.spawn(`armed-${slot}-${++this.incarnation}`, slot, failpoint);
    this.armedWorkers.set(slot, w);
    void w.exited.then((how) => {
      if (this.armedWorkers.get(slot) === w) this.armedWorkers.delete(slot);
      if (this.expected.has(w)) return;
      if (this.armedSpecs.get(slot)?.onExit === onExit) this.armedSpecs.delete(slot); // its outcome: never again
      onExit(how);
    });
    await w.waitUntilPolling().catch((e: unknown) => this.log(`armed worker: ${String(e)}`));
    return w;
  }

  /** Stops the armed worker of `slot` (all slots when none is given), resuming it first if it is frozen. */
  async retireArmed(slot?: ArmedSlot): Promise<void> {
    const slots = slot ? [slot] : [...new Set([...this.armedWorkers.keys(), ...this.armedSpecs.keys()])];
    await Promise.all(
      slots.map(async (k) => {
        const w = this.armedWorkers.get(k);
        this.armedSpecs.delete(k);
        this.armedWorkers.delete(k);
        if (!w?.alive()) return;
        this.expected.add(w);
        if (isStopped(w)) w.child.kill('SIGCONT');
        await w.stop();
      }),
    );
  }

  private async startBase(i: number): Promise<void> {
    const w = this.spawn(`w${i}-${++this.incarnation}`, `w${i}`);
    this.base[i] = w;
    void w.exited.then((how) => {
      if (this.expected.has(w) || this.paused || this.base[i] !== w) return;
      // A base worker died by itself (not a planned fault): say so and replace it.
      this.log(`worker ${w.name} exited (${how.code ?? how.signal}); starting another\n${w.output().slice(-2000)}`);
      void this.startBase(i);
    });
    await w.waitUntilPolling().catch((e: unknown) => this.log(`worker ${w.name}: ${String(e)}`));
  }

  private spawn(name: string, slot: string, failpoints?: string): WorkerProcess {
    const s = this.settings;
    const port = this.ports.get(slot);
    const callbacks = port
      ? { EPISODES_CALLBACK_LISTEN: `127.0.0.1:${port}`, EPISODES_CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}` }
      : {};
    const target = s.store.target();
    // Without the pipeline lock, a slow disk between decision and commit (300 ms) lets allocations of a week overlap.
    if (s.unsafe === 'no-lock') failpoints = [failpoints, 'allocation.decided=delay:300'].filter(Boolean).join(',');
    // Without the fence, a slow disk after the key file's commit (300 ms) is where a frozen holder has its commit
    // point under way (worker-freeze `atStagedCommit`); not for an armed worker that is to die there.
    if (s.unsafe === 'no-fence' && !failpoints?.includes('allocation.key-written')) {
      failpoints = [failpoints, 'allocation.key-written=delay:300'].filter(Boolean).join(',');
    }
    return startWorkerProcess(name, {
      address: s.address(),
      taskQueue: s.taskQueue,
      dataDir: target.kind === 'file' ? target.dataDir : target.mediaDir,
      store: target.kind === 'postgres' ? target : undefined,
      vendorUrl: s.vendorUrl,
      failpoints,
      lockStaleMs: s.lockStaleMs,
      extraEnv: { ...s.vendorEnv, ...callbacks, EPISODES_REVIEW_WEBHOOK_URL: s.webhookUrl },
      unsafe: s.unsafe,
    });
  }
}

/** Whether the process is stopped (SIGSTOP): state `T` in /proc/<pid>/stat. */
export function isStopped(w: WorkerProcess): boolean {
  try {
    const stat = readFileSync(`/proc/${w.child.pid}/stat`, 'utf8');
    return /^\d+ \(.*\) T /.test(stat);
  } catch {
    return false;
  }
}
