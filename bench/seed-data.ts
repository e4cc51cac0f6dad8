/**
 * Synthetic but realistic store contents: a few episodes per ISO week (2 to 5, fixed per week), walking back one week
 * at a time from NEWEST_MONDAY, so 100,000 episodes span about 550 years of weeks. Episodes older than the newest
 * few weeks are completed, with paid steps, a ledger, media and a history entry, as a store that has run for years.
 * The same plan feeds every store implementation, and every size is a prefix of it (newest first), so stores of
 * different sizes hold exactly the same recent weeks: the weeks the measured allocations go into.
 */
import { createHash } from 'node:crypto';
import { formatEpisodeId, type EpisodeId } from '../src/domain/episode-id';
import type { EpisodeState, HistoryEntry } from '../src/domain/episode-state';
import { isoWeekOfDate, type WeekId } from '../src/domain/week-id';
import { initialState } from '../src/domain/episode-state';

/** Monday 2026-08-03, ISO week 2026-W32. */
const NEWEST_MONDAY_UTC = Date.UTC(2026, 7, 3);
const DAY_MS = 86_400_000;
/** Weeks at the recent end that are still in flight (not completed). */
const IN_FLIGHT_WEEKS = 4;

export interface SeedWeek {
  weekId: WeekId;
  mondayUtc: number;
  /** Episodes of this week, sequence 0..n-1. */
  episodes: SeedEpisode[];
}

export interface SeedEpisode {
  state: EpisodeState;
  history: HistoryEntry | null;
}

/** The first `size` episodes of the plan, grouped by week, newest week first. */
export function seedPlan(size: number): SeedWeek[] {
  const weeks: SeedWeek[] = [];
  let remaining = size;
  for (let age = 0; remaining > 0; age++) {
    const mondayUtc = NEWEST_MONDAY_UTC - age * 7 * DAY_MS;
    const monday = new Date(mondayUtc);
    const weekId = isoWeekOfDate(monday.getUTCFullYear(), monday.getUTCMonth() + 1, monday.getUTCDate());
    const count = Math.min(remaining, episodesInWeek(weekId));
    const episodes: SeedEpisode[] = [];
    for (let sequence = 0; sequence < count; sequence++) {
      episodes.push(seedEpisode(weekId, mondayUtc, sequence, age < IN_FLIGHT_WEEKS ? 'in-flight' : 'completed'));
    }
    weeks.push({ weekId, mondayUtc, episodes });
    remaining -= count;
  }
  return weeks;
}

/** 2..5, a pure function of the week, so every store agrees on the shape of every week. */
function episodesInWeek(weekId: WeekId): number {
  return 2 + (createHash('sha256').update(weekId).digest()[0]! % 4);
}

/** Sequence 0 is the scheduled Monday 09:00 run; later ones are triggers a few hours apart. */
export function seedKey(mondayUtc: number, sequence: number): string {
  return `weekly-media-${new Date(mondayUtc + (9 + 3 * sequence) * 3_600_000).toISOString().replace('.000Z', 'Z')}`;
}

function seedEpisode(
  weekId: WeekId,
  mondayUtc: number,
  sequence: number,
  phase: 'in-flight' | 'completed',
): SeedEpisode {
  const episodeId = formatEpisodeId(weekId, sequence);
  const key = seedKey(mondayUtc, sequence);
  const createdAt = new Date(mondayUtc + (9 + 3 * sequence) * 3_600_000 + 1_234).toISOString();
  const base = initialState({ episodeId, weekId, sequence }, key, allocatedBy(key, episodeId), createdAt);
  if (phase === 'in-flight') {
    const status = (['awaiting_approval', 'in_production', 'allocated'] as const)[sequence % 3]!;
    return {
      state: { ...base, status, approval: status === 'awaiting_approval' ? pendingApproval : null },
      history: null,
    };
  }
  const completedAt = new Date(mondayUtc + 3 * DAY_MS + sequence * 3_600_000).toISOString();
  const paid = paidWork(episodeId, createdAt);
  const approval = { status: 'approved' as const, by: 'editor@example.com', at: completedAt, notes: null };
  const state: EpisodeState = {
    ...base,
    status: 'completed',
    steps: paid.steps,
    ledger: paid.ledger,
    approval,
    media: paid.media,
    completed_at: completedAt,
  };
  const history: HistoryEntry = {
    schema: 'history-entry/v1',
    episode_id: episodeId,
    week_id: weekId,
    sequence,
    allocation_key: key,
    completed_at: completedAt,
    remote_jobs: Object.values(paid.steps).map((s) => ({
      step: s.step,
      round: s.round,
      remote_job_id: s.remote_job_id!,
    })),
    ledger: paid.ledger,
    total_cost_cents: paid.ledger.reduce((sum, l) => sum + l.amount_cents, 0),
    currency: 'USD',
    approval,
    media: paid.media,
  };
  return { state, history };
}

const pendingApproval = { status: 'pending' as const, by: null, at: null, notes: null };

function allocatedBy(key: string, id: EpisodeId): EpisodeState['allocated_by'] {
  const runId = createHash('sha256').update(id).digest('hex');
  return {
    kind: 'workflow',
    workflow_id: key,
    run_id: `${runId.slice(0, 8)}-${runId.slice(8, 12)}-${runId.slice(12, 16)}-${runId.slice(16, 20)}-${runId.slice(20, 32)}`,
    namespace: 'default',
  };
}

function paidWork(id: EpisodeId, at: string): Pick<EpisodeState, 'steps' | 'ledger' | 'media'> {
  const steps: EpisodeState['steps'] = {};
  const ledger: EpisodeState['ledger'] = [];
  const media: EpisodeState['media'] = {};
  for (const [i, step] of (['video', 'cover', 'assembly'] as const).entries()) {
    const remoteJobId = `job-${id}-${step}`;
    const sha = createHash('sha256').update(remoteJobId).digest('hex');
    const artifact = { path: `media/${step}-r0.bin`, sha256: sha, bytes: 1_000_000 * (i + 1) };
    steps[`${step}-r0`] = {
      step,
      round: 0,
      idempotency_key: `${id}:${step}:r0`,
      status: 'succeeded',
      intent_at: at,
      spec: { template: 'weekly', step, duration_s: 600 },
      remote_job_id: remoteJobId,
      submitted_at: at,
      quoted_cost: { amount_cents: 1500 * (i + 1), currency: 'USD' },
      artifact,
      charged: true,
      reconciliation: null,
      error: null,
    };
    ledger.push({
      step,
      round: 0,
      remote_job_id: remoteJobId,
      amount_cents: 1500 * (i + 1),
      currency: 'USD',
      recorded_at: at,
    });
    media[step] = artifact;
  }
  return { steps, ledger, media };
}
