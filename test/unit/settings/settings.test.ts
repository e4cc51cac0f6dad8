/**
 * The settings table: every variable src/ reads is a row, the docs' table is the table, and the reader's rules hold
 * (empty is unset, the row's name wins, a former name works with one deprecation line, a bad value names its variable).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { readSettings, resolveSetting, setDeprecationSink } from '../../../src/settings/read';
import { redactUrl, settingsHelp, withSettingsTable } from '../../../src/settings/reference';
import { SETTING_NAMES, type SETTINGS, settingDefault, settingRow } from '../../../src/settings/table';
import { REPO_ROOT } from '../../../testkit/temporal';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** Collects deprecation lines instead of printing them. */
function capturingDeprecations(): { lines: string[]; restore(): void } {
  const lines: string[] = [];
  const previous = setDeprecationSink((line) => lines.push(line));
  return { lines, restore: () => setDeprecationSink(previous) };
}

describe('settings table', () => {
  it('names every EPISODES_ variable src/ mentions, and src/ reads no variable by hand outside the reader', () => {
    const known = new Set<string>(SETTING_NAMES);
    const unknown: string[] = [];
    const byHand: string[] = [];
    for (const file of sourceFiles(path.join(REPO_ROOT, 'src'))) {
      const text = readFileSync(file, 'utf8');
      const at = path.relative(REPO_ROOT, file);
      for (const [name] of text.matchAll(/\bEPISODES_[A-Z0-9_]*[A-Z0-9]\b/g)) {
        if (!known.has(name)) unknown.push(`${at}: ${name}`);
      }
      if (at === 'src/settings/read.ts') continue;
      for (const m of text.matchAll(/\benv(?:\.|\[')(EPISODES_\w+|VENDOR_\w+|PIPELINE_\w+|EPISODE_\w+|DEMO_\w+)/g)) {
        byHand.push(`${at}: ${m[0]}`);
      }
    }
    assert.deepEqual(unknown, []);
    assert.deepEqual(byHand, []);
  });

  it('has for each row a meaning, a default that parses, and former names outside the EPISODES_ prefix', () => {
    const formers = new Set<string>();
    for (const name of SETTING_NAMES) {
      const row = settingRow(name);
      assert.ok(row.meaning.length > 10, name);
      assert.doesNotThrow(() => settingDefault(name), name);
      for (const old of row.formerly ?? []) {
        assert.ok(!old.startsWith('EPISODES_') && !formers.has(old), `${name}: ${old}`);
        formers.add(old);
      }
    }
  });

  it('is the table in docs/configuration.md (npm run docs:settings writes it)', () => {
    const doc = readFileSync(path.join(REPO_ROOT, 'docs', 'configuration.md'), 'utf8');
    assert.equal(doc, withSettingsTable(doc), 'docs/configuration.md is behind src/settings/table.ts');
  });

  it('is the help: every setting with its default', () => {
    const help = settingsHelp();
    for (const name of SETTING_NAMES) assert.match(help, new RegExp(`\\b${name}\\b`));
    assert.match(help, /EPISODES_BUDGET_CENTS .*default 20000; formerly EPISODE_BUDGET_CENTS/);
  });
});

describe('reading settings', () => {
  it('applies the default when a variable is unset or empty', () => {
    const s = readSettings(['EPISODES_LOCK_TIMEOUT_MS', 'EPISODES_STORE_URL'], { EPISODES_LOCK_TIMEOUT_MS: '' });
    assert.deepEqual(s, { EPISODES_LOCK_TIMEOUT_MS: 30_000, EPISODES_STORE_URL: undefined });
    assert.deepEqual(resolveSetting('EPISODES_TIMEZONE', {}).source, { kind: 'default' });
  });

  it('reads a former name with one deprecation line per process; the new name wins when both are set', () => {
    const captured = capturingDeprecations();
    try {
      const env = { EPISODE_BUDGET_CENTS: '1234' };
      const first = resolveSetting('EPISODES_BUDGET_CENTS', env);
      assert.equal(first.value, 1234);
      assert.deepEqual(first.source, { kind: 'environment', variable: 'EPISODE_BUDGET_CENTS' });
      resolveSetting('EPISODES_BUDGET_CENTS', env);
      assert.deepEqual(captured.lines, ['EPISODE_BUDGET_CENTS is deprecated: use EPISODES_BUDGET_CENTS']);
      const both = resolveSetting('EPISODES_VENDOR_TIMEOUT_MS', {
        VENDOR_TIMEOUT_MS: '100',
        EPISODES_VENDOR_TIMEOUT_MS: '200',
      });
      assert.equal(both.value, 200);
    } finally {
      captured.restore();
    }
  });

  it('every former name still works', () => {
    const captured = capturingDeprecations();
    try {
      for (const name of SETTING_NAMES) {
        for (const old of settingRow(name).formerly ?? []) {
          const sample = name.endsWith('_PORT') ? '4321' : name.endsWith('_MS') || name.endsWith('_CENTS') ? '77' : 'v';
          const r = resolveSetting(name, { [old]: sample });
          assert.equal(String(r.value), sample, `${old} for ${name}`);
        }
      }
    } finally {
      captured.restore();
    }
  });

  it('refuses a malformed value as InvalidInput naming the variable it came from, never quoting it', () => {
    const captured = capturingDeprecations();
    try {
      for (const [env, variable] of [
        [{ EPISODES_LOCK_STALE_MS: 'soon-SECRET' }, 'EPISODES_LOCK_STALE_MS'],
        [{ VENDOR_TIMEOUT_MS: '-5-SECRET' }, 'VENDOR_TIMEOUT_MS'],
      ] as const) {
        const name = variable.startsWith('EPISODES_') ? variable : 'EPISODES_VENDOR_TIMEOUT_MS';
        assert.throws(
          () => resolveSetting(name as keyof typeof SETTINGS, env),
          (e) =>
            isPipelineError(e, ErrorType.InvalidInput) && e.message.includes(variable) && !e.message.includes('SECRET'),
        );
      }
    } finally {
      captured.restore();
    }
  });

  it('shows a URL without its password or query', () => {
    assert.equal(
      redactUrl('postgres://app:pw-SECRET@db.example:5432/episodes?password=q-SECRET'),
      'postgres://app:<secret>@db.example:5432/episodes?<secret>',
    );
    assert.equal(redactUrl('not a url SECRET'), '<secret>');
  });
});
