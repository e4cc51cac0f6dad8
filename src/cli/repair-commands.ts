import type { Command } from 'commander';
import { temporalAllocationRecords } from '../activities/allocation-records';
import { recordedProductions } from '../activities/completion-records';
import { parkedSteps } from '../activities/parked-steps';
import { repairParkedStep, repairProduction, type RepairAction } from '../activities/repair';
import { PipelineError } from '../domain/errors';
import { ErrorType } from '../domain/errors';
import { printJson, type CliContext } from './context';
import { vendorsFromEnv } from '../vendors/directory';

/**
 * `repair`: after a restore from backup or a failover, puts back what Temporal recorded and the store forgot
 * (src/activities/repair.ts). Applies by default: every write is one the runs themselves made, confirmed by Temporal's
 * record and, for money, by the vendor; `--dry-run` lists them without writing or calling the vendor.
 */
export function registerRepairCommands(program: Command, ctx: CliContext): void {
  program
    .command('repair')
    .description(
      "re-apply forgotten allocations, completions and parked steps from what Temporal recorded (the task queue's)",
    )
    .option('--dry-run', 'list what would be repaired; write nothing, call no vendor')
    .option('--json', 'machine-readable output')
    .action(async (opts: { dryRun?: boolean; json?: boolean }) => {
      const client = await ctx.getClient();
      const deps = {
        store: ctx.getStore(),
        vendors: vendorsFromEnv(process.env),
        budgetCents: ctx.config.budgetCents,
        allocationRecords: temporalAllocationRecords(client),
      };
      const productions = await recordedProductions(client, ctx.config.taskQueue);
      const actions: RepairAction[] = [];
      // In episode order, so that a week's forgotten ids come back from the lowest.
      for (const p of productions) actions.push(...(await repairProduction(deps, p, opts.dryRun ?? false)));
      // Then the steps parked in Temporal whose parked record the store forgot (their episodes are back by now).
      for (const p of await parkedSteps(client, ctx.config.taskQueue)) {
        actions.push(...(await repairParkedStep(deps, p, opts.dryRun ?? false)));
      }
      const stuck = actions.filter((a) => a.action === 'conflict' || a.action === 'refused');
      if (opts.json) printJson({ dry_run: opts.dryRun ?? false, productions_checked: productions.length, actions });
      else {
        for (const a of actions)
          console.log(`${a.episode_id}  ${a.action}${opts.dryRun ? ' (dry run)' : ''}  ${a.detail}`);
        console.log(
          `${productions.length} productions checked, ${actions.length - stuck.length} repaired, ${stuck.length} need an operator`,
        );
      }
      if (stuck.length > 0) {
        throw new PipelineError(ErrorType.InvalidState, `${stuck.length} episode(s) could not be repaired (see above)`);
      }
    });
}
