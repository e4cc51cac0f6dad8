/**
 * Every setting of `episodes review serve` from the environment, parsed here once (zod); an invalid value stops the
 * desk with one line that never echoes a secret. The client secret is read from EPISODES_REVIEW_OIDC_CLIENT_SECRET or
 * from the 0600 file EPISODES_REVIEW_OIDC_CLIENT_SECRET_FILE names.
 */
import { isIP } from 'node:net';
import { PipelineError, ErrorType } from '../domain/errors';
import { loadReviewPublicUrl } from '../process/review-notice-config';
import { readSettings } from '../settings/read';
import { readPrivateFile } from './private-file';
import { DEFAULT_SESSION_SETTINGS, type SessionSettings } from './sessions';

export interface OidcSettings {
  issuer: URL;
  clientId: string;
  clientSecret: string;
  scopes: string;
  /** Lower-case; matched against a verified `email` claim. */
  allowedEmails: string[];
  allowedGroups: string[];
  groupsClaim: string;
  /** `<public URL>sign-in/oidc/callback`. */
  redirectUrl: URL;
}

export interface DeskSettings {
  tokens: boolean;
  oidc?: OidcSettings;
  sessions: SessionSettings;
  /** Fastify's trustProxy: a hop count, or the addresses/CIDRs of the proxies; false trusts none. */
  trustProxy: number | string[] | false;
  /** `stderr`, or a file to append to. */
  auditLog: string;
  auditLogMaxBytes: number;
  maxConnections: number;
  publicUrl?: URL;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const DESK_SETTINGS = [
  'EPISODES_REVIEW_SIGN_IN',
  'EPISODES_REVIEW_OIDC_ISSUER',
  'EPISODES_REVIEW_OIDC_CLIENT_ID',
  'EPISODES_REVIEW_OIDC_CLIENT_SECRET',
  'EPISODES_REVIEW_OIDC_CLIENT_SECRET_FILE',
  'EPISODES_REVIEW_OIDC_SCOPES',
  'EPISODES_REVIEW_OIDC_ALLOWED_EMAILS',
  'EPISODES_REVIEW_OIDC_ALLOWED_GROUPS',
  'EPISODES_REVIEW_OIDC_GROUPS_CLAIM',
  'EPISODES_REVIEW_SESSION_IDLE_MS',
  'EPISODES_REVIEW_SESSION_ABSOLUTE_MS',
  'EPISODES_REVIEW_OIDC_SESSION_MS',
  'EPISODES_REVIEW_MAX_SESSIONS',
  'EPISODES_REVIEW_TRUST_PROXY',
  'EPISODES_REVIEW_AUDIT_LOG',
  'EPISODES_REVIEW_AUDIT_LOG_MAX_MB',
  'EPISODES_REVIEW_MAX_CONNECTIONS',
] as const;
type DeskEnv = ReturnType<typeof readSettings<(typeof DESK_SETTINGS)[number]>>;

/** Fastify's trustProxy from EPISODES_REVIEW_TRUST_PROXY: a hop count, or addresses/CIDRs; anything else refused. */
export function parseTrustProxy(raw: string | undefined): number | string[] | false {
  if (raw === undefined || raw === '0') return false;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const items = raw.split(',').map((x) => x.trim());
  const bad = items.find((x) => !isProxyAddress(x));
  if (bad === undefined) return items;
  throw invalid(
    `invalid EPISODES_REVIEW_TRUST_PROXY: expected a hop count (1) or addresses/CIDRs (127.0.0.1,10.0.0.0/8), ` +
      `got ${JSON.stringify(bad.slice(0, 60))}`,
  );
}

export function loadDeskSettings(env: NodeJS.ProcessEnv = process.env): DeskSettings {
  const e = readSettings(DESK_SETTINGS, env);
  const publicUrl = loadReviewPublicUrl(env);
  const methods = e.EPISODES_REVIEW_SIGN_IN ?? [e.EPISODES_REVIEW_OIDC_ISSUER ? 'oidc' : 'token'];
  return {
    tokens: methods.includes('token'),
    oidc: methods.includes('oidc') ? oidcSettings(e, publicUrl) : undefined,
    sessions: {
      ...DEFAULT_SESSION_SETTINGS,
      idleMs: e.EPISODES_REVIEW_SESSION_IDLE_MS,
      absoluteMs: e.EPISODES_REVIEW_SESSION_ABSOLUTE_MS,
      oidcAbsoluteMs: e.EPISODES_REVIEW_OIDC_SESSION_MS,
      maxSessions: e.EPISODES_REVIEW_MAX_SESSIONS,
    },
    trustProxy: parseTrustProxy(e.EPISODES_REVIEW_TRUST_PROXY),
    auditLog: e.EPISODES_REVIEW_AUDIT_LOG,
    auditLogMaxBytes: e.EPISODES_REVIEW_AUDIT_LOG_MAX_MB * 1024 * 1024,
    maxConnections: e.EPISODES_REVIEW_MAX_CONNECTIONS,
    publicUrl,
  };
}

function oidcSettings(e: DeskEnv, publicUrl: URL | undefined): OidcSettings {
  const need = (what: string, value: string | undefined): string => {
    if (value === undefined) throw invalid(`EPISODES_REVIEW_SIGN_IN has oidc, so set ${what}`);
    return value;
  };
  const issuer = new URL(need('EPISODES_REVIEW_OIDC_ISSUER', e.EPISODES_REVIEW_OIDC_ISSUER));
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && LOOPBACK.has(issuer.hostname))) {
    throw invalid('EPISODES_REVIEW_OIDC_ISSUER must be https (plain http only on this machine)');
  }
  if (publicUrl === undefined)
    throw invalid('OIDC sign-in needs EPISODES_REVIEW_PUBLIC_URL (the redirect URL is made from it)');
  if (e.EPISODES_REVIEW_OIDC_ALLOWED_EMAILS.length + e.EPISODES_REVIEW_OIDC_ALLOWED_GROUPS.length === 0) {
    throw invalid('OIDC sign-in needs EPISODES_REVIEW_OIDC_ALLOWED_EMAILS or EPISODES_REVIEW_OIDC_ALLOWED_GROUPS');
  }
  return {
    issuer,
    clientId: need('EPISODES_REVIEW_OIDC_CLIENT_ID', e.EPISODES_REVIEW_OIDC_CLIENT_ID),
    clientSecret: clientSecret(e),
    scopes: e.EPISODES_REVIEW_OIDC_SCOPES,
    allowedEmails: e.EPISODES_REVIEW_OIDC_ALLOWED_EMAILS.map((m) => m.toLowerCase()),
    allowedGroups: e.EPISODES_REVIEW_OIDC_ALLOWED_GROUPS,
    groupsClaim: e.EPISODES_REVIEW_OIDC_GROUPS_CLAIM,
    redirectUrl: new URL('sign-in/oidc/callback', publicUrl),
  };
}

function clientSecret(e: DeskEnv): string {
  const inline = e.EPISODES_REVIEW_OIDC_CLIENT_SECRET;
  const file = e.EPISODES_REVIEW_OIDC_CLIENT_SECRET_FILE;
  if (inline !== undefined && file !== undefined) {
    throw invalid('set EPISODES_REVIEW_OIDC_CLIENT_SECRET or EPISODES_REVIEW_OIDC_CLIENT_SECRET_FILE, not both');
  }
  const secret = file === undefined ? inline : readPrivateFile(file, 'OIDC client secret file')?.trim();
  if (!secret)
    throw invalid('OIDC sign-in needs EPISODES_REVIEW_OIDC_CLIENT_SECRET or _CLIENT_SECRET_FILE (a file that exists)');
  return secret;
}

function isProxyAddress(x: string): boolean {
  if (PROXY_NAMES.has(x)) return true;
  const [address, prefix, extra] = x.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function invalid(message: string): PipelineError {
  return new PipelineError(ErrorType.InvalidInput, message);
}

/** `--listen` on anything but loopback needs an https public URL (TLS in front) or an explicit `--insecure`. */
export function listenProblem(host: string, publicUrl: URL | undefined, insecure: boolean): string | undefined {
  if (isLoopback(host) || insecure || publicUrl?.protocol === 'https:') return undefined;
  return (
    `--listen ${host} is reachable from other machines over plain HTTP: tokens and cookies would travel in clear; ` +
    'put TLS in front and set EPISODES_REVIEW_PUBLIC_URL=https://…, or pass --insecure'
  );
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
