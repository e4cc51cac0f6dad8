/**
 * The writing half of the week-v1 migration. Runs under the pipeline lock on a plan made inside that lock; every step
 * is skipped when the plan found it done, so a run killed anywhere is completed by running the migration again.
 *
 * Order per week: evidence copy → directory rename → state rewrite → history entry → week index. The index entry
 * (the file store's commit point) comes last, so allocation never sees a migrated episode that is not complete.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { PipelineError, ErrorType } from '../domain/errors';
import { failpoint } from '../failpoints';
import {
  ensureDirDurable,
  exists,
  fsyncDir,
  storageError,
  writeFileDurable,
  writeJsonDurable,
} from '../files/durable-fs';
import type { FileEpisodeStore, WeekIndex } from '../store/file-store';
import type { LockGuard } from '../store/pipeline-lock';
import { listNames, readBytesIfExists } from '../files/read-only-fs';
import { LEGACY_WEEK_KEY } from './legacy-format';
import type { MigrationLayout } from './journal';
import type { MigrationPlan, WeekPlan } from './plan';

export async function applyMigration(store: FileEpisodeStore, plan: MigrationPlan, guard: LockGuard): Promise<void> {
  const { layout } = plan;
  await ensureDirDurable(layout.evidenceRoot);
  if (plan.journalPending) {
    guard.assertHeld();
    await writeJsonDurable(layout.journal, plan.journal);
    await failpoint('migration.journal-written');
  }
  if (plan.historyEvidencePending) {
    await writeEvidence(layout.evidenceHistory, plan.historyBytes, guard);
    await failpoint('migration.history-evidence-written');
  }
  for (const week of plan.weeks) await applyWeek(store, layout, week, guard);

  // history.json leaves the data dir root last, and only with a verified evidence copy: until then a re-run can
  // re-derive everything from it.
  const root = await readBytesIfExists(layout.legacyHistory);
  const left = (await listNames(layout.episodesDir)).filter((name) => LEGACY_WEEK_KEY.test(name));
  if (root && left.length > 0) {
    throw new PipelineError(ErrorType.StoreCorrupt, `legacy episodes ${left.join(', ')} are still to migrate`);
  }
  if (root) {
    const kept = await readBytesIfExists(layout.evidenceHistory);
    if (!kept?.equals(root)) {
      throw new PipelineError(ErrorType.StoreCorrupt, `${layout.evidenceHistory} does not hold history.json's bytes`);
    }
    guard.assertHeld();
    await fs.unlink(layout.legacyHistory).catch((e: unknown) => {
      throw storageError(`cannot remove ${layout.legacyHistory}`, e);
    });
    await fsyncDir(layout.dataDir);
    await failpoint('migration.legacy-history-removed');
  }
}

async function applyWeek(
  store: FileEpisodeStore,
  layout: MigrationLayout,
  week: WeekPlan,
  guard: LockGuard,
): Promise<void> {
  const { pending, mapped, episodeId } = week;
  if (pending.evidence) {
    await ensureDirDurable(layout.evidenceStateDir(week.fromId));
    await writeEvidence(layout.evidenceState(week.fromId), week.sourceBytes, guard);
    await failpoint('migration.state-evidence-written');
  }
  if (pending.move) {
    // A rename on one filesystem: the media files keep their inodes and bytes; nothing is copied or rewritten.
    if (exists(week.targetDir)) {
      throw new PipelineError(ErrorType.StoreCorrupt, `${week.targetDir} appeared during the migration`);
    }
    guard.assertHeld();
    await fs.rename(week.legacyDir, week.targetDir).catch((e: unknown) => {
      throw storageError(`cannot move ${week.legacyDir} to ${week.targetDir}`, e);
    });
    await fsyncDir(path.dirname(week.targetDir));
    await failpoint('migration.directory-moved');
  }
  if (pending.state) {
    guard.assertHeld();
    await writeJsonDurable(store.statePath(episodeId), mapped.state);
    await failpoint('migration.state-written');
  }
  if (pending.history) {
    await ensureDirDurable(path.dirname(store.historyPath(episodeId)));
    guard.assertHeld();
    await writeJsonDurable(store.historyPath(episodeId), mapped.history);
    await failpoint('migration.history-written');
  }
  if (pending.index) {
    await ensureDirDurable(path.dirname(store.weekIndexPath(week.fromId)));
    const index = store.readWeekIndex(week.fromId);
    const episodes = [...index.episodes.filter((e) => e.episode_id !== episodeId), mapped.indexEntry];
    guard.assertHeld();
    await writeJsonDurable(store.weekIndexPath(week.fromId), {
      ...index,
      episodes: episodes.sort((a, b) => a.sequence - b.sequence),
    } satisfies WeekIndex);
    await failpoint('migration.index-written');
  }
}

/** Evidence is written once and read back: a copy that does not hold the original bytes is worse than none. */
async function writeEvidence(file: string, bytes: Buffer, guard: LockGuard): Promise<void> {
  guard.assertHeld();
  await writeFileDurable(file, bytes);
  const back = await readBytesIfExists(file);
  if (!back?.equals(bytes)) throw new PipelineError(ErrorType.StorageFailure, `${file}: evidence copy differs`);
}
