/**
 * deploy/prometheus/alerts.yml, checked by Debian's promtool (`check rules`, and `test rules` on alerts.test.yml), and
 * read here for what promtool does not check: each alert has a severity, a summary and a runbook link to a heading of
 * docs/operations.md, is unit-tested once firing and once not, and reads only metrics a worker exports.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promtool } from '../../../testkit/promtool';
import { REPO_ROOT } from '../../../testkit/temporal';
import { exportedNames, metricNamesIn } from '../../../testkit/exported-metrics';

const RULES = 'deploy/prometheus/alerts.yml';
const TESTS = 'deploy/prometheus/alerts.test.yml';
const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');

interface Alert {
  name: string;
  block: string;
  expr: string;
}

/** The rules file's alerts, one `- alert:` block each (the file keeps one `expr:` line per rule). */
export function alertsIn(yaml: string): Alert[] {
  return yaml
    .split(/^\s+- alert: /m)
    .slice(1)
    .map((block) => ({
      name: block.slice(0, block.indexOf('\n')).trim(),
      block,
      expr: /^\s+expr: (.*)$/m.exec(block)?.[1] ?? '',
    }));
}

/** GitHub's anchor of each markdown heading. */
function anchors(markdown: string): Set<string> {
  const heads = markdown.match(/^#+ .*$/gm) ?? [];
  return new Set(
    heads.map((h) =>
      h
        .replace(/^#+ /, '')
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('alert rules: promtool checks and unit tests, and every alert documented and tested', () => {
  const alerts = alertsIn(read(RULES));

  it('promtool check rules', () => {
    const r = promtool(['check', 'rules', RULES]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, new RegExp(`SUCCESS: ${alerts.length} rules found`));
  });

  it('promtool test rules', () => {
    const r = promtool(['test', 'rules', TESTS]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /SUCCESS/);
  });

  it('each alert: severity, summary, a runbook heading in docs/operations.md, metrics a worker exports', () => {
    assert.ok(alerts.length >= 7);
    const headings = anchors(read('docs/operations.md'));
    const exported = exportedNames();
    for (const a of alerts) {
      assert.match(a.block, /^\s+severity: (critical|warning)$/m, a.name);
      assert.match(a.block, /^\s+summary: \S/m, a.name);
      const runbook = /^\s+runbook_url: docs\/operations\.md#(\S+)$/m.exec(a.block)?.[1];
      assert.ok(runbook && headings.has(runbook), `${a.name}: runbook ${runbook} is a heading of docs/operations.md`);
      const names = metricNamesIn(a.expr);
      assert.ok(names.length > 0, a.name);
      for (const n of names) assert.ok(exported.has(n), `${a.name} reads ${n}, which no worker exports`);
    }
  });

  it('each alert is unit-tested once firing and once not', () => {
    const cases = read(TESTS)
      .split(/^\s+- (?:\{ )?eval_time: /m)
      .slice(1);
    for (const a of alerts) {
      const mine = cases.filter((c) => new RegExp(`alertname: ${a.name}\\b`).test(c));
      assert.ok(
        mine.some((c) => /exp_alerts: \[\]/.test(c)),
        `${a.name}: no case where it stays silent`,
      );
      assert.ok(
        mine.some((c) => /exp_alerts:\s*\n\s+- exp_labels:/.test(c)),
        `${a.name}: no case where it fires`,
      );
    }
  });
});
