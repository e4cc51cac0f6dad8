/**
 * `episodes migrate-legacy`: week-v1 → versioned ids. Plan and pre-flight everything first, read-only and without the lock,
 * so that a refusal changes nothing on disk; then plan again under the pipeline lock and apply. No credentials, no
 * network: this module only touches files under the data dir.
 */
import { failpoint } from '../failpoints';
import type { FileEpisodeStore } from '../store/file-store';
import type { Problem } from '../domain/problem';
import { applyMigration } from './apply';
import { MigrationLayout } from './journal';
import { planMigration, type MigrationPlan, type WeekSteps } from './plan';

export type MigrationStatus = 'nothing-to-migrate' | 'dry-run' | 'migrated' | 'refused';

export interface MigrationEpisodeSummary {
  from_id: string;
  episode_id: string;
  media_files: number;
  remote_jobs: number;
  charges: number;
  total_cost_cents: number;
  currency: string;
  /** The steps this run did (or, for a dry run, would do); empty when the episode was already migrated. */
  steps: (keyof WeekSteps)[];
}

export interface MigrationReport {
  status: MigrationStatus;
  data_dir: string;
  evidence_dir: string;
  /** The migration was interrupted before and this run continued it (same migrated_at, same plan). */
  resumed: boolean;
  migrated_at: string | null;
  episodes: MigrationEpisodeSummary[];
  problems: Problem[];
}

export async function migrateLegacyStore(
  store: FileEpisodeStore,
  options: { dryRun?: boolean; now?: () => Date } = {},
): Promise<MigrationReport> {
  const now = options.now ?? (() => new Date());
  const first = await planMigration(store, now);
  if (first.kind === 'nothing-to-migrate') return report(store, 'nothing-to-migrate');
  if (first.problems.length > 0) return report(store, 'refused', first.plan, first.problems);
  if (options.dryRun) return report(store, 'dry-run', first.plan);

  return store.lock.withLock(async (guard) => {
    // Planned again: the store may have changed between the unlocked pre-flight and taking the lock.
    const locked = await planMigration(store, now);
    if (locked.kind === 'nothing-to-migrate') return report(store, 'nothing-to-migrate');
    if (locked.problems.length > 0) return report(store, 'refused', locked.plan, locked.problems);
    await failpoint('migration.preflight-passed');
    await applyMigration(store, locked.plan, guard);
    return report(store, 'migrated', locked.plan);
  });
}

function report(
  store: FileEpisodeStore,
  status: MigrationStatus,
  plan?: MigrationPlan,
  problems: Problem[] = [],
): MigrationReport {
  return {
    status,
    data_dir: store.dataDir,
    evidence_dir: new MigrationLayout(store.dataDir).evidenceRoot,
    resumed: plan ? !plan.journalPending : false,
    migrated_at: plan?.journal.migrated_at ?? null,
    episodes: (plan?.weeks ?? []).map((w) => ({
      from_id: w.fromId,
      episode_id: w.episodeId,
      media_files: Object.keys(w.mapped.state.media).length,
      remote_jobs: w.legacy.remote_jobs.length,
      charges: w.mapped.state.ledger.length,
      total_cost_cents: w.mapped.history.total_cost_cents,
      currency: w.mapped.history.currency,
      steps: (Object.keys(w.pending) as (keyof WeekSteps)[]).filter((step) => w.pending[step]),
    })),
    problems,
  };
}
