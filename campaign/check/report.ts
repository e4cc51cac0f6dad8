/** The checker's table: per fault kind injected / hit in flight / recovered, then each invariant with its count. */
import { markdownTable } from '../../testkit/doc-tables';
import type { CheckResult, KindCount } from './checker';

export interface ReportHeader {
  store: string;
  /** `--vendor` (absent in reports before it: native). */
  vendor?: string;
  seed: number;
  weeks: number;
  perWeek: number;
  wallSeconds: number;
  replay: string;
  /** The commit it ran on (absent in reports before it). */
  commit?: string;
  machine: string;
  titles: Record<string, string>;
}

/** The fault kinds with their counts and a total, the invariants with their violations, then one line of facts. */
export function campaignTable(r: CheckResult, h: ReportHeader): string {
  const kinds = [...r.faults].sort((a, b) => a.kind.localeCompare(b.kind));
  const sum = (f: (k: KindCount) => number) => `**${kinds.reduce((n, k) => n + f(k), 0)}**`;
  const faults = markdownTable(
    ['fault', 'injected', 'hit in flight', 'recovered'],
    [
      ...kinds.map((k) => [h.titles[k.kind] ?? k.kind, k.injected, k.hit, k.recovered]),
      ['**total**', sum((k) => k.injected), sum((k) => k.hit), sum((k) => k.recovered)],
    ],
  );
  const invariants = markdownTable(
    ['invariant', 'violations'],
    r.invariants.map((i) => [i.name, i.violations]),
  );
  const facts =
    `${r.counts.episodes} episodes (${r.counts.completed} completed), ${r.counts.charges} charges = ` +
    `${r.counts.ledgerEntries} ledger entries, ledger - billing = ${r.ledgerMinusBillingCents} cents, ` +
    `${r.replayed} histories replayed${accountedGaps(r)}. Store ${h.store}${h.vendor && h.vendor !== 'native' ? `, vendor ${h.vendor}` : ''}, ${h.weeks} weeks x ${h.perWeek}, seed ${h.seed}, ` +
    `wall ${formatDuration(h.wallSeconds)}${h.commit ? `, commit ${h.commit}` : ''}; ${h.machine}. Replay: \`${h.replay}\`.`;
  return [faults, invariants, facts].join('\n\n');
}

/** The sequence gaps the checker accounted for, named with their evidence (the report must show them). */
function accountedGaps(r: CheckResult): string {
  const gaps = r.accountedGaps;
  return gaps.length === 0 ? '' : `; ${gaps.length} sequence gap(s) accounted, not counted: ${gaps.join('; ')}`;
}

export function violations(r: Pick<CheckResult, 'invariants'>): number {
  return r.invariants.reduce((n, i) => n + i.violations, 0);
}

/** The campaign's exit code: 1 on any violation (a fault that failed or never hit included), else 0. */
export function exitCode(r: Pick<CheckResult, 'invariants'>): 0 | 1 {
  return violations(r) > 0 ? 1 : 0;
}

/** Each violated invariant's first details, for the console. */
export function violationDetails(r: CheckResult, max = 10): string {
  return r.invariants
    .filter((i) => i.violations > 0)
    .map(
      (i) =>
        `${i.name}: ${i.violations}\n${i.details
          .slice(0, max)
          .map((d) => `  - ${d}`)
          .join('\n')}`,
    )
    .join('\n');
}

function formatDuration(s: number): string {
  const m = Math.floor(s / 60);
  return m > 0 ? `${m} min ${Math.round(s % 60)} s` : `${Math.round(s)} s`;
}
