/**
 * `episodes config`: the configuration in effect and where each value came from (default, environment, file, flag),
 * secrets redacted: every row of the settings table, the Temporal connection as the profile resolves it, and the
 * TEMPORAL_* variables that are set. Reads nothing it would not read to run (never the vendor key's file).
 */
import type { Command } from 'commander';
import { resolveSetting, setDeprecationSink, type SettingSource } from '../settings/read';
import { settingsHelp, settingsMarkdown, shownValue } from '../settings/reference';
import { isSecretTemporalVariable, SETTING_NAMES, type SettingName } from '../settings/table';
import { tlsEnabled } from '../process/temporal-connection';
import { printJson, type CliContext } from './context';

export interface ShownSetting {
  name: string;
  value: string;
  source: SettingSource;
  /** A former name was used: the line that says so. */
  note?: string;
}

/** Global flags that set a setting for this command. */
const FLAGS: Partial<Record<SettingName, { flag: string; option: string }>> = {
  EPISODES_DATA_DIR: { flag: '--data-dir', option: 'dataDir' },
  EPISODES_STORE_URL: { flag: '--store-url', option: 'storeUrl' },
};

export function registerConfigCommands(program: Command, ctx: CliContext): void {
  program
    .command('config')
    .description('print the configuration in effect and where each value came from (secrets redacted)')
    .option('--json', 'machine-readable output')
    .option('--reference', 'print the settings table as Markdown (docs/configuration.md)')
    .addHelpText('after', `\n${settingsHelp()}`)
    .action((opts: { json?: boolean; reference?: boolean }) => {
      if (opts.reference) return void console.log(settingsMarkdown());
      const report = configReport(program.opts<Record<string, string | undefined>>(), ctx);
      if (opts.json) return printJson(report);
      for (const [title, rows] of [
        ['settings', report.settings],
        ['Temporal connection (the temporal CLI profile)', report.temporal],
        ['TEMPORAL_* variables set', report.temporal_variables],
      ] as const) {
        console.log(`${title}:`);
        if (rows.length === 0) console.log('  (none)');
        for (const r of rows)
          console.log(`  ${r.name} = ${r.value}  (${describeSource(r.source)})${r.note ? `; ${r.note}` : ''}`);
      }
    });
}

export function configReport(
  flags: Record<string, string | undefined>,
  ctx: CliContext,
  env: NodeJS.ProcessEnv = process.env,
): { settings: ShownSetting[]; temporal: ShownSetting[]; temporal_variables: ShownSetting[] } {
  const notes = new Map<string, string>();
  // Deprecation lines belong beside their setting here, not on stderr.
  const previous = setDeprecationSink((line) => notes.set(line.split(' ')[0]!, line));
  try {
    const settings = SETTING_NAMES.map((name) => shownSetting(name, flags, env, notes));
    // libpq's own variable, which the PostgreSQL store's connections read (a URL without a password).
    if (env.PGPASSWORD)
      settings.push({ name: 'PGPASSWORD', value: '<secret>', source: { kind: 'environment', variable: 'PGPASSWORD' } });
    return { settings, temporal: temporalRows(ctx, env), temporal_variables: temporalVariables(env) };
  } finally {
    setDeprecationSink(previous);
  }
}

function shownSetting(
  name: SettingName,
  flags: Record<string, string | undefined>,
  env: NodeJS.ProcessEnv,
  notes: Map<string, string>,
): ShownSetting {
  const flag = FLAGS[name];
  const flagValue = flag && flags[flag.option];
  if (flag && flagValue !== undefined)
    return { name, value: shownValue(name, flagValue), source: { kind: 'flag', flag: flag.flag } };
  let resolved;
  try {
    resolved = resolveSetting(name, env);
  } catch (e) {
    // The message names the variable and never quotes its value.
    return { name, value: 'invalid', source: { kind: 'environment', variable: name }, note: (e as Error).message };
  }
  const { source } = resolved;
  const note = source.kind === 'environment' ? notes.get(source.variable) : undefined;
  return { name, value: shownValue(name, resolved.value), source, ...(note ? { note } : {}) };
}

/** Address, namespace, API key and TLS as the profile resolves them, each with where it came from. */
function temporalRows(ctx: CliContext, env: NodeJS.ProcessEnv): ShownSetting[] {
  let s;
  try {
    s = ctx.config.temporal;
  } catch (e) {
    return [{ name: 'profile', value: 'unreadable', source: { kind: 'default' }, note: (e as Error).message }];
  }
  const file: SettingSource = {
    kind: 'file',
    file: `${s.configFile ?? '~/.config/temporalio/temporal.toml'} [${s.profile}]`,
  };
  const from = (variable: string, inProfile: boolean): SettingSource =>
    env[variable] ? { kind: 'environment', variable } : inProfile ? file : { kind: 'default' };
  const tlsVariable = Object.keys(env).find((k) => k.startsWith('TEMPORAL_TLS') && env[k]);
  return [
    { name: 'address', value: s.address, source: from('TEMPORAL_ADDRESS', s.addressConfigured) },
    { name: 'namespace', value: s.namespace, source: from('TEMPORAL_NAMESPACE', s.namespace !== 'default') },
    {
      name: 'api key',
      value: s.apiKey === undefined ? 'unset' : '<secret>',
      source: from('TEMPORAL_API_KEY', s.apiKey !== undefined),
    },
    {
      name: 'TLS',
      value: tlsEnabled(s) ? 'on' : 'off',
      source: from(tlsVariable ?? 'TEMPORAL_TLS', s.tls !== undefined),
    },
    {
      name: 'connect timeout ms',
      value: String(s.connectTimeoutMs),
      source: resolveSetting('EPISODES_CONNECT_TIMEOUT_MS', env).source,
    },
  ];
}

function temporalVariables(env: NodeJS.ProcessEnv): ShownSetting[] {
  return Object.keys(env)
    .filter((k) => k.startsWith('TEMPORAL_') && env[k] !== undefined)
    .sort()
    .map((variable) => ({
      name: variable,
      value: isSecretTemporalVariable(variable) ? '<secret>' : env[variable]!,
      source: { kind: 'environment', variable },
    }));
}

function describeSource(source: SettingSource): string {
  switch (source.kind) {
    case 'default':
      return 'default';
    case 'environment':
      return `environment ${source.variable}`;
    case 'file':
      return `file ${source.file}`;
    case 'flag':
      return `flag ${source.flag}`;
  }
}
