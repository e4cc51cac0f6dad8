/** `episodes vendors`: the adapters set up, what each promises (its profile), and which kind goes to which. */
import type { Command } from 'commander';
import { formatMoney } from '../domain/money';
import { parseEpisodeId } from '../domain/episode-id';
import { PipelineError, ErrorType } from '../domain/errors';
import { PAID_STEPS, paidStepSchema } from '../domain/paid-step';
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
  program
    .command('vendor-live')
    .description(
      'send ONE real job of a kind to its assigned vendor with your key, wait for it and print its cost (costs money; never run by the tests)',
    )
    .argument('<kind>', 'video, cover, rework or assembly')
    .requiredOption('--spec <json>', "the job's input, as the model takes it")
    .option('--yes', 'confirm: this job is billed by the vendor')
    .action(async (kind: string, opts: { spec: string; yes?: boolean }) => {
      const step = paidStepSchema.safeParse(kind);
      if (!step.success) throw new PipelineError(ErrorType.InvalidInput, 'kind is video, cover, rework or assembly');
      let spec: unknown;
      try {
        spec = JSON.parse(opts.spec);
      } catch {
        throw new PipelineError(ErrorType.InvalidInput, '--spec is not JSON');
      }
      if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
        throw new PipelineError(ErrorType.InvalidInput, '--spec must be a JSON object');
      }
      const vendors = vendorsFromEnv();
      const vendorName = vendors.assigned(step.data);
      if (!opts.yes) {
        throw new PipelineError(ErrorType.InvalidInput, `this sends a job ${vendorName} bills; add --yes to send it`);
      }
      const adapter = await vendors.open(vendorName);
      // An episode id no schedule ever gives (year 2000), so the job cannot be mistaken for production's.
      const episodeId = parseEpisodeId('2000-W01-0').episodeId;
      const ref = `${episodeId}:${step.data}:r${Date.now() % 10_000}`;
      const job = await adapter.submit({
        step: step.data,
        episodeId,
        spec: spec as Record<string, unknown>,
        ref,
        callbackUrl: null,
      });
      console.log(`${vendorName}: job ${job.job_id} accepted (ref ${ref})`);
      for (let wait = 1000; ; wait = Math.min(wait * 2, 15_000)) {
        const now = await adapter.get(job.job_id);
        if (now.status === 'succeeded' || now.status === 'failed') {
          const cost = now.cost ? formatMoney(now.cost.amount_cents, now.cost.currency) : 'not reported';
          return console.log(`${vendorName}: job ${now.job_id} ${now.status}, cost ${cost}, output ${now.artifact}`);
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
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
      ] +
        (p.lookupSeesEveryJob
          ? ''
          : ' (a listing that finds none parks: a job it does not show may still exist and be billed)'),
    ],
    ['charging', charging],
    ['completion', p.completion === 'poll' ? 'polled' : 'webhook, polled when none comes'],
    ['outputs', p.artifactTtlMs === null ? 'kept' : `expire after ${Math.round(p.artifactTtlMs / 60_000)} min`],
    ['failed jobs', p.failedJobsUnbilled ? 'not billed (ledgered at 0)' : 'billed'],
    ['billing journal', p.billingJournal ? 'yes: episodes ledger checks it entry for entry' : 'none: not checkable'],
  ];
}
