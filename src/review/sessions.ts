/**
 * Signed-in reviewers: a random 256-bit session id in an HttpOnly, SameSite=Strict cookie; the store keeps only its
 * sha256 (src/store/review-sessions.ts), so sessions survive a restart and nothing on disk signs anyone in. A session
 * ends at sign-out, at its idle or absolute end, when revoked (`review sessions --revoke`), or at the first request
 * after the identity it was made for is gone (a reviewer removed or rotated, an OIDC user no longer allowed).
 *
 * CSRF tokens are derived from the secret they protect: HMAC-SHA256 keyed by the session id (or, before sign-in, by
 * the pre-session id of the sign-in cookie). Only the holder of that cookie can have the token, a token planted from
 * another page belongs to another id, and no server secret is needed, so open forms keep working across a restart.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ReviewSession, ReviewSessionStore } from '../store/review-sessions';

const SESSION_COOKIE = 'episodes_review_session';
/** The pre-session: the sign-in form's CSRF key and the OIDC transaction's key. */
const SIGN_IN_COOKIE = 'episodes_review_sign_in';

/** The desk's two cookies: their names, and the path of the sign-in cookie. */
export interface DeskCookies {
  session: string;
  signIn: string;
  signInPath: '/' | '/sign-in';
}

/**
 * Under an https public URL the names carry `__Host-`: a browser then keeps such a cookie only if it is Secure, for
 * Path=/ and without Domain, so neither plain http nor a sibling host of the same site can set or shadow it.
 */
export function deskCookies(https: boolean): DeskCookies {
  return https
    ? { session: `__Host-${SESSION_COOKIE}`, signIn: `__Host-${SIGN_IN_COOKIE}`, signInPath: '/' }
    : { session: SESSION_COOKIE, signIn: SIGN_IN_COOKIE, signInPath: '/sign-in' };
}
const ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** last_seen_at is written at most this often per session (the idle end is exact to within this). */
const TOUCH_EVERY_MS = 60_000;

export interface SessionSettings {
  idleMs: number;
  absoluteMs: number;
  /**
   * An OIDC session's absolute end, when sooner: the provider is asked again only at the next sign-in (a click while
   * the user's provider session lasts), so this bounds how long someone removed there keeps access.
   */
  oidcAbsoluteMs: number;
  maxSessions: number;
  maxPerIdentity: number;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = {
  idleMs: 30 * 60_000,
  absoluteMs: 12 * 60 * 60_000,
  oidcAbsoluteMs: 15 * 60_000,
  maxSessions: 1_000,
  maxPerIdentity: 10,
};

export type NewSession = Pick<
  ReviewSession,
  'reviewer' | 'method' | 'identity' | 'email' | 'groups' | 'client_ip' | 'user_agent'
>;

export type SessionEnd = 'idle' | 'expired' | 'identity' | 'integrity';

export function newSecretId(): string {
  return randomBytes(32).toString('base64url');
}

export function isSecretId(raw: string | undefined): raw is string {
  return raw !== undefined && ID_PATTERN.test(raw);
}

export function secretDigest(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('hex');
}

/** The short public handle of a session (listed and revoked by the CLI): the first 16 hex digits of its digest. */
export function sessionHandle(s: Pick<ReviewSession, 'id_sha256'>): string {
  return s.id_sha256.slice(0, 16);
}

export function csrfToken(secretId: string, purpose: 'session' | 'sign-in'): string {
  return createHmac('sha256', secretId).update(`episodes-review-csrf:${purpose}`).digest('base64url');
}

export function csrfMatches(secretId: string | undefined, purpose: 'session' | 'sign-in', presented: unknown): boolean {
  if (!isSecretId(secretId) || typeof presented !== 'string') return false;
  const expected = Buffer.from(csrfToken(secretId, purpose));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The record's MAC under the desk's session key: every field but last_seen_at (which `touch` moves), keys sorted. */
export function sessionMac(key: Buffer, s: ReviewSession): string {
  const signed = Object.entries(s)
    .filter(([k]) => k !== 'mac' && k !== 'last_seen_at')
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return createHmac('sha256', key).update(JSON.stringify(signed)).digest('hex');
}

function macMatches(key: Buffer, s: ReviewSession): boolean {
  const expected = Buffer.from(sessionMac(key, s), 'hex');
  const given = Buffer.from(s.mac ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export class DeskSessions {
  constructor(
    readonly store: ReviewSessionStore,
    readonly settings: SessionSettings,
    /** The desk's session key (session-key.ts). */
    private readonly key: Buffer,
  ) {}

  /** A new session; its id (for the cookie only) and its record. */
  async create(n: NewSession, now = new Date()): Promise<{ id: string; session: ReviewSession }> {
    const id = newSecretId();
    const session: ReviewSession = {
      schema: 'review-session/v1',
      id_sha256: secretDigest(id),
      ...n,
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: new Date(now.getTime() + this.lifetimeMs(n.method)).toISOString(),
    };
    session.mac = sessionMac(this.key, session);
    await this.store.create(session, {
      maxSessions: this.settings.maxSessions,
      maxPerIdentity: this.settings.maxPerIdentity,
      now,
      idleCutoff: new Date(now.getTime() - this.settings.idleMs),
    });
    return { id, session };
  }

  /**
   * The live session of this cookie value, or undefined. A session past its end, or whose identity `isCurrent` no
   * longer accepts, is removed here, and `ended` is told why.
   */
  async lookup(
    id: string | undefined,
    isCurrent: (s: ReviewSession) => boolean,
    ended: (s: ReviewSession, why: SessionEnd) => void,
    now = new Date(),
  ): Promise<ReviewSession | undefined> {
    if (!isSecretId(id)) return undefined;
    const session = await this.store.get(secretDigest(id));
    if (session === undefined) return undefined;
    const why = this.endOf(session, isCurrent, now);
    if (why !== undefined) {
      await this.store.delete(session.id_sha256);
      ended(session, why);
      return undefined;
    }
    if (now.getTime() - Date.parse(session.last_seen_at) >= TOUCH_EVERY_MS) {
      await this.store.touch(session.id_sha256, now);
    }
    return session;
  }

  /** Every live session: the ones that have ended (by time or identity) are left out, and left in the store. */
  async live(isCurrent: (s: ReviewSession) => boolean, now = new Date()): Promise<ReviewSession[]> {
    return (await this.store.list()).filter((s) => this.endOf(s, isCurrent, now) === undefined);
  }

  /** Removes the sessions that have ended (by time or identity), as a request of theirs would; returns them. */
  async prune(isCurrent: (s: ReviewSession) => boolean, now = new Date()): Promise<ReviewSession[]> {
    const ended = (await this.store.list()).filter((s) => this.endOf(s, isCurrent, now) !== undefined);
    for (const s of ended) await this.store.delete(s.id_sha256);
    return ended;
  }

  async end(id: string | undefined): Promise<void> {
    if (isSecretId(id)) await this.store.delete(secretDigest(id));
  }

  /** How long a session of this sign-in method lasts at most. */
  lifetimeMs(method: ReviewSession['method']): number {
    const { absoluteMs, oidcAbsoluteMs } = this.settings;
    return method === 'oidc' ? Math.min(absoluteMs, oidcAbsoluteMs) : absoluteMs;
  }

  private endOf(s: ReviewSession, isCurrent: (s: ReviewSession) => boolean, now: Date): SessionEnd | undefined {
    // Made or changed by someone without the key (a store writer), or before records carried a MAC.
    if (!macMatches(this.key, s)) return 'integrity';
    if (Date.parse(s.expires_at) <= now.getTime()) return 'expired';
    if (Date.parse(s.last_seen_at) + this.settings.idleMs <= now.getTime()) return 'idle';
    return isCurrent(s) ? undefined : 'identity';
  }
}
