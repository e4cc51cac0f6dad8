/**
 * The reviewer: decides each round of each production as the plan says, once its review notice has arrived (or after
 * NOTICE_PATIENCE_MS without one), through the planned channel: the `approve`/`requestRework` update, the signal, or
 * `episodes approve|rework` (the CLI's update) and the signal together. A late decision waits for the next restart.
 */
import type { Client } from '@temporalio/client';
import { decisionUpdateId, productionWorkflowId, reviewNoticeKey } from '../src/domain/names';
import {
  approveSignal,
  approveUpdate,
  requestReworkSignal,
  requestReworkUpdate,
  statusQuery,
} from '../src/workflows/messages';
import { runCli } from '../testkit/processes';
import type { ReceivedNotice } from '../testkit/webhook-receiver';
import type { History } from './history';
import type { StoreSnapshot } from './observer';
import type { Plan, PlannedDecision } from './plan';

const NOTICE_PATIENCE_MS = 180_000;
const REVIEWER = 'reviewer';

export interface ReviewerEnv {
  client: Client;
  history: History;
  snapshot: StoreSnapshot;
  notices: readonly ReceivedNotice[];
  plan: Plan;
  /** Keys of the triggered runs, in the order they were triggered. */
  triggerKeys: readonly string[];
  restarts(): number;
  cliEnv(): NodeJS.ProcessEnv;
}

export class Reviewer {
  private readonly sent = new Set<string>();
  /** Round → when it was first seen open, and the restart count then. */
  private readonly opened = new Map<string, { at: number; restarts: number }>();
  private settling = false;
  private running = false;
  private ticks = 0;
  /** Notices that never came before a decision (a finding, reported). */
  readonly noticesMissing: string[] = [];

  constructor(private readonly env: ReviewerEnv) {}

  /** Every round seen open so far (`<episode>:r<round>`). */
  roundsOpened(): string[] {
    return [...this.opened.keys()];
  }

  /** From now on nothing waits: late decisions and missing notices no longer hold a round. */
  settle(): void {
    this.settling = true;
  }

  /** One pass over the episodes waiting for a decision; the driver calls it every second. */
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      // Who waits: what the store says, what the notices say, and every 10 s every unfinished production (a restore
      // can forget the store's "awaiting approval" while the workflow waits; the workflow's phase decides).
      const noticed = new Set(this.env.notices.map((n) => String(n.body.episode_id)));
      const everyone = ++this.ticks % 10 === 0;
      const waiting = this.env.snapshot.episodes.filter(
        (e) =>
          e.status !== 'completed' &&
          (everyone ||
            noticed.has(e.episode_id) ||
            (e.status === 'awaiting_approval' && e.approval?.status === 'pending')),
      );
      await Promise.all(waiting.map((e) => this.consider(e.episode_id, e.allocation_key ?? '')));
    } finally {
      this.running = false;
    }
  }

  private async consider(episodeId: string, key: string): Promise<void> {
    const handle = this.env.client.workflow.getHandle(productionWorkflowId(episodeId));
    let round: number;
    let since: string | null | undefined;
    try {
      const status = await handle.query(statusQuery);
      if (status.phase !== 'awaiting_approval') return;
      round = status.reworkRound;
      since = status.awaitingSince;
    } catch {
      return; // no worker answers right now: next pass
    }
    const id = `${episodeId}:r${round}`;
    // Decided once per opening of the round: a production started again (`episodes generate`) asks round 0 anew.
    const opening = `${id}@${since ?? ''}`;
    if (this.sent.has(opening)) return;
    const decision = this.decisionFor(key, round);
    const opened = this.opened.get(id) ?? { at: Date.now(), restarts: this.env.restarts() };
    this.opened.set(id, opened);
    if (!this.settling) {
      if (decision.late && this.env.restarts() === opened.restarts) return;
      const noticed = this.env.notices.some((n) => n.key === reviewNoticeKey(episodeId, round));
      if (!noticed && Date.now() - opened.at < NOTICE_PATIENCE_MS) return;
      if (!noticed) this.noticesMissing.push(id);
    }
    this.sent.add(opening);
    const ok = await this.send(episodeId, round, decision);
    if (!ok) this.sent.delete(opening); // asked again next pass; the status query says whether it was taken
  }

  private decisionFor(key: string, round: number): PlannedDecision {
    const slot = this.env.plan.slots.find((s) => s.key === key);
    const trigger = this.env.plan.triggers[this.env.triggerKeys.indexOf(key)];
    const decisions = slot?.decisions ?? trigger?.decisions ?? [];
    return decisions[round] ?? { kind: 'approve', channel: 'update', late: false };
  }

  private async send(episodeId: string, round: number, d: PlannedDecision): Promise<boolean> {
    const handle = this.env.client.workflow.getHandle(productionWorkflowId(episodeId));
    const notes = `campaign rework of round ${round}`;
    const input = d.kind === 'approve' ? { by: REVIEWER, round } : { by: REVIEWER, round, notes };
    const args = { episodeId, round, kind: d.kind, channel: d.channel, late: d.late };
    const viaUpdate = () =>
      this.env.history.op(
        'decide:update',
        args,
        () =>
          withTimeout(
            d.kind === 'approve'
              ? handle.executeUpdate(approveUpdate, {
                  args: [input],
                  updateId: decisionUpdateId(episodeId, round, 'approve', REVIEWER),
                })
              : handle.executeUpdate(requestReworkUpdate, {
                  args: [{ ...input, notes }],
                  updateId: decisionUpdateId(episodeId, round, 'rework', REVIEWER),
                }),
            60_000,
          ),
        isTimeout,
      );
    const viaSignal = () =>
      this.env.history.op('decide:signal', args, () =>
        d.kind === 'approve'
          ? handle.signal(approveSignal, input)
          : handle.signal(requestReworkSignal, { ...input, notes }),
      );
    const viaCli = () =>
      this.env.history.op('decide:cli', args, async () => {
        const cli = d.kind === 'approve' ? ['approve', episodeId] : ['rework', episodeId, '--notes', notes];
        const r = await runCli([...cli, '--by', REVIEWER, '--round', String(round)], this.env.cliEnv());
        if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stderr.trim()}`);
      });
    if (d.channel === 'update') return (await viaUpdate()).ok;
    if (d.channel === 'signal') return (await viaSignal()).ok;
    const [cli, signal] = await Promise.all([viaCli(), viaSignal()]);
    return cli.ok || signal.ok;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

function isTimeout(e: unknown): boolean {
  return e instanceof Error && /no answer within|deadline|UNAVAILABLE|connection/i.test(e.message);
}
