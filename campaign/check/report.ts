/** The checker's table: per fault kind injected / hit in flight / recovered, then each invariant with its count. */
import type { CheckResult } from './checker';

export interface ReportHeader {
  store: string;
  seed: number;
  weeks: number;
  perWeek: number;
  wallSeconds: number;
  replay: string;
  machine: string;
  titles: Record<string, string>;
}

export function markdownTable(r: CheckResult, h: ReportHeader): string {
  const kinds = [...r.faults].sort((a, b) => a.kind.localeCompare(b.kind));
  const total = kinds.reduce((t, k) => ({ i: t.i + k.injected, h: t.h + k.hit, r: t.r + k.recovered }), {
    i: 0,
    h: 0,
    r: 0,
  });
  const rows = [
    '| fault | injected | hit in flight | recovered |',
    '| --- | --: | --: | --: |',
    ...kinds.map((k) => `| ${h.titles[k.kind] ?? k.kind} | ${k.injected} | ${k.hit} | ${k.recovered} |`),
    `| **total** | **${total.i}** | **${total.h}** | **${total.r}** |`,
    '',
    '| invariant | violations |',
    '| --- | --: |',
    ...r.invariants.map((i) => `| ${i.name} | ${i.violations} |`),
    '',
    `${r.counts.episodes} episodes (${r.counts.completed} completed), ${r.counts.charges} charges = ` +
      `${r.counts.ledgerEntries} ledger entries, ledger - billing = ${r.ledgerMinusBillingCents} cents, ` +
      `${r.replayed} histories replayed. Store ${h.store}, ${h.weeks} weeks x ${h.perWeek}, seed ${h.seed}, ` +
      `wall ${formatDuration(h.wallSeconds)}; ${h.machine}. Replay: \`${h.replay}\`.`,
  ];
  return rows.join('\n');
}

export function violations(r: CheckResult): number {
  return r.invariants.reduce((n, i) => n + i.violations, 0);
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
