import type { Command } from 'commander';
import { parseEpisodeId } from '../domain/episode-id';
import { PipelineError, ErrorType } from '../domain/errors';
import type { EpisodeStore } from '../store/episode-store';
import { FileEpisodeStore } from '../store/file-store';
import { fileStoreSource } from '../verify/file-store-source';
import { formatProblem } from '../domain/problem';
import type { VerifySource } from '../verify/source';
import { episodeStoreSource } from '../verify/store-source';
import { verifyStore, type VerifyReport } from '../verify/verify-store';
import { printJson, type CliContext } from './context';

/** `verify`: a read-only check of a store (file or PostgreSQL). Does not talk to Temporal. */
export function registerVerifyCommands(program: Command, ctx: CliContext): void {
  program
    .command('verify')
    .description('read-only check of every episode, history entry, index and media file (or only of the given ones)')
    .argument('[episode_id...]', 'episode ids to check (default: all)')
    .option('--json', 'machine-readable output')
    .action(async (rawIds: string[], opts: { json?: boolean }) => {
      const episodeIds = rawIds.map((raw) => parseEpisodeId(raw).episodeId);
      const report = await verifyStore(verifySourceFor(ctx.getStore(), ctx.dataDir), { episodeIds });
      if (opts.json) printJson(report);
      else for (const line of verifyReportLines(report)) console.log(line);
      if (!report.ok) {
        throw new PipelineError(ErrorType.StoreCorrupt, `verify found ${report.problems.length} problem(s)`);
      }
    });
}

/** The text output: one line when clean, else one line per problem. */
export function verifyReportLines(report: VerifyReport): string[] {
  if (!report.ok) return report.problems.map(formatProblem);
  return [
    `ok: ${report.episodes_checked} episodes, ${report.history_checked} history entries, ` +
      `${report.media_checked} media files checked (${report.store})`,
  ];
}

/** The file store gets its per-file and structural checks; any other store is verified through its read interface. */
export function verifySourceFor(store: EpisodeStore, dataDir: string): VerifySource {
  if (store instanceof FileEpisodeStore) return fileStoreSource(store.dataDir);
  // A shared store keeps episode files and the migration evidence below its media root.
  const root = (store as { mediaRoot?: unknown }).mediaRoot;
  return episodeStoreSource(store, { evidenceBase: typeof root === 'string' ? root : dataDir });
}
