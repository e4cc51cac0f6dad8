/**
 * What every route of the review desk shares (the Desk), the hooks that run before any route (origin, session,
 * errors), and the small helpers the routes use to answer.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { EpisodeStore } from '../store/episode-store';
import type { ReviewSession, ReviewSessionStore } from '../store/review-sessions';
import type { AuditContext, AuditEvent, AuditLog } from './audit-log';
import type { OidcSettings } from './desk-settings';
import { fromOwnOrigin, securityHeaders, type FailureLimit } from './guards';
import type { SafeHtml } from './html';
import type { OidcSignIn } from './oidc';
import { errorPage, type Viewer } from './pages';
import type { PriceSource } from './prices';
import type { ReviewerStore } from './reviewers';
import {
  csrfMatches,
  csrfToken,
  isSecretId,
  newSecretId,
  sessionHandle,
  type DeskCookies,
  type DeskSessions,
  type SessionSettings,
} from './sessions';
import { incidentPage, signInPage } from './sign-in-page';

export interface ReviewDeskOptions {
  store: EpisodeStore;
  /** Default: the store's own (openReviewSessions). */
  sessions?: ReviewSessionStore;
  reviewers: ReviewerStore;
  /** Connected at the first decision, so pages work while Temporal is away. */
  getClient: () => Promise<Client>;
  budgetCents: number;
  /** What each choice will cost. Default: the list workers publish to the store (`publishedPriceSource`). */
  prices?: PriceSource;
  timeZone: string;
  /** Token sign-in (default on). */
  tokens?: boolean;
  /** OIDC sign-in, when set. */
  oidc?: OidcSettings;
  /** Fastify's `trustProxy`: only then are X-Forwarded-For/-Proto believed. */
  trustProxy?: number | string[] | false;
  /** The desk as people reach it: the origin POSTs must come from; `https://…` makes cookies Secure and sends HSTS. */
  publicUrl?: URL;
  signInLimit?: { max: number; timeWindowMs: number };
  sessionSettings?: Partial<SessionSettings>;
  /** Default: JSON lines on stderr. */
  audit?: AuditLog;
  limits?: Partial<ConnectionLimits>;
}

/** Bounds on every connection (Node's http server), so slow or idle clients cannot hold sockets. */
export interface ConnectionLimits {
  /** The request's headers must arrive within this. */
  headersMs: number;
  /** The whole request, headers and body. */
  requestMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveMs: number;
  /** A socket with no activity at all is closed after this. */
  idleMs: number;
  maxConnections: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headersMs: 10_000,
  requestMs: 30_000,
  keepAliveMs: 5_000,
  idleMs: 60_000,
  maxConnections: 256,
};

const PUBLIC_PATHS = new Set(['/sign-in', '/sign-in/oidc', '/sign-in/oidc/callback', '/health', '/assets/desk.css']);
const csrfField = z.object({ _csrf: z.string().max(200) });

declare module 'fastify' {
  interface FastifyRequest {
    deskSession?: { id: string; record: ReviewSession };
  }
}

/** What every route shares. */
export interface Desk {
  o: ReviewDeskOptions;
  sessions: DeskSessions;
  oidc?: OidcSignIn;
  audit: AuditLog;
  limit: FailureLimit;
  https: boolean;
  cookie: { path: '/'; httpOnly: true; secure: true | 'auto' };
  names: DeskCookies;
  prices: PriceSource;
}

export function registerHooks(app: FastifyInstance, desk: Desk): void {
  const formTargets = desk.o.oidc ? [desk.o.oidc.issuer.origin] : [];
  app.addHook('onSend', async (req, reply, payload) => {
    securityHeaders(reply, desk.https || req.protocol === 'https', formTargets);
    return payload;
  });

  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'GET' && req.method !== 'HEAD' && !fromOwnOrigin(req, desk.o.publicUrl)) {
      audit(desk, req, { event: 'request-refused', reason: 'origin', method: req.method, path: pathOf(req) });
      return refused(req, reply, 'This request did not come from the desk’s own pages.');
    }
    const id = req.cookies[desk.names.session];
    const record = await desk.sessions.lookup(
      id,
      (s) => sessionIsCurrent(desk.o, desk.oidc, s),
      (s, why) => audit(desk, req, { event: 'session-ended', reviewer: s.reviewer, reason: why }, s),
    );
    if (record !== undefined) req.deskSession = { id: id!, record };
    if (record !== undefined || PUBLIC_PATHS.has(pathOf(req))) return;
    // Only the sign-in page, whatever was asked for.
    if (req.method === 'GET' || req.method === 'HEAD') return reply.redirect('/sign-in', 303);
    return signInAgain(desk, req, reply.code(401), 'Sign in first.');
  });

  app.setErrorHandler((err: { statusCode?: number; message?: string; stack?: string }, req, reply) => {
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    const incident = randomBytes(6).toString('hex');
    const detail = { message: String(err.message), stack: err.stack };
    audit(desk, req, { event: 'error', incident, method: req.method, path: pathOf(req), ...detail });
    return sendPage(reply.code(status), incidentPage(status, incident, viewerOrNull(req)));
  });

  app.get('/health', () => Promise.resolve({ status: 'ok' }));
}

/** Whether the session's identity is still the reviewer's: the same token, or still allowed by the provider rules. */
export function sessionIsCurrent(
  o: { tokens?: boolean; reviewers: ReviewerStore },
  oidc: OidcSignIn | undefined,
  s: ReviewSession,
): boolean {
  if (s.method === 'token') return o.tokens !== false && o.reviewers.holds(s.reviewer, s.identity);
  return oidc?.stillAllowed(s) ?? false;
}

/** The CSRF check of a POST: the form's token must be the one derived from this request's session (or pre-session). */
export function csrfOk(desk: Desk, req: FastifyRequest, purpose: 'session' | 'sign-in'): boolean {
  const secret = purpose === 'session' ? req.deskSession?.id : req.cookies[desk.names.signIn];
  const ok = csrfMatches(secret, purpose, csrfField.safeParse(req.body).data?._csrf);
  if (!ok) audit(desk, req, { event: 'request-refused', reason: 'csrf', method: req.method, path: pathOf(req) });
  return ok;
}

/** The browser's pre-session id (the sign-in cookie), made and set when it has none. */
export function preSession(desk: Desk, req: FastifyRequest, reply: FastifyReply): string {
  const current = req.cookies[desk.names.signIn];
  if (isSecretId(current)) return current;
  const id = newSecretId();
  // Lax, not Strict: it must come back on the provider's redirect to the callback (a cross-site navigation).
  reply.setCookie(desk.names.signIn, id, {
    ...desk.cookie,
    path: desk.names.signInPath,
    sameSite: 'lax',
    maxAge: 3600,
  });
  return id;
}

/** The sign-in page with a problem line (and a fresh form). */
export function signInAgain(
  desk: Desk,
  req: FastifyRequest,
  reply: FastifyReply,
  problem: string | null,
): FastifyReply {
  const csrf = csrfToken(preSession(desk, req, reply), 'sign-in');
  return sendPage(reply, signInPage({ csrf, tokens: desk.o.tokens !== false, oidc: desk.oidc?.label, problem }));
}

export function audit(desk: Desk, req: FastifyRequest, e: AuditEvent, s = req.deskSession?.record): void {
  const where: AuditContext = { ip: req.ip };
  if (s !== undefined) where.session = sessionHandle(s);
  desk.audit.record(e, where);
}

export function viewer(req: FastifyRequest, _reply?: FastifyReply): Viewer {
  const s = req.deskSession!;
  return { name: s.record.reviewer, csrf: csrfToken(s.id, 'session') };
}

function viewerOrNull(req: FastifyRequest): Viewer | null {
  return req.deskSession === undefined ? null : viewer(req);
}

export function refused(req: FastifyRequest, reply: FastifyReply, message: string): FastifyReply {
  return sendPage(reply.code(403), errorPage('Refused', message, viewerOrNull(req)));
}

export function notFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendPage(reply.code(404), errorPage('Not found', 'There is nothing here.', viewerOrNull(req)));
}

export function sendPage(reply: FastifyReply, body: SafeHtml): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body.text);
}

export function pathOf(req: FastifyRequest): string {
  return req.url.split('?')[0]!;
}
