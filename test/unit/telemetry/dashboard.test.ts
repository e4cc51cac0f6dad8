/**
 * deploy/grafana/weekly-media.json, as Grafana provisions it (no Grafana server here): a dashboard with a uid, a
 * Prometheus data source variable every panel uses, the panels operators look for, and queries that read only metrics
 * a worker exports (exported-metrics.ts, checked against a real worker by worker-telemetry.test.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { REPO_ROOT } from '../../../testkit/temporal';
import { exportedNames, metricNamesIn } from '../../../testkit/exported-metrics';

const source = z.object({ type: z.literal('prometheus'), uid: z.literal('${datasource}') });
const dashboard = z.object({
  uid: z.string().min(1),
  title: z.string().min(1),
  schemaVersion: z.number().int(),
  templating: z.object({ list: z.array(z.object({ name: z.string(), type: z.string(), query: z.string() })) }),
  panels: z
    .array(
      z.object({
        title: z.string(),
        datasource: source,
        targets: z.array(z.object({ expr: z.string().min(1), datasource: source })).min(1),
      }),
    )
    .min(1),
});

describe('the Grafana dashboard: provisioning format, and queries on exported metrics only', () => {
  const file = path.join(REPO_ROOT, 'deploy', 'grafana', 'weekly-media.json');
  const parsed = dashboard.parse(JSON.parse(readFileSync(file, 'utf8')));

  it('has the Prometheus data source variable and the panels operators look for', () => {
    assert.ok(parsed.templating.list.some((v) => v.name === 'datasource' && v.type === 'datasource'));
    const titles = parsed.panels.map((p) => p.title).join('\n');
    for (const want of [
      /Episodes by state/,
      /allocated/,
      /Spend per week/,
      /Paid steps by outcome/,
      /Vendor latency/,
      /Workers/,
    ]) {
      assert.match(titles, want);
    }
  });

  it('every query names only metrics a worker exports', () => {
    const exported = exportedNames();
    for (const panel of parsed.panels) {
      for (const { expr } of panel.targets) {
        const names = metricNamesIn(expr);
        assert.ok(names.length > 0, `${panel.title}: ${expr}`);
        for (const n of names) assert.ok(exported.has(n), `${panel.title} reads ${n}, which no worker exports`);
      }
    }
  });
});
