import type { Command } from 'commander';
import { PipelineError, ErrorType } from '../domain/errors';
import { migrateLegacyStore, type MigrationReport } from '../legacy-migration/migrate';
import { FileEpisodeStore } from '../store/file-store';
import { formatProblem } from '../domain/problem';
import { printJson, type CliContext } from './context';

/** `migrate-legacy`: legacy week-v1 episodes → versioned ids, evidence kept. Does not talk to Temporal. */
export function registerLegacyMigrationCommands(program: Command, ctx: CliContext): void {
  program
    .command('migrate-legacy')
    .description('move legacy (week-v1) episodes to <week>-0, keeping their original files as evidence')
    .option('--dry-run', 'pre-flight and print the plan; change nothing')
    .option('--json', 'machine-readable output')
    .action((opts: { dryRun?: boolean; json?: boolean }) => migrateLegacy(ctx, opts));
}

async function migrateLegacy(ctx: CliContext, opts: { dryRun?: boolean; json?: boolean }): Promise<void> {
  const store = ctx.getStore();
  if (!(store instanceof FileEpisodeStore)) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      'legacy data is files: migrate-legacy needs a file store (--data-dir)',
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
