#!/usr/bin/env node
/**
 * `episodes`: the operator's command line. Exit codes: 0 ok, 1 refused (cross-week, ambiguous, not found, corrupt
 * store, ...), 2 bad usage or invalid input. Errors are one line on stderr.
 */
import { Command, CommanderError } from 'commander';
import { registerAllocationCommands } from './cli/allocation-commands';
import { registerClusterCommands } from './cli/cluster-commands';
import { CliContext } from './cli/context';
import { registerDeployCommands } from './cli/deploy-commands';
import { registerLedgerCommands } from './cli/ledger-commands';
import { registerLegacyMigrationCommands } from './cli/legacy-migration-commands';
import { registerVerifyCommands } from './cli/verify-commands';
import { registerPaidCommands } from './cli/paid-commands';
import { registerPreviewCommands } from './cli/preview-commands';
import { registerRepairCommands } from './cli/repair-commands';
import { registerReviewCommands } from './cli/review-commands';
import { registerScheduleCommands } from './cli/schedule-commands';
import { registerStoreCommands } from './cli/store-commands';
import { registerVendorCommands } from './cli/vendor-commands';
import { registerVendorListCommands } from './cli/vendor-list-commands';
import { registerConfigCommands } from './cli/config-commands';
import { optionHelp } from './settings/reference';
import { PipelineError, ErrorType } from './domain/errors';

export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

const USAGE_TYPES: readonly string[] = [ErrorType.InvalidInput, ErrorType.InvalidAllocationRequest];

export function buildProgram(): { program: Command; ctx: CliContext } {
  const program = new Command('episodes')
    .description('weekly media pipeline: episodes, schedule, paid production')
    .option('--data-dir <dir>', optionHelp('EPISODES_DATA_DIR'))
    .option('--store-url <url>', optionHelp('EPISODES_STORE_URL'))
    .addHelpText(
      'after',
      '\nSettings: `episodes config --help` lists them all, `episodes config` shows those in effect.',
    )
    .exitOverride()
    // Commander quotes the offending argument verbatim: one line, no control characters, whatever it contained.
    .configureOutput({ outputError: (str, write) => write(`${printable(oneLine(str))}\n`) })
    .showHelpAfterError(false);
  const ctx = new CliContext(program);
  registerAllocationCommands(program, ctx);
  registerScheduleCommands(program, ctx);
  registerPreviewCommands(program, ctx);
  registerClusterCommands(program, ctx);
  registerDeployCommands(program, ctx);
  registerPaidCommands(program, ctx);
  registerLedgerCommands(program, ctx);
  registerLegacyMigrationCommands(program, ctx);
  registerVerifyCommands(program, ctx);
  registerRepairCommands(program, ctx);
  registerStoreCommands(program, ctx);
  registerVendorCommands(program, ctx);
  registerVendorListCommands(program, ctx);
  registerConfigCommands(program, ctx);
  registerReviewCommands(program, ctx);
  return { program, ctx };
}

export function exitCodeFor(e: unknown): number {
  if (e instanceof CommanderError) {
    return e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.exitCode === 0
      ? EXIT_OK
      : EXIT_USAGE;
  }
  if (e instanceof PipelineError) return USAGE_TYPES.includes(e.type) ? EXIT_USAGE : EXIT_REFUSED;
  return EXIT_REFUSED;
}

export async function main(argv: string[]): Promise<number> {
  const { program, ctx } = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT_OK;
  } catch (e) {
    const code = exitCodeFor(e);
    if (!(e instanceof CommanderError)) {
      const type = e instanceof PipelineError ? `${e.type}: ` : '';
      console.error(`episodes: ${type}${oneLine(e)}`);
    }
    return code;
  } finally {
    await ctx.close().catch(() => undefined);
  }
}

function oneLine(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.replace(/\s+/g, ' ').trim();
}

function printable(line: string): string {
  // eslint-disable-next-line no-control-regex
  return line.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error(`episodes: ${oneLine(e)}`);
      process.exit(EXIT_REFUSED);
    },
  );
}
