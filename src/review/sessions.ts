/**
 * Signed-in reviewers: a random 256-bit session id in an HttpOnly, SameSite=Strict cookie, mapped in memory to the
 * reviewer's name. In memory on purpose: a restart of the desk signs everyone out, which costs a reviewer one paste of
 * their token and keeps no session secret on disk. A session ends when it expires, at sign-out, or as soon as its
 * reviewer is removed (checked on every request).
 */
import { randomBytes } from 'node:crypto';

export const SESSION_COOKIE = 'episodes_review_session';
export const DEFAULT_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Bounds the map: the oldest sessions go first once this many are open. */
const MAX_SESSIONS = 10_000;

export class Sessions {
  private readonly open = new Map<string, { name: string; expiresAt: number }>();

  constructor(private readonly ttlMs = DEFAULT_SESSION_TTL_MS) {}

  create(name: string, now = Date.now()): string {
    if (this.open.size >= MAX_SESSIONS) this.open.delete(this.open.keys().next().value!);
    const id = randomBytes(32).toString('base64url');
    this.open.set(id, { name, expiresAt: now + this.ttlMs });
    return id;
  }

  /** The reviewer of this session id, or undefined (unknown, expired, or the reviewer no longer exists). */
  lookup(id: string | undefined, stillExists: (name: string) => boolean, now = Date.now()): string | undefined {
    if (id === undefined) return undefined;
    const session = this.open.get(id);
    if (session === undefined) return undefined;
    if (session.expiresAt <= now || !stillExists(session.name)) {
      this.open.delete(id);
      return undefined;
    }
    return session.name;
  }

  end(id: string | undefined): void {
    if (id !== undefined) this.open.delete(id);
  }
}
