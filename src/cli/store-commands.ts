import type { Command } from 'commander';
import { copyFileStoreToPostgres, type CopyReport } from '../store/postgres-copy';
import { PostgresEpisodeStore } from '../store/postgres-store';
import { refusePasswordOnCommandLine } from '../store/postgres-url';
import { printJson, type CliContext } from './context';

/** `store copy` (file store → PostgreSQL) and `store migrate` (PostgreSQL schema). Neither talks to Temporal. */
export function registerStoreCommands(program: Command, ctx: CliContext): void {
  const store = program.command('store').description('the episode store itself: schema, moving to PostgreSQL');

  store
    .command('copy')
    .description(
      'copy a file store into a PostgreSQL store: episodes, history, ledger and episode files, ids unchanged; ' +
        'all rows in one transaction; safe to re-run',
    )
    .requiredOption('--from <dir>', 'data directory of the file store')
    .requiredOption('--to <url>', 'postgres:// URL of the target store')
    .option('--media-dir <dir>', "target's root for episode files (env EPISODES_MEDIA_DIR, default ./data/media)")
    .option('--json', 'machine-readable output')
    .action(async (opts: { from: string; to: string; mediaDir?: string; json?: boolean }) => {
      refusePasswordOnCommandLine(opts.to, '--to');
      const report = await copyFileStoreToPostgres({ fromDir: opts.from, toUrl: opts.to, mediaDir: opts.mediaDir });
      if (opts.json) printJson(report);
      else console.log(describeCopy(report));
    });

  store
    .command('migrate')
    .description('apply pending schema migrations of the PostgreSQL store (workers also do it on start)')
    .action(async () => {
      const s = ctx.getStore();
      if (!(s instanceof PostgresEpisodeStore)) {
        console.log(`${s.description}: no schema to migrate`);
        return;
      }
      console.log(`${s.description}: schema version ${await s.schemaVersion()}`);
    });
}

function describeCopy(r: CopyReport): string {
  const totals = Object.entries(r.ledger_cents)
    .map(([currency, cents]) => `${cents} ${currency} cents`)
    .join(', ');
  return [
    `copied ${r.from} → ${r.to}`,
    `  episodes  ${r.episodes} (${r.episodes_written} written, ${r.episodes_unchanged} already there)`,
    `  history   ${r.history} (${r.history_written} written, ${r.history_unchanged} already there)`,
    `  files     ${r.files_copied + r.files_unchanged} under ${r.media_root} ` +
      `(${r.files_copied} copied, ${r.files_unchanged} already there)`,
    `  ledger    ${r.charges} charges${totals ? `: ${totals}` : ''}`,
    'next: point EPISODES_STORE_URL (and EPISODES_MEDIA_DIR) at the new store, then run `episodes verify`',
  ].join('\n');
}
