/**
 * Where the week-v1 migration keeps its evidence and its journal. Paths are built from parsed ids only.
 *
 *   <data>/migration-evidence/week-v1/journal.json                  the plan, written before any other change
 *   <data>/migration-evidence/week-v1/history.json                  the original history.json, byte for byte
 *   <data>/migration-evidence/week-v1/episodes/<week_id>/state.json the original state.json, byte for byte
 *
 * The evidence tree mirrors the legacy layout, so a rollback copies it back to the same relative paths.
 */
import * as path from 'node:path';
import { z } from 'zod';
import type { EpisodeId } from '../domain/episode-id';
import { episodeIdSchema, weekIdSchema } from '../domain/episode-state';
import type { WeekId } from '../domain/week-id';
import { LEGACY_FORMAT } from './legacy-format';

/** Relative to the data dir, `/`-separated: this is what `migration.evidence_dir` records. */
export const EVIDENCE_DIR = `migration-evidence/${LEGACY_FORMAT}`;

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * The persisted plan. A re-run after a crash takes `migrated_at` and the source hashes from here, so it writes the
 * same bytes the interrupted run would have written and notices when the sources changed in between.
 */
export const migrationJournalSchema = z.strictObject({
  schema: z.literal('migration-journal/v1'),
  from_format: z.literal(LEGACY_FORMAT),
  migrated_at: z.iso.datetime({ offset: true }),
  source_history_sha256: sha256Hex,
  weeks: z.array(
    z.strictObject({ from_id: weekIdSchema, episode_id: episodeIdSchema, source_state_sha256: sha256Hex }),
  ),
});
export type MigrationJournal = z.infer<typeof migrationJournalSchema>;

export class MigrationLayout {
  readonly dataDir: string;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
  }

  get episodesDir(): string {
    return path.join(this.dataDir, 'episodes');
  }
  get legacyHistory(): string {
    return path.join(this.dataDir, 'history.json');
  }
  legacyDir(weekId: WeekId): string {
    return path.join(this.episodesDir, weekId);
  }
  targetDir(id: EpisodeId): string {
    return path.join(this.episodesDir, id);
  }
  get evidenceRoot(): string {
    return path.join(this.dataDir, ...EVIDENCE_DIR.split('/'));
  }
  get journal(): string {
    return path.join(this.evidenceRoot, 'journal.json');
  }
  get evidenceHistory(): string {
    return evidenceFiles(this.evidenceRoot, '').history;
  }
  evidenceStateDir(weekId: WeekId): string {
    return path.dirname(this.evidenceState(weekId));
  }
  evidenceState(weekId: WeekId): string {
    return evidenceFiles(this.evidenceRoot, weekId).state;
  }
}

/** The evidence copies of one legacy episode inside an evidence directory (the legacy layout, mirrored). */
export function evidenceFiles(evidenceRoot: string, fromId: string): { state: string; history: string } {
  return {
    state: path.join(evidenceRoot, 'episodes', fromId, 'state.json'),
    history: path.join(evidenceRoot, 'history.json'),
  };
}
