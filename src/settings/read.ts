/**
 * Reading settings from the environment, by the table's rules: an empty variable counts as unset (`VAR= cmd`), the
 * row's name wins over its former names, a former name still works with one deprecation line per process, and a
 * malformed value is `InvalidInput` naming the variable, never quoting it (it may be a secret).
 */
import { PipelineError, ErrorType } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import { SETTINGS, settingRow, type SettingName, type SettingValue } from './table';

/** Where a value in effect came from. */
export type SettingSource =
  | { kind: 'default' }
  | { kind: 'environment'; variable: string }
  | { kind: 'file'; file: string }
  | { kind: 'flag'; flag: string };

export interface ResolvedSetting<N extends SettingName = SettingName> {
  name: N;
  value: SettingValue<N>;
  source: SettingSource;
}

const warned = new Set<string>();
let deprecationSink = (line: string): void => void process.stderr.write(`warning: ${line}\n`);

/** Where deprecation lines go (default stderr); returns the previous sink. For tests and for `episodes config`. */
export function setDeprecationSink(sink: (line: string) => void): (line: string) => void {
  const previous = deprecationSink;
  deprecationSink = sink;
  return previous;
}

/** The variable that sets `name`: its own, else the first former name that is set (with its deprecation line). */
function variableOf(name: SettingName, env: NodeJS.ProcessEnv): string | undefined {
  if (isSet(env[name])) return name;
  const former = settingRow(name).formerly?.find((old) => isSet(env[old]));
  if (former !== undefined && !warned.has(former)) {
    warned.add(former);
    deprecationSink(`${former} is deprecated: use ${name}`);
  }
  return former;
}

function isSet(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

export function resolveSetting<N extends SettingName>(
  name: N,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedSetting<N> {
  const variable = variableOf(name, env);
  const parsed = SETTINGS[name].schema.safeParse(variable === undefined ? undefined : env[variable]);
  if (!parsed.success) {
    const { message } = firstIssue(parsed.error);
    throw new PipelineError(ErrorType.InvalidInput, `invalid ${variable ?? name}: ${message}`, { setting: name });
  }
  const source: SettingSource = variable === undefined ? { kind: 'default' } : { kind: 'environment', variable };
  return { name, value: parsed.data as SettingValue<N>, source };
}

/** The values of `names`, as a loader wants them: `readSettings(['EPISODES_LOCK_TIMEOUT_MS'], env).EPISODES_LOCK_...`. */
export function readSettings<const N extends SettingName>(
  names: readonly N[],
  env: NodeJS.ProcessEnv = process.env,
): { [K in N]: SettingValue<K> } {
  const values: Partial<Record<SettingName, unknown>> = {};
  for (const name of names) values[name] = resolveSetting(name, env).value;
  return values as { [K in N]: SettingValue<K> };
}

/** One setting's value. */
export function readSetting<N extends SettingName>(name: N, env: NodeJS.ProcessEnv = process.env): SettingValue<N> {
  return resolveSetting(name, env).value;
}
