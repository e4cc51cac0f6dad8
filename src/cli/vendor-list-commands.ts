/** `episodes vendors`: the adapters set up, what each promises (its profile), and which kind goes to which. */
import type { Command } from 'commander';
import { formatMoney } from '../domain/money';
import { PAID_STEPS } from '../domain/paid-step';
import type { VendorProfile } from '../domain/vendor-profile';
import { vendorsFromEnv } from '../vendors/directory';
import { printJson, type CliContext } from './context';

export function registerVendorListCommands(program: Command, _ctx: CliContext): void {
  program
    .command('vendors')
    .description('the vendor adapters, their profiles (what each promises about money) and which step goes to which')
    .option('--json', 'machine-readable output')
    .action((opts: { json?: boolean }) => {
      const vendors = vendorsFromEnv();
      const assigned = Object.fromEntries(PAID_STEPS.map((step) => [step, vendors.assigned(step)]));
      const profiles = vendors.profiles();
      if (opts.json) return printJson({ assigned, adapters: profiles });
      for (const step of PAID_STEPS) console.log(`${step.padEnd(9)} → ${assigned[step]}`);
      for (const [name, profile] of Object.entries(profiles)) {
        console.log(`\n${name}`);
        for (const [what, value] of profileLines(profile)) console.log(`  ${what.padEnd(25)} ${value}`);
      }
    });
}

/** A profile in words, one line per promise (docs/vendors.md has the sources). */
export function profileLines(p: VendorProfile): [string, string][] {
  const charging =
    p.charging.mode === 'fixed'
      ? 'fixed: the quote at acceptance'
      : `metered at completion, at most ${PAID_STEPS.map((s) => `${s} ${formatMoney(p.charging.mode === 'metered' ? p.charging.maxCents[s] : 0)}`).join(', ')}`;
  return [
    ['idempotency', p.idempotency === 'key' ? 'by key: a resend returns the first job' : 'none: every send may bill'],
    [
      'after an unknown outcome',
      { 'by-key': 'looked up by key', 'list-correlation': 'found by listing', none: 'parks for an operator' }[
        p.lookup
      ] + (p.lookupSeesEveryJob ? '' : ' (a listing that finds none parks: it may not show a new job yet)'),
    ],
    ['charging', charging],
    ['completion', p.completion === 'poll' ? 'polled' : 'webhook, polled when none comes'],
    ['outputs', p.artifactTtlMs === null ? 'kept' : `expire after ${Math.round(p.artifactTtlMs / 60_000)} min`],
    ['failed jobs', p.failedJobsUnbilled ? 'not billed (ledgered at 0)' : 'billed'],
    ['billing journal', p.billingJournal ? 'yes: episodes ledger checks it entry for entry' : 'none: not checkable'],
  ];
}
