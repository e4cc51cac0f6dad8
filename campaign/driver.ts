/**
 * The driver: runs a plan against the stack. It creates the schedule (paused: it only runs what is backfilled or
 * triggered), backfills the year wave by wave (four weeks at a time), triggers runs of the current week, re-backfills
 * a completed slot and resets a weekly run, decides every round as the reviewer and settles parked steps as the
 * operator, fires each fault when its logical trigger comes, and at the end heals everything and waits for the
 * system to settle (with a stuck detector). Every operation is a line in history.jsonl.
 */
import type { UnsafeVariant } from '../testkit/unsafe-stores';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ScheduleOverlapPolicy, WorkflowNotFoundError } from '@temporalio/client';
import { weeklyScheduleOptions } from '../src/cli/schedule-commands';
import { WORKFLOW_TEST_API_KEY } from '../testkit/deps';
import { targetEnv } from '../testkit/reliability';
import { temporalCliPath } from '../testkit/temporal';
import { sleep } from '../testkit/wait';
import { FaultRunner } from './faults';
import { History } from './history';
import { StoreSnapshot, VendorClock } from './observer';
import { Operator, StuckDetector } from './operator';
import type { Plan, PlannedFault } from './plan';
import { Reviewer } from './reviewer';
import { Stack } from './stack';

const execFileAsync = promisify(execFile);
/** A step parked this long lets its wave go on: the operator settles it, at the latest while the campaign settles. */
const PARKED_WAVE_MS = 30_000;

export interface DriverOptions {
  plan: Plan;
  out: string;
  /** A test-only worker variant (testkit/unsafe-stores.ts). */
  unsafe?: UnsafeVariant;
  /** No progress for this long without a parked reason: stuck. */
  stuckMs: number;
  /** The settle phase gives up after this long. */
  settleMs: number;
  log: (line: string) => void;
}

export interface DriverResult {
  stuck: string[];
  noticesMissing: string[];
  parked: { episodeId: string; step: string; reason: string; command: string; settled: boolean }[];
  restartedProductions: string[];
  triggerKeys: string[];
  /** What the checker needs to reach the stack (it is still running). */
  cliEnv: NodeJS.ProcessEnv;
  temporalAddress: string;
  /** Each simulator's billing journal (the checker's ground truth). */
  journals: { flavor: string; file: string }[];
}

export class Driver {
  readonly history: History;
  private stack!: Stack;
  private readonly clock: VendorClock;
  private snapshot!: StoreSnapshot;
  private faults!: FaultRunner;
  private reviewer!: Reviewer;
  private operator!: Operator;
  private restarts = 0;
  private readonly triggerKeys: string[] = [];
  private readonly firedFaults = new Set<string>();
  private loops: NodeJS.Timeout | undefined;
  /** The reviewer's and operator's ticks under way: awaited before the stack's connection closes. */
  private readonly ticks = new Set<Promise<void>>();
  private readonly background: Promise<unknown>[] = [];

  constructor(private readonly o: DriverOptions) {
    this.history = new History(path.join(o.out, 'history.jsonl'));
    this.clock = new VendorClock((n) => this.onAccepted(n));
  }

  async run(): Promise<DriverResult> {
    const { plan, log } = this.o;
    this.stack = await Stack.start({
      out: this.o.out,
      plan,
      unsafe: this.o.unsafe,
      log,
      onVendorRequest: this.clock.observe,
    });
    this.wire();
    await this.createSchedule();
    for (let w = 0; w < plan.waves.length; w++) {
      await this.beforeWave(w);
      await this.backfillWave(w);
      for (const t of plan.triggers.filter((x) => x.afterWave === w)) await this.trigger(t);
      for (const a of plan.operator.filter((x) => x.afterWave === w)) this.background.push(this.operatorAction(a));
      await this.pace(w);
      log(`wave ${w + 1}/${plan.waves.length} under way (${this.clock.accepted()} submissions accepted)`);
    }
    await Promise.all(this.background);
    return this.settle();
  }

  async stop(): Promise<void> {
    await this.stopLoops();
    this.clock.release();
    await this.snapshot?.stop();
    await this.stack?.store.keep(this.o.out).catch((e: unknown) => this.o.log(`keeping the store: ${String(e)}`));
    await this.stack?.stop();
  }

  private wire(): void {
    const { stack } = this;
    this.snapshot = new StoreSnapshot(() => stack.store.target());
    this.snapshot.start();
    this.faults = new FaultRunner({
      stack,
      history: this.history,
      out: this.o.out,
      inFlight: () => this.snapshot.unfinished(),
      awaiting: () => this.snapshot.awaiting(),
      roundsOpened: () => this.reviewer.roundsOpened(),
      accepted: () => this.clock.accepted(),
      untilAccepted: (n) => this.clock.until(n),
      onVendor: (l) => this.clock.on(l),
      restarted: () => void (this.restarts += 1),
      forgot: () => this.track(this.repairAfterLoss()),
      log: this.o.log,
    });
    this.reviewer = new Reviewer({
      client: stack.client,
      history: this.history,
      snapshot: this.snapshot,
      notices: stack.notices,
      plan: this.o.plan,
      triggerKeys: this.triggerKeys,
      restarts: () => this.restarts,
      cliEnv: () => this.cliEnv(),
    });
    this.operator = new Operator({
      client: stack.client,
      history: this.history,
      snapshot: this.snapshot,
      vendors: stack.vendors,
      cliEnv: () => this.cliEnv(),
      findLostJobs: () => this.faults.findLostJobs(),
      serveExpired: () => this.faults.serveExpired(),
    });
    this.loops = setInterval(() => {
      this.track(this.reviewer.tick().catch((e: unknown) => this.o.log(`reviewer: ${String(e)}`)));
      this.track(this.operator.tick().catch((e: unknown) => this.o.log(`operator: ${String(e)}`)));
    }, 1_000);
  }

  /** docs/operations.md, "After a restore or a failover": `episodes repair` once workers run (not in no-reassert). */
  private async repairAfterLoss(): Promise<void> {
    if (this.o.unsafe === 'no-reassert') return;
    await sleep(5_000);
    await this.operator.repair().catch((e: unknown) => this.o.log(`operator: ${String(e)}`));
  }

  private track(tick: Promise<void>): void {
    this.ticks.add(tick);
    void tick.finally(() => this.ticks.delete(tick));
  }

  /**
   * Stops the ticks and waits for those under way: a client call of one still retrying when the connection closes
   * throws from its retry timer and ends the process (seen after a campaign's check, before its report was written).
   */
  private async stopLoops(): Promise<void> {
    clearInterval(this.loops);
    await Promise.all(this.ticks);
  }

  /** The environment of the `episodes` CLI as an operator on this stack has it. */
  cliEnv(): NodeJS.ProcessEnv {
    return {
      ...targetEnv(this.stack.store.target()),
      TEMPORAL_ADDRESS: this.stack.server.address,
      TEMPORAL_NAMESPACE: 'default',
      EPISODES_TASK_QUEUE: this.stack.taskQueue,
      EPISODES_VENDOR_BASE_URL: this.stack.vendors.nativeUrl(),
      EPISODES_VENDOR_API_KEY: WORKFLOW_TEST_API_KEY,
      ...this.stack.vendors.env(),
    };
  }

  private onAccepted(n: number): void {
    for (const f of this.o.plan.faults) {
      if ('accepted' in f.trigger && f.trigger.accepted <= n) this.fire(f);
    }
  }

  private fire(f: PlannedFault): void {
    if (this.firedFaults.has(f.id)) return;
    this.firedFaults.add(f.id);
    this.faults.fire(f);
  }

  private async createSchedule(): Promise<void> {
    const { plan } = this.o;
    const calendars = [
      { dayOfWeek: 'MONDAY' as const, hour: 9 },
      { dayOfWeek: 'THURSDAY' as const, hour: 15 },
      { dayOfWeek: 'SATURDAY' as const, hour: 11 },
    ].slice(0, Math.max(1, new Set(plan.slots.map((s) => s.nominal.slice(11))).size));
    await this.history.op('schedule:create', { scheduleId: plan.scheduleId }, () =>
      this.stack.client.schedule.create(
        weeklyScheduleOptions({
          scheduleId: plan.scheduleId,
          taskQueue: this.stack.taskQueue,
          timezone: 'UTC',
          workflowIdBase: plan.workflowIdBase,
          spec: { calendars: calendars.map((c) => ({ ...c, minute: 0 })), timezone: 'UTC' },
          pausedNote: 'campaign: runs only what is backfilled or triggered',
        }),
      ),
    );
  }

  /** Wave-triggered faults are fired first; an armed worker for the allocations is given time to poll. */
  private async beforeWave(w: number): Promise<void> {
    const faults = this.o.plan.faults.filter((f) => 'wave' in f.trigger && f.trigger.wave === w);
    for (const f of faults) this.fire(f);
    // Only worker-kill arms a worker at a wave; worker-freeze watches the pipeline lock of the base workers. The wave's
    // allocations take a few seconds: the backfill waits until Temporal shows the armed worker polling for activities
    // (seed 4242: started on its log line alone, it got none of the 9 allocations of its wave).
    if (!faults.some((f) => f.kind === 'worker-kill')) return;
    for (let i = 0; i < 600 && !(await this.armedPolls('alloc')); i++) await sleep(100);
  }

  /** Whether the armed worker of `slot` is among the activity pollers of the task queue (Temporal's identity pid@host). */
  private async armedPolls(slot: 'alloc'): Promise<boolean> {
    const pid = this.stack.pool.armedPid(slot);
    if (pid === undefined || !this.stack.pool.armedReady(slot)) return false;
    try {
      const answer = await this.stack.client.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: this.stack.taskQueue, kind: 1 }, // TASK_QUEUE_KIND_NORMAL
        taskQueueType: 2, // TASK_QUEUE_TYPE_ACTIVITY
      });
      return (answer.pollers ?? []).some((p) => p.identity?.startsWith(`${pid}@`) === true);
    } catch {
      return false; // the server restarts: look again
    }
  }

  private async backfillWave(w: number): Promise<void> {
    const { plan } = this.o;
    const wave = plan.waves[w]!;
    const keys = plan.slots.filter((s) => s.wave === w).map((s) => s.key);
    const handle = this.stack.client.schedule.getHandle(plan.scheduleId);
    const ok = await this.history.op('backfill', { wave: w, from: wave.from, to: wave.to, slots: keys.length }, () =>
      handle.backfill({ start: new Date(wave.from), end: new Date(wave.to), overlap: ScheduleOverlapPolicy.ALLOW_ALL }),
    );
    if (!ok.ok) return;
    // One schedule request at a time (docs/reliability.md, known limits): wait for this one's runs to exist.
    await this.untilExist(keys, 180_000);
  }

  private async untilExist(keys: string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const missing = new Set(keys);
    while (missing.size > 0 && Date.now() < deadline) {
      for (const key of [...missing]) {
        try {
          await this.stack.client.workflow.getHandle(key).describe();
          missing.delete(key);
        } catch (e) {
          if (!(e instanceof WorkflowNotFoundError)) break; // the server is restarting: later
        }
      }
      if (missing.size > 0) await sleep(500);
    }
    if (missing.size > 0) this.o.log(`runs not started after ${timeoutMs} ms: ${[...missing].join(', ')}`);
  }

  /** A run of the current week: a new logical run, so the next sequence of this week. */
  private async trigger(t: Plan['triggers'][number]): Promise<void> {
    const { plan } = this.o;
    const before = new Set(await this.scheduledRuns());
    await this.history.op('trigger', { afterWave: t.afterWave }, () =>
      this.stack.client.schedule.getHandle(plan.scheduleId).trigger(ScheduleOverlapPolicy.ALLOW_ALL),
    );
    for (let i = 0; i < 240; i++) {
      const fresh = (await this.scheduledRuns()).filter((k) => !before.has(k) && !plan.slots.some((s) => s.key === k));
      if (fresh[0]) {
        this.triggerKeys.push(fresh[0]);
        return;
      }
      await sleep(500);
    }
    this.o.log('a triggered run did not appear within 2 min');
  }

  private async scheduledRuns(): Promise<string[]> {
    const keys: string[] = [];
    try {
      const query = `TemporalScheduledById = '${this.o.plan.scheduleId}'`;
      for await (const wf of this.stack.client.workflow.list({ query })) keys.push(wf.workflowId);
    } catch {
      // The server is restarting: none seen this time.
    }
    return keys;
  }

  /** Re-backfill a completed slot, or reset a weekly run: either must give the same episode back. */
  private async operatorAction(a: Plan['operator'][number]): Promise<void> {
    const slot = this.o.plan.slots.find((s) => s.key === a.slot)!;
    for (let i = 0; i < 1_200; i++) {
      const e = this.snapshot.byKey(a.slot);
      if (a.kind === 'reset' ? e !== undefined : e?.status === 'completed') break;
      await sleep(500);
    }
    const before = this.snapshot.byKey(a.slot)?.episode_id;
    if (a.kind === 'rebackfill') {
      const at = Date.parse(slot.nominal);
      await this.history.op('rebackfill', { slot: a.slot, episodeBefore: before }, () =>
        this.stack.client.schedule.getHandle(this.o.plan.scheduleId).backfill({
          start: new Date(at - 1_000),
          end: new Date(at + 1_000),
          overlap: ScheduleOverlapPolicy.ALLOW_ALL,
        }),
      );
    } else {
      await this.closed(a.slot);
      await this.history.op('reset', { slot: a.slot, episodeBefore: before }, () =>
        execFileAsync(temporalCliPath(), [
          ...['workflow', 'reset', '--workflow-id', a.slot, '--type', 'FirstWorkflowTask'],
          ...['--reason', 'campaign: operator re-runs the weekly run', '--address', this.stack.server.address],
        ]),
      );
    }
  }

  private async closed(key: string): Promise<void> {
    for (let i = 0; i < 1_200; i++) {
      try {
        const d = await this.stack.client.workflow.getHandle(key).describe();
        if (d.status.name !== 'RUNNING') return;
      } catch {
        // not there yet, or the server restarts
      }
      await sleep(500);
    }
  }

  /**
   * The next wave starts once this one's episodes have all reached review, or wait parked for the operator (who may
   * need the settle phase: a job the vendor lost is found again only then), or after 4 minutes.
   */
  private async pace(w: number): Promise<void> {
    const keys = this.o.plan.slots.filter((s) => s.wave === w).map((s) => s.key);
    const deadline = Date.now() + 240_000;
    const waited = (id: string) => this.snapshot.reachedReview.has(id) || this.snapshot.parkedFor(id) > PARKED_WAVE_MS;
    while (Date.now() < deadline) {
      const ids = keys.map((k) => this.snapshot.byKey(k)?.episode_id);
      if (ids.every((id) => id !== undefined && waited(id))) return;
      await sleep(1_000);
    }
  }

  /**
   * Our workflows Temporal still runs: a production whose store says completed may still be writing its history entry
   * (its worker killed there, the activity waits for its timeout to run again).
   */
  private async runningWorkflows(): Promise<number> {
    const types = "'weeklyEpisodeWorkflow', 'episodeProductionWorkflow', 'paidStepWorkflow'";
    const query = `ExecutionStatus = 'Running' AND WorkflowType IN (${types})`;
    return (await this.stack.client.workflow.count(query)).count;
  }

  /**
   * Heal everything, release every held decision, and wait until every planned run has completed, settling parked
   * steps and failed productions as the operator; an episode without progress for `stuckMs`, not parked, is stuck.
   */
  private async settle(): Promise<DriverResult> {
    const { stack } = this;
    this.o.log(`settling (${this.clock.accepted()} submissions accepted)`);
    // Faults still under way run on while the productions do; once every run is done, nothing more can be hit.
    const expectedKeys = [...this.o.plan.slots.map((s) => s.key), ...this.triggerKeys];
    const allDone = () => expectedKeys.every((k) => this.snapshot.byKey(k)?.status === 'completed');
    // A fault waiting for submissions that no longer come (the system is quiet for a minute) is let go.
    let last = { n: this.clock.accepted(), at: Date.now() };
    while (this.faults.pending.size > 0 && !allDone() && Date.now() - last.at < 60_000) {
      if (this.clock.accepted() !== last.n) last = { n: this.clock.accepted(), at: Date.now() };
      await sleep(500);
    }
    await this.faults.finish();
    this.clock.release();
    await Promise.race([Promise.all(this.faults.pending), sleep(120_000)]);
    // The vendors find lost jobs and serve expired outputs again as the operator would ask them to, so that those
    // faults' healing is counted; then every fault set is cleared.
    this.faults.findLostJobs();
    this.faults.serveExpired();
    stack.vendors.clearAll();
    await stack.receiverUp();
    await stack.pool.ensureRunning();
    this.reviewer.settle();
    // Without re-assertion (the no-reassert proof) the operator has no `episodes repair` either.
    const repair = () => (this.o.unsafe === 'no-reassert' ? Promise.resolve() : this.operator.repair());
    await repair();
    const detector = new StuckDetector(this.o.stuckMs);
    const expected = [...this.o.plan.slots.map((s) => s.key), ...this.triggerKeys];
    const deadline = Date.now() + this.o.settleMs;
    let stuck: string[] = [];
    let lastRepair = Date.now();
    while (Date.now() < deadline) {
      await this.operator.restartFailed().catch((e: unknown) => this.o.log(`operator: ${String(e)}`));
      const done = expected.every((k) => this.snapshot.byKey(k)?.status === 'completed');
      const unfinished = this.snapshot.unfinished();
      stuck = detector.stuck(this.snapshot);
      if (done && unfinished.length === 0 && (await this.runningWorkflows().catch(() => -1)) === 0) break;
      if (stuck.length > 0 && Date.now() - lastRepair > this.o.stuckMs) {
        await repair();
        lastRepair = Date.now();
      }
      if (unfinished.length > 0 && stuck.length === unfinished.length && Date.now() - lastRepair > 10_000) break;
      if (unfinished.length === 0 && !done && Date.now() - lastRepair > this.o.stuckMs) break;
      await sleep(2_000);
    }
    await this.stopLoops();
    await this.snapshot.refresh();
    return {
      stuck,
      noticesMissing: this.reviewer.noticesMissing,
      parked: [...this.operator.parked.values()],
      restartedProductions: this.operator.restarted,
      triggerKeys: [...this.triggerKeys],
      cliEnv: this.cliEnv(),
      temporalAddress: stack.server.address,
      journals: await stack.vendors.writeJournals(),
    };
  }
}
