import type { Command } from 'commander';
import { formatMoney } from '../domain/money';
import type { EpisodeState } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { stepKey } from '../domain/names';
import { parseWeekId } from '../domain/week-id';
import { PAID_STEPS } from '../domain/paid-step';
import { vendorsFromEnv } from '../vendors/directory';
import type { VendorCharge, Vendors } from '../vendors/port';
import { writeFileDurable } from '../files/durable-fs';
import { printJson, type CliContext } from './context';

export interface LedgerView {
  episodes: {
    episode_id: string;
    steps: { step: string; remote_job_id: string; amount_cents: number }[];
    total_cents: number;
  }[];
  total_cents: number;
  currency: string;
  /** null when the vendor was not asked (--no-vendor). */
  reconciliation: {
    charges_checked: number;
    /** The vendor billed it, the ledger does not have it (and no step is still waiting to record it). */
    unrecorded_charges: { job_id: string; episode_id: string; kind: string; amount_cents: number }[];
    /** Accepted jobs whose charge the ledger will record when they finish. */
    pending: { job_id: string; episode_id: string; step: string }[];
    /** The ledger has it, the vendor never billed it. */
    unbilled_entries: { job_id: string; episode_id: string; step: string }[];
    amount_mismatches: { job_id: string; ledger_cents: number; billed_cents: number }[];
    /** Ledger entries at a vendor that shows no billing (profile.billingJournal false): not checkable here. */
    unverifiable: { job_id: string; episode_id: string; step: string; vendor: string }[];
  } | null;
}

/** Every journal the ledger's vendors show, and the adapters that show none. */
export interface Billing {
  charges: VendorCharge[];
  withoutJournal: ReadonlySet<string>;
}

/** The adapter part of a step's vendor (`fal:fal-ai/flux/dev` → `fal`); a record with none is native. */
const adapterOf = (vendor: string | undefined): string => (vendor ?? 'native').split(':')[0]!;

/** Asks each adapter the episodes used, or that is assigned now, for its journal: once per adapter. */
async function fetchBilling(vendors: Vendors, episodes: EpisodeState[]): Promise<Billing> {
  const used = new Map<string, string>();
  for (const vendor of [
    ...PAID_STEPS.map((step) => vendors.assigned(step)),
    ...episodes.flatMap((e) => Object.values(e.steps).map((s) => s.vendor ?? 'native')),
  ]) {
    if (!used.has(adapterOf(vendor))) used.set(adapterOf(vendor), vendor);
  }
  const charges: VendorCharge[] = [];
  const withoutJournal = new Set<string>();
  for (const [adapter, vendor] of used) {
    const journal = await (await vendors.open(vendor)).billing();
    if (journal === null) withoutJournal.add(adapter);
    else charges.push(...journal);
  }
  return { charges, withoutJournal };
}

/** Pure: the ledger of some episodes, reconciled against the vendor's billing when given. */
export function buildLedgerView(episodes: EpisodeState[], billing: Billing | null): LedgerView {
  const view: LedgerView = {
    episodes: episodes.map((e) => ({
      episode_id: e.episode_id,
      steps: e.ledger.map((l) => ({
        step: stepKey(l.step, l.round),
        remote_job_id: l.remote_job_id,
        amount_cents: l.amount_cents,
      })),
      total_cents: e.ledger.reduce((sum, l) => sum + l.amount_cents, 0),
    })),
    total_cents: 0,
    currency: episodes.flatMap((e) => e.ledger)[0]?.currency ?? 'USD',
    reconciliation: null,
  };
  view.total_cents = view.episodes.reduce((sum, e) => sum + e.total_cents, 0);
  if (!billing) return view;

  const ids = new Set(episodes.map((e) => e.episode_id as string));
  const charges = billing.charges.filter((c) => ids.has(c.episode_id));
  const ledger = new Map(episodes.flatMap((e) => e.ledger.map((l) => [l.remote_job_id, { e, l }] as const)));
  const inFlight = new Map(
    episodes.flatMap((e) =>
      Object.entries(e.steps)
        .filter(([, s]) => s.remote_job_id !== null && !s.charged)
        .map(([key, s]) => [s.remote_job_id!, { e, key }] as const),
    ),
  );
  const billed = new Set(charges.map((c) => c.job_id));
  const r: NonNullable<LedgerView['reconciliation']> = {
    charges_checked: charges.length,
    unrecorded_charges: [],
    pending: [],
    unbilled_entries: [],
    amount_mismatches: [],
    unverifiable: [],
  };
  for (const c of charges) {
    const entry = ledger.get(c.job_id);
    if (entry) {
      if (entry.l.amount_cents !== c.amount_cents) {
        r.amount_mismatches.push({
          job_id: c.job_id,
          ledger_cents: entry.l.amount_cents,
          billed_cents: c.amount_cents,
        });
      }
      continue;
    }
    const pending = inFlight.get(c.job_id);
    if (pending) r.pending.push({ job_id: c.job_id, episode_id: pending.e.episode_id, step: pending.key });
    else
      r.unrecorded_charges.push({
        job_id: c.job_id,
        episode_id: c.episode_id,
        kind: c.kind,
        amount_cents: c.amount_cents,
      });
  }
  for (const [jobId, { e, l }] of ledger) {
    const step = stepKey(l.step, l.round);
    const vendor = adapterOf(e.steps[step]?.vendor);
    if (billing.withoutJournal.has(vendor))
      r.unverifiable.push({ job_id: jobId, episode_id: e.episode_id, step, vendor });
    // A failure the vendor documents as unbilled is a 0 line with no charge beside it.
    else if (!billed.has(jobId) && l.amount_cents > 0) {
      r.unbilled_entries.push({ job_id: jobId, episode_id: e.episode_id, step });
    }
  }
  view.reconciliation = r;
  return view;
}

export function ledgerDiscrepancies(view: LedgerView): number {
  const r = view.reconciliation;
  return r ? r.unrecorded_charges.length + r.unbilled_entries.length + r.amount_mismatches.length : 0;
}

export const LedgerMetricName = {
  discrepancies: 'episodes_ledger_discrepancies',
  checkedAt: 'episodes_ledger_check_timestamp_seconds',
} as const;

/**
 * The reconcile check as Prometheus text, for node_exporter's textfile collector: `episodes ledger --metrics-file`
 * run on a timer (the worker never reads vendor credentials for work that pays nothing).
 */
export function ledgerMetricsText(view: LedgerView, now: Date): string {
  const gauge = (name: string, help: string, value: number) =>
    `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name} ${value}\n`;
  return (
    gauge(
      LedgerMetricName.discrepancies,
      'ledger entries and vendor charges that do not match (episodes ledger).',
      ledgerDiscrepancies(view),
    ) +
    gauge(
      LedgerMetricName.checkedAt,
      'when episodes ledger last compared the ledger with the vendor billing.',
      Math.floor(now.getTime() / 1000),
    )
  );
}

export function registerLedgerCommands(program: Command, ctx: CliContext): void {
  program
    .command('ledger')
    .description('cost per episode and step, totals, reconciled against the vendor billing (exit 1 on a discrepancy)')
    .option('--week <week>', 'only this ISO week')
    .option('--no-vendor', 'do not ask the vendor for its billing (no credentials needed)')
    .option('--json', 'machine-readable output')
    .option('--metrics-file <path>', 'also write the check as Prometheus text (textfile collector); needs the vendor')
    .action(async (opts: { week?: string; vendor: boolean; json?: boolean; metricsFile?: string }) => {
      if (opts.metricsFile !== undefined && !opts.vendor) {
        throw new PipelineError(ErrorType.InvalidInput, '--metrics-file needs the vendor billing (drop --no-vendor)');
      }
      const weekId = opts.week === undefined ? undefined : parseWeekId(opts.week);
      const episodes = await ctx.getStore().listEpisodes({ weekId });
      const billing = opts.vendor ? await fetchBilling(vendorsFromEnv(), episodes) : null;
      const view = buildLedgerView(episodes, billing);
      if (opts.json) printJson(view);
      else printLedger(view);
      if (opts.metricsFile !== undefined) await writeFileDurable(opts.metricsFile, ledgerMetricsText(view, new Date()));
      const problems = ledgerDiscrepancies(view);
      if (problems > 0) {
        throw new PipelineError(
          ErrorType.InvalidState,
          `${problems} discrepancies between the ledger and the vendor billing`,
        );
      }
    });
}

function printLedger(view: LedgerView): void {
  const money = (cents: number) => formatMoney(cents, view.currency).padStart(14);
  for (const e of view.episodes.filter((x) => x.steps.length > 0)) {
    for (const s of e.steps) {
      console.log(`${e.episode_id.padEnd(14)} ${s.step.padEnd(12)} ${money(s.amount_cents)}  ${s.remote_job_id}`);
    }
    console.log(`${e.episode_id.padEnd(14)} ${'total'.padEnd(12)} ${money(e.total_cents)}`);
  }
  console.log(`${'all'.padEnd(14)} ${'total'.padEnd(12)} ${money(view.total_cents)}`);
  const r = view.reconciliation;
  if (!r) return console.log('vendor billing not checked (--no-vendor)');
  console.log(`vendor billing: ${r.charges_checked} charges checked, ${r.pending.length} pending`);
  for (const c of r.unrecorded_charges)
    console.log(
      `UNRECORDED CHARGE ${c.job_id} (${c.episode_id} ${c.kind}, ${formatMoney(c.amount_cents, view.currency)})`,
    );
  for (const u of r.unbilled_entries) console.log(`UNBILLED LEDGER ENTRY ${u.job_id} (${u.episode_id} ${u.step})`);
  for (const m of r.amount_mismatches) {
    const [ledger, billed] = [m.ledger_cents, m.billed_cents].map((c) => formatMoney(c, view.currency));
    console.log(`AMOUNT MISMATCH ${m.job_id}: ledger ${ledger}, billed ${billed}`);
  }
  const blind = [...new Set(r.unverifiable.map((u) => u.vendor))];
  if (blind.length > 0) {
    console.log(`not checkable: ${r.unverifiable.length} entries at ${blind.join(', ')}, which shows no billing`);
  }
}
