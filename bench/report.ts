/** The results as one Markdown table, readable in a terminal (docs/benchmarks.md gets its tables from doc-tables.ts). */
import type { BenchResults, MeasuredRow, Profile, Row } from './results';

/** Metrics shown in their own columns or not at all; the rest go to "other". */
const OWN_COLUMNS = new Set(['n', 'p50_ms', 'p99_ms', 'mean_ms']);

const UNITS: Record<string, (v: number) => string> = {
  p50_vs_floor: (v) => `${fmt(v)}x floor`,
  p50_vs_smallest: (v) => `${fmt(v)}x smallest`,
  p50_vs_protocol_floor: (v) => `${fmt(v)}x protocol floor`,
  allocs_per_s: (v) => `${fmt(v)} alloc/s`,
  runs_per_s: (v) => `${fmt(v)} runs/s`,
  drain_s: (v) => `drain ${fmt(v)} s`,
  p50_vs_workflow_floor: (v) => `${fmt(v)}x wf floor`,
};

export function fmt(v: number): string {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function other(row: MeasuredRow): string {
  return Object.entries(row.metrics)
    .filter(([k]) => !OWN_COLUMNS.has(k))
    .map(([k, v]) => (UNITS[k] ?? ((x: number) => `${k.replace(/_/g, ' ')} ${fmt(x)}`))(v))
    .join(', ');
}

function cells(row: Row): string[] {
  if (row.status !== 'measured') return [row.section, row.label, '', '', '', row.reason, '', row.status.toUpperCase()];
  const m = row.metrics;
  const failed = row.checks.filter((c) => !c.pass);
  const targets = row.targets.map((t) => `${t.name} ${fmt(t.value)} ≤ ${fmt(t.limit)}`).join('; ');
  const verdicts = [
    ...row.targets.map((t) => (t.pass ? 'PASS' : 'MISS')),
    ...(failed.length ? [`CHECK FAILED: ${failed.map((c) => `${c.name} (${c.detail})`).join('; ')}`] : []),
  ];
  const checks = row.checks.length && !failed.length ? ` (${row.checks.length} checks ok)` : '';
  return [
    row.section,
    row.label,
    m.n === undefined ? '' : String(m.n),
    m.p50_ms === undefined ? '' : fmt(m.p50_ms),
    m.p99_ms === undefined ? '' : fmt(m.p99_ms),
    other(row) + checks,
    targets,
    verdicts.join(', '),
  ];
}

export function renderTable(results: BenchResults): string {
  const head = ['section', 'row', 'n', 'p50 ms', 'p99 ms', 'other', 'target', 'result'];
  const body = results.rows.map(cells);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

export function describeMachine(results: BenchResults): string {
  const m = results.machine;
  const d = m.disk;
  return [
    `${m.cpu_model}, ${m.cores} cores, ${Math.round(m.memory_mib / 1024)} GiB RAM, Node ${m.node}, ${m.os}`,
    `disk: ${d.fs_type} (${d.mount_options}) on ${d.device}${d.model ? `, ${d.model}` : ''}` +
      `${d.rotational === null ? '' : `, queue/rotational=${d.rotational ? 1 : 0}`}; data under ${d.path}`,
    `load average (1/5/15 min): ${m.load_avg_start.join(' / ')} at start, ${m.load_avg_end.join(' / ')} at end`,
  ].join('\n');
}

export function renderProfile(p: Profile): string {
  const lines = Object.entries(p.parts_ms)
    .sort((a, b) => b[1] - a[1])
    .map(([k, ms]) => {
      const calls = p.calls[k];
      return (
        `  ${k.padEnd(40)} ${fmt(ms).padStart(7)} ms  ${((100 * ms) / p.total_ms).toFixed(0).padStart(3)}%` +
        (calls === undefined ? '' : `  ${fmt(calls)} calls`)
      );
    });
  return [`profile of ${p.row}: ${p.what}; mean of ${p.samples}, ${fmt(p.total_ms)} ms each`, ...lines].join('\n');
}

export function printTable(results: BenchResults): void {
  console.log(
    `\nweekly-media-pipeline benchmarks (${results.mode}), ${results.started_at}, commit ` +
      `${results.git_commit.slice(0, 10)}${results.git_dirty ? ' (uncommitted changes)' : ''}, ` +
      `${results.duration_s.toFixed(0)} s\n${describeMachine(results)}\n`,
  );
  console.log(renderTable(results));
  for (const p of results.profiles) console.log(`\n${renderProfile(p)}`);
}
