/**
 * The vendor API key. Read lazily, only when `load()` is called, so that a worker or CLI command that never reaches the
 * paid boundary never needs (or touches) the secret. No message here ever contains the key itself.
 */
import { promises as fs } from 'node:fs';
import { PipelineError, ErrorType } from '../domain/errors';
import { readSetting, resolveSetting } from '../settings/read';

export interface CredentialsLoader {
  load(): Promise<string>;
}

/** Header-safe and single-line: a key with whitespace inside is a copy-paste accident, not a key. */
const API_KEY_PATTERN = /^[\x21-\x7e]{8,512}$/;

export interface EnvCredentialsOptions {
  /** Where the group/other-readable key file warning goes (default: stderr). */
  warn?: (message: string) => void;
  /** The pair of settings holding the key, and its name in messages (default: the native vendor's API key). */
  settings?: KeySettings;
}

/** A key set directly or by a file, as each vendor's key is (same rules for all). */
export interface KeySettings {
  key: 'EPISODES_VENDOR_API_KEY' | 'EPISODES_FAL_KEY' | 'EPISODES_REPLICATE_TOKEN';
  file: 'EPISODES_VENDOR_API_KEY_FILE' | 'EPISODES_FAL_KEY_FILE' | 'EPISODES_REPLICATE_TOKEN_FILE';
  what: string;
}

const NATIVE_KEY: KeySettings = {
  key: 'EPISODES_VENDOR_API_KEY',
  file: 'EPISODES_VENDOR_API_KEY_FILE',
  what: 'vendor API key',
};

/**
 * `EPISODES_VENDOR_API_KEY` (the key) or `EPISODES_VENDOR_API_KEY_FILE` (a file holding it; surrounding whitespace trimmed). Setting
 * both is refused rather than guessing which one the operator meant. A key file readable by group or others is
 * used with a warning, not refused: Kubernetes secret volumes are 0644 by default and Docker secrets 0444.
 */
export function envCredentialsLoader(
  env: NodeJS.ProcessEnv = process.env,
  options: EnvCredentialsOptions = {},
): CredentialsLoader {
  const warn = options.warn ?? ((message: string) => process.stderr.write(`warning: ${message}\n`));
  return {
    async load(): Promise<string> {
      const { key, file: fileSetting, what } = options.settings ?? NATIVE_KEY;
      const direct = resolveSetting(key, env);
      const file = readSetting(fileSetting, env);
      if (direct.value !== undefined && file !== undefined) {
        throw missing(`both ${key} and ${fileSetting} are set; set only one`);
      }
      if (file !== undefined) return checked(await readKeyFile(file, warn, what), `key file ${file}`);
      if (direct.value !== undefined && direct.source.kind === 'environment') {
        return checked(direct.value.trim(), direct.source.variable);
      }
      throw missing(`no ${what}: set ${key} or ${fileSetting}`);
    },
  };
}

/** A fixed key, for tests and for callers that obtained it elsewhere. */
export function staticCredentialsLoader(apiKey: string): CredentialsLoader {
  return { load: () => Promise.resolve(checked(apiKey, 'the given key')) };
}

async function readKeyFile(file: string, warn: (message: string) => void, what: string): Promise<string> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw missing(`cannot open ${what} file ${file}: ${code ?? 'error'}`);
  }
  try {
    // stat the opened handle, not the path, so the mode we judge is the mode of the bytes we read.
    const stat = await handle.stat();
    if (!stat.isFile()) throw missing(`${what} file ${file} is not a regular file`);
    if ((stat.mode & 0o077) !== 0) {
      warn(`${what} file ${file} is readable by group or others (mode ${(stat.mode & 0o777).toString(8)})`);
    }
    return (await handle.readFile('utf8')).trim();
  } finally {
    await handle.close();
  }
}

function checked(key: string, source: string): string {
  if (key === '') throw missing(`${source} is empty`);
  if (!API_KEY_PATTERN.test(key)) {
    throw missing(`${source} does not hold a valid API key (8-512 printable ASCII characters, no whitespace)`);
  }
  return key;
}

function missing(message: string): PipelineError {
  return new PipelineError(ErrorType.CredentialsMissing, message);
}
