/**
 * The operator: settles what the system parks, with the commands it names. A step parked for a few seconds (`PARKED`
 * in `episodes status`; a vendor's webhook may settle it first) is looked up by its key or correlation value in the
 * vendor's billing and, for a vendor without keys, its listing (fal's, Replicate's), and settled with `episodes
 * reconcile` (`--remote-job J` with the job found, as the adapter names it: fal's `<ref>@<request_id>`;
 * `--not-submitted` when none is); a job the vendor lost is first found again, an output it deleted early served
 * again (the vendor's support, in real life); a reconcile that could not reach Temporal is run again. A production that failed is started again with `episodes generate`; after a
 * restore, `episodes repair` runs when this build has it. At the end it is also the stuck detector.
 */
import type { Client } from '@temporalio/client';
import { runCli } from '../testkit/processes';
import type { History } from './history';
import type { StoreSnapshot } from './observer';
import type { CampaignVendors } from './vendors';

/** A parked step is left this long before the operator acts: a webhook may settle it, a listing catch up. */
const PARK_GRACE_MS = 5_000;

export interface OperatorEnv {
  client: Client;
  history: History;
  snapshot: StoreSnapshot;
  vendors: CampaignVendors;
  cliEnv(): NodeJS.ProcessEnv;
  /** The vendor found its lost jobs again (the operator asked). */
  findLostJobs(): void;
  /** The vendor serves the outputs it deleted early again (the operator asked). */
  serveExpired(): void;
}

/** What `episodes status` prints for a parked step. */
const PARKED_LINE = /^\s*PARKED\s+(\S+): (.*); settle it with `([^`]+)` \(vendor key (\S+)\)$/;

export interface ParkedStep {
  episodeId: string;
  step: string;
  reason: string;
  command: string;
  key: string;
}

export class Operator {
  private readonly lastLook = new Map<string, number>();
  private readonly firstSeen = new Map<string, number>();
  private readonly generated = new Map<string, number>();
  private running = false;
  /** Every parked step seen, with its reason and command (the report lists them). */
  readonly parked = new Map<string, ParkedStep & { settled: boolean }>();
  readonly restarted: string[] = [];
  private repairAvailable: boolean | undefined;
  /** Reconciles whose signal did not reach Temporal (it was down): run again, as an operator would. */
  private readonly unsignalled = new Map<string, ParkedStep & { settle: string[] }>();

  constructor(private readonly env: OperatorEnv) {}

  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (const [at, p] of this.unsignalled) {
        this.unsignalled.delete(at);
        await this.runReconcile(p, p.settle);
      }
      const parked = this.env.snapshot.episodes.filter((e) =>
        Object.values(e.steps).some((s) => s.status === 'needs_reconciliation'),
      );
      for (const e of parked) {
        if (Date.now() - (this.lastLook.get(e.episode_id) ?? 0) < 10_000) continue;
        this.lastLook.set(e.episode_id, Date.now());
        await this.settleParked(e.episode_id);
      }
    } finally {
      this.running = false;
    }
  }

  /** Reads the parked lines the way an operator does (`episodes status`), and runs the command each names. */
  private async settleParked(episodeId: string): Promise<void> {
    const status = await runCli(['status', episodeId], this.env.cliEnv());
    for (const line of status.stdout.split('\n')) {
      const m = PARKED_LINE.exec(line);
      if (!m) continue;
      const p: ParkedStep = { episodeId, step: m[1]!, reason: m[2]!, command: m[3]!, key: m[4]! };
      const id = `${episodeId}:${p.step}:${p.reason}`;
      this.parked.set(`${episodeId}:${p.step}`, { ...p, settled: false });
      if (!this.firstSeen.has(id)) this.firstSeen.set(id, Date.now());
      if (Date.now() - this.firstSeen.get(id)! < PARK_GRACE_MS) continue;
      await this.reconcile(p);
    }
  }

  private async reconcile(p: ParkedStep): Promise<void> {
    // A lost job parks as "no longer knows job" (native poll 404) or, found billed by the lookup, "cannot find its job".
    if (/no longer knows job|cannot find its job/.test(p.reason)) this.env.findLostJobs();
    if (/no longer serves the output/.test(p.reason)) this.env.serveExpired();
    let jobs: string[];
    try {
      jobs = await this.env.vendors.jobsFor(p.key, this.env.cliEnv());
    } catch (e) {
      // The vendor did not answer the lookup: look again at the next tick, never guess "not submitted".
      await this.env.history.op('lookup', { ...p }, () =>
        Promise.reject(e instanceof Error ? e : new Error(String(e))),
      );
      return;
    }
    // One job for the key: that is the job. None: never accepted. Several: paid twice; the first is the job.
    await this.runReconcile(p, jobs[0] ? ['--remote-job', jobs[0]] : ['--not-submitted']);
  }

  private async runReconcile(p: ParkedStep, settle: string[]): Promise<void> {
    const r = await this.env.history.op('reconcile', { ...p, settle }, async () => {
      const out = await runCli(
        ['reconcile', p.episodeId, '--step', p.step, ...settle, '--by', 'operator'],
        this.env.cliEnv(),
      );
      if (out.code !== 0) throw new Error(`exit ${out.code}: ${out.stderr.trim()}`);
    });
    if (r.ok) this.parked.get(`${p.episodeId}:${p.step}`)!.settled = true;
    // The job its billing names, unknown to its API: the vendor lost it, whatever the parked reason said. Ask the
    // vendor (its support, in real life) to find it again; the next tick settles the step with it.
    else if (/getJob: HTTP 404/.test(r.error)) this.env.findLostJobs();
    else if (/ConnectionFailed/.test(r.error)) this.unsignalled.set(`${p.episodeId}:${p.step}`, { ...p, settle });
  }

  /** Productions that failed (their episode not completed): `episodes generate`, at most 3 times each. */
  async restartFailed(): Promise<void> {
    const failed: string[] = [];
    const query = `WorkflowType = 'episodeProductionWorkflow' AND ExecutionStatus = 'Failed'`;
    for await (const wf of this.env.client.workflow.list({ query }))
      failed.push(wf.workflowId.replace(/^episode-/, ''));
    for (const id of new Set(failed)) {
      const e = this.env.snapshot.episodes.find((x) => x.episode_id === id);
      if (!e || e.status === 'completed') continue;
      const n = this.generated.get(id) ?? 0;
      if (n >= 3) continue;
      this.generated.set(id, n + 1);
      const r = await this.env.history.op('generate', { episodeId: id }, async () => {
        const out = await runCli(['generate', id], this.env.cliEnv());
        if (out.code !== 0) throw new Error(`exit ${out.code}: ${out.stderr.trim()}`);
      });
      if (r.ok) this.restarted.push(id);
    }
  }

  /** `episodes repair`, when this build has it (the store's healing after a restore). */
  async repair(): Promise<void> {
    if (this.repairAvailable === undefined) {
      const help = await runCli(['--help'], this.env.cliEnv());
      this.repairAvailable = /^\s+repair\b/m.test(help.stdout);
    }
    if (!this.repairAvailable) return;
    await this.env.history.op('repair', {}, async () => {
      const out = await runCli(['repair'], this.env.cliEnv());
      if (out.code !== 0) throw new Error(`exit ${out.code}: ${out.stderr.trim()}`);
    });
  }
}

/**
 * An episode that makes no progress (its status, approval, steps and ledger unchanged) for `stuckMs`, with no parked
 * reason, is stuck: a failure of the campaign.
 */
export class StuckDetector {
  private readonly seen = new Map<string, { signature: string; since: number }>();

  constructor(private readonly stuckMs: number) {}

  /** Episodes stuck as of now. */
  stuck(snapshot: StoreSnapshot, now = Date.now()): string[] {
    const out: string[] = [];
    for (const e of snapshot.episodes) {
      if (e.status === 'completed') continue;
      const signature = JSON.stringify([e.status, e.approval, e.steps, e.ledger.length]);
      const last = this.seen.get(e.episode_id);
      if (last?.signature !== signature) {
        this.seen.set(e.episode_id, { signature, since: now });
        continue;
      }
      const parked = Object.values(e.steps).some((s) => s.status === 'needs_reconciliation');
      if (!parked && now - last.since > this.stuckMs) out.push(e.episode_id);
    }
    return out;
  }
}
