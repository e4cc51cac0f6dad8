/**
 * Gauges of the store's unfinished episodes, set by each worker every EPISODES_STATE_METRICS_INTERVAL_MS while it
 * exports metrics: what counters cannot say (how long an episode has stood still, how long a paid step has been
 * parked, how much budget is left). Aggregates only, never one series per episode: the SDK's exporter keeps a gauge's
 * last value for good, so a finished episode's series would go on alerting. Alerts take max()/min() over workers.
 */
import type { MetricMeter } from '@temporalio/common';
import type { EpisodeState } from '../domain/episode-state';
import { readSettings } from '../settings/read';

export const GaugeName = {
  unfinished: 'episodes_unfinished',
  stalledSeconds: 'episodes_stalled_seconds',
  parkedSeconds: 'episodes_parked_seconds',
  budgetLeftRatio: 'episodes_budget_left_ratio',
} as const;

/** Why an episode is not moving although nothing is broken: it waits for a person. */
export type ParkedReason = 'needs_reconciliation' | 'awaiting_approval';
const PARKED_REASONS: readonly ParkedReason[] = ['needs_reconciliation', 'awaiting_approval'];

export interface StateGauges {
  unfinished: Record<Exclude<EpisodeState['status'], 'completed'>, number>;
  /** Longest time since the last recorded progress of an episode in production that is not parked; 0 when none. */
  stalledSeconds: number;
  parkedSeconds: Record<ParkedReason, number>;
  /** Smallest (budget - spent) / budget over unfinished episodes; 1 when none. */
  budgetLeftRatio: number;
}

/** The latest instant the store records for the episode: allocation, a step's intent, submission or reconciliation. */
function lastProgressMs(s: EpisodeState): number {
  const times = [s.created_at, ...s.ledger.map((l) => l.recorded_at)];
  for (const step of Object.values(s.steps)) {
    times.push(step.intent_at);
    if (step.submitted_at) times.push(step.submitted_at);
    if (step.reconciliation) times.push(step.reconciliation.at);
  }
  return Math.max(...times.map((t) => Date.parse(t)));
}

function parkedReason(s: EpisodeState): ParkedReason | undefined {
  if (Object.values(s.steps).some((step) => step.status === 'needs_reconciliation')) return 'needs_reconciliation';
  return s.status === 'awaiting_approval' ? 'awaiting_approval' : undefined;
}

export function stateGauges(states: readonly EpisodeState[], now: Date, budgetCents: number): StateGauges {
  const g: StateGauges = {
    unfinished: { allocated: 0, in_production: 0, awaiting_approval: 0, failed: 0 },
    stalledSeconds: 0,
    parkedSeconds: { needs_reconciliation: 0, awaiting_approval: 0 },
    budgetLeftRatio: 1,
  };
  for (const s of states) {
    if (s.status === 'completed') continue;
    g.unfinished[s.status] += 1;
    const age = Math.max(0, (now.getTime() - lastProgressMs(s)) / 1000);
    const reason = parkedReason(s);
    if (reason) g.parkedSeconds[reason] = Math.max(g.parkedSeconds[reason], age);
    else if (s.status !== 'failed') g.stalledSeconds = Math.max(g.stalledSeconds, age);
    const spent = s.ledger.reduce((sum, l) => sum + l.amount_cents, 0);
    g.budgetLeftRatio = Math.min(g.budgetLeftRatio, (budgetCents - spent) / budgetCents);
  }
  return g;
}

export function setStateGauges(meter: MetricMeter, g: StateGauges): void {
  const gauge = (name: string, description: string) => meter.createGauge(name, 'float', undefined, description);
  const unfinished = gauge(GaugeName.unfinished, 'unfinished episodes by status');
  for (const [status, n] of Object.entries(g.unfinished)) unfinished.set(n, { status });
  gauge(GaugeName.stalledSeconds, 'longest time without progress of an episode in production, not parked').set(
    g.stalledSeconds,
  );
  const parked = gauge(GaugeName.parkedSeconds, 'longest time an episode has waited for a person, by reason');
  for (const reason of PARKED_REASONS) parked.set(g.parkedSeconds[reason], { reason });
  gauge(GaugeName.budgetLeftRatio, 'smallest share of its budget an unfinished episode has left').set(
    g.budgetLeftRatio,
  );
}

export function stateMetricsIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  return readSettings(['EPISODES_STATE_METRICS_INTERVAL_MS'], env).EPISODES_STATE_METRICS_INTERVAL_MS;
}

/**
 * Runs each collector now and every `intervalMs` until stopped. A collector that fails (store or Temporal down) keeps
 * its last values and logs one line; the others still run, and the worker's own work never waits on them.
 */
export function startPeriodicMetrics(
  collectors: readonly (() => Promise<void>)[],
  intervalMs: number,
  warn: (message: string) => void,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    for (const collect of collectors) {
      try {
        await collect();
      } catch (e) {
        warn(`metrics: ${(e as Error).message}`);
      }
    }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
