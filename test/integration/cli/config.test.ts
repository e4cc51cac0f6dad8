/**
 * `episodes config` as an operator runs it: each value with where it came from (default, environment, file, flag),
 * and no secret in its output, whichever way it was given (a secret setting, a password or query in a URL, a former
 * name, the Temporal profile's file or variables, libpq's PGPASSWORD).
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ShownSetting } from '../../../src/cli/config-commands';
import { SETTING_NAMES, settingRow } from '../../../src/settings/table';
import { runCli } from '../../../testkit/processes';

interface Report {
  settings: ShownSetting[];
  temporal: ShownSetting[];
  temporal_variables: ShownSetting[];
}

const SECRETS = [
  'vendor-key-SECRET-1',
  'store-pw-SECRET-2',
  'store-query-SECRET-3',
  'hook-token-SECRET-4',
  'temporal-key-SECRET-5',
  'grpc-auth-SECRET-6',
  'pg-password-SECRET-7',
  'toml-key-SECRET-8',
  'old-name-key-SECRET-9',
  'oidc-secret-SECRET-10',
  'codec-auth-SECRET-11',
  'key-data-SECRET-12',
  'future-SECRET-13',
];

describe('episodes config', function () {
  this.timeout(60_000);
  let dir: string;
  let profile: string;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'episodes-config-'));
    profile = path.join(dir, 'temporal.toml');
    await fs.writeFile(profile, `[profile.prod]\naddress = "prod.example:7233"\napi_key = "toml-key-SECRET-8"\n`);
  });
  after(() => fs.rm(dir, { recursive: true, force: true }));

  /** Every other setting unset, so that the parent's environment does not leak into the answer. */
  const clean = Object.fromEntries(SETTING_NAMES.map((n) => [n, '']));

  it('shows each value with its source: default, environment (a former name noted), file, flag', async () => {
    const run = await runCli(['--data-dir', dir, 'config', '--json'], {
      ...clean,
      TEMPORAL_ADDRESS: '',
      TEMPORAL_NAMESPACE: 'media',
      TEMPORAL_CONFIG_FILE: profile,
      TEMPORAL_PROFILE: 'prod',
      EPISODES_LOCK_TIMEOUT_MS: '45000',
      PIPELINE_TIMEZONE: 'Europe/Berlin',
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '', 'deprecation lines go beside their setting, not to stderr');
    const r = JSON.parse(run.stdout) as Report;
    const setting = (name: string) => r.settings.find((s) => s.name === name);
    assert.deepEqual(
      r.settings.map((s) => s.name).filter((n) => n !== 'PGPASSWORD'),
      SETTING_NAMES,
    );
    assert.deepEqual(setting('EPISODES_DATA_DIR'), {
      name: 'EPISODES_DATA_DIR',
      value: dir,
      source: { kind: 'flag', flag: '--data-dir' },
    });
    assert.deepEqual(setting('EPISODES_LOCK_TIMEOUT_MS')?.source, {
      kind: 'environment',
      variable: 'EPISODES_LOCK_TIMEOUT_MS',
    });
    assert.equal(setting('EPISODES_LOCK_TIMEOUT_MS')?.value, '45000');
    assert.deepEqual(setting('EPISODES_TIMEZONE'), {
      name: 'EPISODES_TIMEZONE',
      value: 'Europe/Berlin',
      source: { kind: 'environment', variable: 'PIPELINE_TIMEZONE' },
      note: 'PIPELINE_TIMEZONE is deprecated: use EPISODES_TIMEZONE',
    });
    assert.deepEqual(setting('EPISODES_BUDGET_CENTS'), {
      name: 'EPISODES_BUDGET_CENTS',
      value: '20000',
      source: { kind: 'default' },
    });
    const temporal = Object.fromEntries(r.temporal.map((t) => [t.name, t]));
    assert.equal(temporal.address?.value, 'prod.example:7233');
    assert.deepEqual(temporal.address?.source, { kind: 'file', file: `${profile} [prod]` });
    assert.deepEqual(temporal.namespace?.source, { kind: 'environment', variable: 'TEMPORAL_NAMESPACE' });
    assert.equal(temporal['api key']?.value, '<secret>');
  });

  it('never shows a secret, in text, JSON or help', async () => {
    const env = {
      ...clean,
      EPISODES_VENDOR_API_KEY: 'vendor-key-SECRET-1',
      VENDOR_API_KEY: 'old-name-key-SECRET-9',
      EPISODES_STORE_URL: 'postgres://app:store-pw-SECRET-2@db.example/episodes?password=store-query-SECRET-3',
      EPISODES_REVIEW_WEBHOOK_URL: 'https://hooks.example/services/hook-token-SECRET-4',
      TEMPORAL_API_KEY: 'temporal-key-SECRET-5',
      TEMPORAL_GRPC_META_AUTHORIZATION: 'Bearer grpc-auth-SECRET-6',
      PGPASSWORD: 'pg-password-SECRET-7',
      TEMPORAL_CONFIG_FILE: profile,
      TEMPORAL_PROFILE: 'prod',
      EPISODES_REVIEW_OIDC_CLIENT_SECRET: 'oidc-secret-SECRET-10',
      TEMPORAL_CODEC_AUTH: 'Bearer codec-auth-SECRET-11',
      TEMPORAL_TLS_CLIENT_KEY_DATA: 'key-data-SECRET-12',
      // A variable a later Temporal CLI may add: secret until known otherwise.
      TEMPORAL_SOMETHING_NEW: 'future-SECRET-13',
      TEMPORAL_CODEC_ENDPOINT: 'https://codec.example/',
    };
    for (const name of SETTING_NAMES.filter((n) => settingRow(n).secret !== undefined)) {
      assert.ok(name in env, `the secret setting ${name} is in this test`);
    }
    const runs = await Promise.all([
      runCli(['config'], env),
      runCli(['config', '--json'], env),
      runCli(['config', '--help'], env),
      runCli(['--help'], env),
    ]);
    for (const run of runs) {
      assert.equal(run.code, 0, run.stderr);
      for (const secret of SECRETS) {
        assert.ok(!run.stdout.includes(secret) && !run.stderr.includes(secret), `${secret} shown`);
      }
    }
    const r = JSON.parse(runs[1].stdout) as Report;
    const value = (name: string) => r.settings.find((s) => s.name === name)?.value;
    assert.equal(value('EPISODES_VENDOR_API_KEY'), '<secret>');
    assert.equal(value('EPISODES_STORE_URL'), 'postgres://app:<secret>@db.example/episodes?<secret>');
    assert.equal(value('PGPASSWORD'), '<secret>');
    assert.match(runs[0].stdout, /TEMPORAL_API_KEY = <secret>/);
    assert.match(runs[0].stdout, /TEMPORAL_CODEC_AUTH = <secret>/);
    const variable = (name: string) => r.temporal_variables.find((s) => s.name === name)?.value;
    assert.equal(variable('TEMPORAL_CODEC_ENDPOINT'), 'https://codec.example/', 'not a secret: shown');
    assert.equal(variable('TEMPORAL_PROFILE'), 'prod');
    assert.match(runs[2].stdout, /EPISODES_VENDOR_API_KEY/);
  });
});
