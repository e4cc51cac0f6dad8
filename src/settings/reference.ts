/**
 * The table as people read it: the docs' configuration table (docs/configuration.md, between its markers), the
 * `--help` lines, and each value as `episodes config` shows it (secrets redacted).
 */
import { SETTING_NAMES, settingDefault, settingRow, type SettingName } from './table';

export const REFERENCE_BEGIN =
  '<!-- settings table: generated from src/settings/table.ts by `npm run docs:settings` -->';
export const REFERENCE_END = '<!-- end of settings table -->';

/** How a default reads: the row's text, else the schema's default, else `unset`. */
export function defaultText(name: SettingName): string {
  const row = settingRow(name);
  if (row.defaultText !== undefined) return row.defaultText;
  const value: unknown = settingDefault(name);
  return value === undefined ? 'unset' : asText(value);
}

/** Settings are strings and numbers. */
function asText(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : JSON.stringify(value);
}

/** A value as it may be shown: a secret never, a URL without its credentials and query. */
export function shownValue(name: SettingName, value: unknown): string {
  if (value === undefined) return defaultText(name);
  const secret = settingRow(name).secret;
  if (secret === 'value') return '<secret>';
  const text = asText(value);
  return secret === 'url' ? redactUrl(text) : text;
}

/** `scheme://user@host:port/path`, with any password replaced and any query cut; `<secret>` when it does not parse. */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return '<secret>';
  }
  const user = url.username ? `${url.username}${url.password ? ':<secret>' : ''}@` : '';
  const host = url.host || '';
  return `${url.protocol}//${user}${host}${url.pathname}${url.search ? '?<secret>' : ''}`;
}

/** The docs' table: one row per setting, grouped as in the table. */
export function settingsMarkdown(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const lines = ['| setting | for | default | secret | meaning |', '| --- | --- | --- | --- | --- |'];
  for (const name of SETTING_NAMES) {
    const row = settingRow(name);
    const formerly = row.formerly?.length ? ` (formerly ${row.formerly.map((f) => `\`${f}\``).join(', ')})` : '';
    const secret = row.secret === 'value' ? 'yes' : row.secret === 'url' ? 'its credentials' : '';
    lines.push(
      `| \`${name}\` | ${row.group} | ${cell(defaultText(name))} | ${secret} | ${cell(row.meaning)}${formerly} |`,
    );
  }
  return lines.join('\n');
}

/** `doc` with the text between the markers replaced by the current table (the markers must be there, once). */
export function withSettingsTable(doc: string): string {
  const begin = doc.indexOf(REFERENCE_BEGIN);
  const end = doc.indexOf(REFERENCE_END);
  if (begin < 0 || end < begin) throw new Error('the settings table markers are missing');
  // Unpadded: a padded table is mostly spaces.
  const table = `<!-- prettier-ignore -->\n${settingsMarkdown()}`;
  return `${doc.slice(0, begin + REFERENCE_BEGIN.length)}\n\n${table}\n\n${doc.slice(end)}`;
}

/** A flag's help that sets `name`: its meaning, variable and default. */
export function optionHelp(name: SettingName): string {
  const fallback = defaultText(name);
  return `${settingRow(name).meaning} (env ${name}${fallback === 'unset' ? '' : `, default ${fallback}`})`;
}

/** Help text: every setting with its default and meaning, one or two lines each. */
export function settingsHelp(): string {
  const width = Math.max(...SETTING_NAMES.map((n) => n.length));
  const lines = ['Settings (environment variables; `episodes config` shows the ones in effect):'];
  for (const name of SETTING_NAMES) {
    const row = settingRow(name);
    const formerly = row.formerly?.length ? `; formerly ${row.formerly.join(', ')}` : '';
    lines.push(`  ${name.padEnd(width)}  ${row.meaning} (default ${defaultText(name)}${formerly})`);
  }
  lines.push('  TEMPORAL_*  the Temporal connection: the temporal CLI profile (TEMPORAL_ADDRESS, ..., TOML file)');
  return lines.join('\n');
}
