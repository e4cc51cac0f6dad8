/** Store URLs and media location of the PostgreSQL store; nothing here ever prints a password. */
import * as path from 'node:path';

export function defaultMediaDir(): string {
  return path.resolve(process.env.EPISODES_MEDIA_DIR ?? './data/media');
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
