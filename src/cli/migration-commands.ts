import type { Command } from 'commander';
import { parseEpisodeId } from '../domain/episode-id';
import { PipelineError } from '../domain/errors';
import { migrateLegacyStore, type MigrationReport } from '../migration/migrate';
import { ErrorType } from '../shared';
import type { EpisodeStore } from '../store/episode-store';
import { FileEpisodeStore } from '../store/file-store';
import { fileStoreSource } from '../verify/file-store-source';
import { formatProblem } from '../verify/problem';
import type { VerifySource } from '../verify/source';
import { episodeStoreSource } from '../verify/store-source';
import { verifyStore } from '../verify/verify-store';
import { printJson, type CliContext } from './context';

/** `migrate` (legacy week-v1 → versioned ids) and `verify` (read-only store check). Neither talks to Temporal. */
export function registerMigrationCommands(program: Command, ctx: CliContext): void {
  program
    .command('migrate')
    .description('move legacy (week-v1) episodes to <week>-0, keeping their original files as evidence')
    .option('--dry-run', 'pre-flight and print the plan; change nothing')
    .option('--json', 'machine-readable output')
    .action(async (opts: { dryRun?: boolean; json?: boolean }) => {
      const store = ctx.getStore();
      if (!(store instanceof FileEpisodeStore)) {
        throw new PipelineError(
          ErrorType.InvalidInput,
          'legacy data is files: migrate needs a file store (--data-dir)',
        );
      }
      const report = await migrateLegacyStore(store, { dryRun: opts.dryRun === true });
      if (opts.json) printJson(report);
      else console.log(describeMigration(report));
      if (report.status === 'refused') {
        throw new PipelineError(
          ErrorType.StoreCorrupt,
          `migration refused: ${report.problems.length} problem(s); nothing was changed`,
        );
      }
    });

  program
    .command('verify')
    .description('read-only check of every episode, history entry, index and media file (or only of the given ones)')
    .argument('[episode_id...]', 'episode ids to check (default: all)')
    .option('--json', 'machine-readable output')
    .action(async (rawIds: string[], opts: { json?: boolean }) => {
      const episodeIds = rawIds.map((raw) => parseEpisodeId(raw).episodeId);
      const report = await verifyStore(verifySourceFor(ctx.getStore(), ctx.dataDir), { episodeIds });
      if (opts.json) printJson(report);
      else if (report.ok) {
        console.log(
          `ok: ${report.episodes_checked} episodes, ${report.history_checked} history entries, ` +
            `${report.media_checked} media files checked (${report.store})`,
        );
      } else for (const p of report.problems) console.log(formatProblem(p));
      if (!report.ok) {
        throw new PipelineError(ErrorType.StoreCorrupt, `verify found ${report.problems.length} problem(s)`);
      }
    });
}

/** The file store gets its per-file and structural checks; any other store is verified through its read interface. */
function verifySourceFor(store: EpisodeStore, dataDir: string): VerifySource {
  if (store instanceof FileEpisodeStore) return fileStoreSource(store.dataDir);
  // A shared store keeps episode files and the migration evidence below its media root.
  const root = (store as { mediaRoot?: unknown }).mediaRoot;
  return episodeStoreSource(store, { evidenceBase: typeof root === 'string' ? root : dataDir });
}

function describeMigration(r: MigrationReport): string {
  switch (r.status) {
    case 'nothing-to-migrate':
      return `nothing to migrate in ${r.data_dir}`;
    case 'refused':
      return ['migration refused; nothing was changed:', ...r.problems.map(formatProblem)].join('\n');
    case 'dry-run':
    case 'migrated': {
      const head =
        r.status === 'dry-run'
          ? `dry run: would migrate ${r.episodes.length} legacy episode(s); nothing was changed`
          : `migrated ${r.episodes.length} legacy episode(s)`;
      const lines = [head + (r.resumed ? ` (continuing the migration started at ${r.migrated_at})` : '')];
      for (const e of r.episodes) {
        lines.push(
          `  ${e.from_id} → ${e.episode_id}  ${e.media_files} media files, ${e.remote_jobs} remote jobs, ` +
            `${e.charges} charges (${e.total_cost_cents} ${e.currency} cents)` +
            (e.steps.length ? `  steps: ${e.steps.join(', ')}` : '  already migrated'),
        );
      }
      lines.push(`evidence: ${r.evidence_dir}`);
      if (r.status === 'migrated') lines.push('next: episodes verify');
      return lines.join('\n');
    }
  }
}
