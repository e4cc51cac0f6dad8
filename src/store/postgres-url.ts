/** Store URLs and media location of the PostgreSQL store; nothing here ever prints a password. */
import { PipelineError, ErrorType } from '../domain/errors';
import { parse as parseConnectionString } from 'pg-connection-string';
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
 * carries a password, naming the ways that keep it out of sight. "Carries" is what the driver would use: anything
 * pg-connection-string (the parser `pg` itself uses) reads as `password` or `sslpassword` (userinfo, `?password=`,
 * a socket URL's query), or userinfo with a password in a URL it cannot parse at all.
 */
export function refusePasswordOnCommandLine(url: string, option: string): string {
  if (carriesPassword(url)) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `${option}: the URL carries a password, which every local user can read in \`ps\`; leave it out and set ` +
        'PGPASSWORD or a ~/.pgpass entry, or give the whole URL in EPISODES_STORE_URL',
    );
  }
  return url;
}

function carriesPassword(url: string): boolean {
  let parsed: ReturnType<typeof parseConnectionString>;
  try {
    parsed = parseConnectionString(url);
  } catch {
    return /^[^:]+:\/\/[^/@]*:[^/@]*@/.test(url);
  }
  const whatwg = URL.canParse(url) ? new URL(url).password : '';
  return [parsed.password, parsed.sslpassword, whatwg].some((p) => typeof p === 'string' && p !== '');
}
