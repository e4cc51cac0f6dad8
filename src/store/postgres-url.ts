/** Store URLs and media location of the PostgreSQL store; nothing here ever prints a password. */
import { PipelineError, ErrorType } from '../domain/errors';
import { storeEnvironment } from './store-config';

export function defaultMediaDir(): string {
  return storeEnvironment().mediaDir;
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** host:port/database of a URL, without user or password. */
export function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}

/**
 * A URL given on the command line is visible to every local user in `ps` and /proc/<pid>/cmdline: refuse one that
 * carries a password, naming the ways that keep it out of sight.
 */
export function refusePasswordOnCommandLine(url: string, option: string): string {
  let password = '';
  try {
    password = new URL(url).password;
  } catch {
    password = /^[^:]+:\/\/[^/@]*:[^/@]*@/.test(url) ? 'unparsed' : '';
  }
  if (password) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `${option}: the URL carries a password, which every local user can read in \`ps\`; leave it out and set ` +
        'PGPASSWORD or a ~/.pgpass entry, or give the whole URL in EPISODES_STORE_URL',
    );
  }
  return url;
}
