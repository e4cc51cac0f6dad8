/**
 * The review desk's sessions, kept beside the episodes (file store: one file per session; PostgreSQL: the
 * `review_sessions` table), so a restart of the desk signs nobody out. Only the sha256 of a session id is stored: the
 * id itself lives in the reviewer's cookie alone. Each session names the identity it was made for (`token:<digest>`,
 * `oidc:<issuer> <subject>`), so the desk can end it once that identity is gone or rotated.
 */
import { z } from 'zod';

export const SESSION_DIGEST = /^[0-9a-f]{64}$/;
const instant = z.iso.datetime({ offset: true });

export const reviewSessionSchema = z.strictObject({
  schema: z.literal('review-session/v1'),
  id_sha256: z.string().regex(SESSION_DIGEST),
  /** The name decisions are made under (`by`). */
  reviewer: z.string().min(1).max(320),
  method: z.enum(['token', 'oidc']),
  identity: z.string().min(1).max(1200),
  /** OIDC only: what the allow list was checked against at sign-in (checked again on every request). */
  email: z.string().max(320).nullable(),
  groups: z.array(z.string().max(256)).max(256),
  client_ip: z.string().max(64),
  user_agent: z.string().max(256),
  created_at: instant,
  last_seen_at: instant,
  /** The absolute end; the idle end is last_seen_at + the desk's idle timeout. */
  expires_at: instant,
  /** HMAC-SHA256 of the record but last_seen_at, keyed by the desk's session key: the store cannot make one up. */
  mac: z.string().regex(SESSION_DIGEST).optional(),
});
export type ReviewSession = z.infer<typeof reviewSessionSchema>;

export interface SessionBounds {
  /** At most this many sessions in all: the least recently seen go first. */
  maxSessions: number;
  /** At most this many per identity: that identity's least recently seen go first. */
  maxPerIdentity: number;
  /** Sessions past their absolute end at `now`, or last seen before `idleCutoff`, are removed first. */
  now: Date;
  idleCutoff: Date;
}

export interface ReviewSessionStore {
  readonly description: string;
  /** Stores a new session after removing expired ones and, to stay within `bounds`, the least recently seen. */
  create(session: ReviewSession, bounds: SessionBounds): Promise<void>;
  get(idSha256: string): Promise<ReviewSession | undefined>;
  /** Moves last_seen_at forward; a session removed meanwhile stays removed. */
  touch(idSha256: string, at: Date): Promise<void>;
  /** Whether there was such a session. */
  delete(idSha256: string): Promise<boolean>;
  list(): Promise<ReviewSession[]>;
}

export function isExpired(s: ReviewSession, now: Date, idleCutoff: Date): boolean {
  return Date.parse(s.expires_at) <= now.getTime() || Date.parse(s.last_seen_at) < idleCutoff.getTime();
}

/** Which stored sessions `create` removes before adding one for `identity` (expired first, then beyond the bounds). */
export function sessionsToRemove(all: readonly ReviewSession[], identity: string, b: SessionBounds): Set<string> {
  const remove = new Set(all.filter((s) => isExpired(s, b.now, b.idleCutoff)).map((s) => s.id_sha256));
  const byAge = all
    .filter((s) => !remove.has(s.id_sha256))
    .sort((x, y) => x.last_seen_at.localeCompare(y.last_seen_at) || x.id_sha256.localeCompare(y.id_sha256));
  const mine = byAge.filter((s) => s.identity === identity);
  for (const s of mine.slice(0, Math.max(0, mine.length - (b.maxPerIdentity - 1)))) remove.add(s.id_sha256);
  const rest = byAge.filter((s) => !remove.has(s.id_sha256));
  for (const s of rest.slice(0, Math.max(0, rest.length - (b.maxSessions - 1)))) remove.add(s.id_sha256);
  return remove;
}
