/**
 * Signing in and out. A token is pasted into the form (POST /sign-in); OIDC goes to the provider (POST /sign-in/oidc)
 * and comes back to GET /sign-in/oidc/callback. Both POSTs carry the CSRF token of the browser's pre-session cookie
 * (and pass the origin check of desk.ts). Failed sign-ins count against the client address's limit; successes never
 * do, nor does a callback that finished no sign-in of this browser (any site can make a browser send one). Every
 * outcome is in the audit log.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { audit, csrfOk, notFound, pathOf, preSession, refused, sendPage, signInAgain, type Desk } from './desk';
import { OidcBusy, OidcNoSignIn, OidcRefusal } from './oidc';
import { TOKEN_PATTERN } from './reviewers';
import { isSecretId, secretDigest, type NewSession } from './sessions';
import { signedInPage } from './sign-in-page';

const signInBody = z.object({ token: z.string().max(200), _csrf: z.string().max(200) });
const CSRF_REFUSAL = 'The sign-in form was not this browser’s; reload the page.';

export function registerSignIn(app: FastifyInstance, desk: Desk): void {
  app.get('/sign-in', async (req, reply) => {
    if (req.deskSession !== undefined) return reply.redirect('/', 303);
    return signInAgain(desk, req, reply, null);
  });

  app.post('/sign-in', async (req, reply) => {
    if (desk.o.tokens === false) return notFound(req, reply);
    if (!csrfOk(desk, req, 'sign-in')) return refused(req, reply, CSRF_REFUSAL);
    if (limited(desk, req, 'token')) return signInAgain(desk, req, reply.code(429), TOO_MANY);
    const body = signInBody.safeParse(req.body);
    const token = body.success ? body.data.token.trim() : '';
    const who = TOKEN_PATTERN.test(token) ? desk.o.reviewers.authenticate(token) : undefined;
    if (who === undefined) {
      failed(desk, req, 'token', 'no reviewer holds that token');
      return signInAgain(desk, req, reply.code(401), 'That token is not a reviewer’s token.');
    }
    await startSession(desk, req, reply, {
      reviewer: who.name,
      method: 'token',
      identity: who.identity,
      email: null,
      groups: [],
    });
    return reply.redirect('/', 303);
  });

  app.post('/sign-out', async (req, reply) => {
    if (!csrfOk(desk, req, 'session')) return refused(req, reply, 'The form was not this session’s; reload the page.');
    await desk.sessions.end(req.cookies[desk.names.session]);
    audit(desk, req, { event: 'sign-out', reviewer: req.deskSession!.record.reviewer });
    reply.clearCookie(desk.names.session, desk.cookie);
    return reply.redirect('/sign-in', 303);
  });

  registerOidc(app, desk);
}

const TOO_MANY = 'Too many failed sign-ins from this address; try again in a few minutes.';

function registerOidc(app: FastifyInstance, desk: Desk): void {
  app.post('/sign-in/oidc', async (req, reply) => {
    if (desk.oidc === undefined) return notFound(req, reply);
    if (!csrfOk(desk, req, 'sign-in')) return refused(req, reply, CSRF_REFUSAL);
    if (limited(desk, req, 'oidc')) return signInAgain(desk, req, reply.code(429), TOO_MANY);
    let url: URL;
    try {
      url = await desk.oidc.start(secretDigest(preSession(desk, req, reply)), req.ip);
    } catch (e) {
      if (!(e instanceof OidcBusy)) throw e;
      audit(desk, req, { event: 'sign-in', outcome: 'refused', method: 'oidc', reason: e.message });
      return signInAgain(desk, req, reply.code(503), 'Too many sign-ins are under way; try again in a few minutes.');
    }
    return reply.redirect(url.href, 303);
  });

  app.get('/sign-in/oidc/callback', async (req, reply) => {
    if (desk.oidc === undefined) return notFound(req, reply);
    const pre = req.cookies[desk.names.signIn];
    // Another site's image, or a callback without this browser's sign-in: answered, counted against nobody.
    if (!topLevelNavigation(req)) return callbackRefused(desk, req, reply, 'not a page load in a tab');
    if (!isSecretId(pre)) return callbackRefused(desk, req, reply, 'no sign-in cookie');
    if (limited(desk, req, 'oidc')) return signInAgain(desk, req, reply.code(429), TOO_MANY);
    const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
    let who: Omit<NewSession, 'client_ip' | 'user_agent'>;
    try {
      who = await desk.oidc.finish(secretDigest(pre), query);
    } catch (e) {
      if (e instanceof OidcNoSignIn) return callbackRefused(desk, req, reply, e.message);
      if (!(e instanceof OidcRefusal)) throw e;
      failed(desk, req, 'oidc', e.message);
      return signInAgain(desk, req, reply.code(403), `Sign-in with ${desk.oidc.label} was refused.`);
    }
    await startSession(desk, req, reply, who);
    return sendPage(reply, signedInPage(who.reviewer));
  });
}

/**
 * Whether the browser says this is a page load in a tab (`Sec-Fetch-Dest: document`, `Sec-Fetch-Mode: navigate`), as
 * the provider's redirect is; an image or a fetch says otherwise. A browser that sends neither header is believed.
 */
function topLevelNavigation(req: FastifyRequest): boolean {
  const dest = req.headers['sec-fetch-dest'];
  const mode = req.headers['sec-fetch-mode'];
  return (dest === undefined || dest === 'document') && (mode === undefined || mode === 'navigate');
}

/** A plain 403 for a callback that finished no sign-in of this browser; the failure limit is not touched. */
function callbackRefused(desk: Desk, req: FastifyRequest, reply: FastifyReply, reason: string): FastifyReply {
  audit(desk, req, {
    event: 'request-refused',
    reason: 'oidc-callback',
    detail: reason,
    method: req.method,
    path: pathOf(req),
  });
  return refused(req, reply, 'No sign-in of this browser is under way here; start again from the sign-in page.');
}

async function startSession(
  desk: Desk,
  req: FastifyRequest,
  reply: FastifyReply,
  who: Omit<NewSession, 'client_ip' | 'user_agent'>,
): Promise<void> {
  await desk.sessions.end(req.cookies[desk.names.session]);
  const { id, session } = await desk.sessions.create({
    ...who,
    client_ip: req.ip.slice(0, 64),
    user_agent: (req.headers['user-agent'] ?? '').slice(0, 256),
  });
  audit(desk, req, { event: 'sign-in', outcome: 'ok', method: who.method, reviewer: who.reviewer }, session);
  reply.setCookie(desk.names.session, id, {
    ...desk.cookie,
    sameSite: 'strict',
    maxAge: Math.floor(desk.sessions.lifetimeMs(who.method) / 1000),
  });
  reply.clearCookie(desk.names.signIn, { ...desk.cookie, path: desk.names.signInPath });
}

function limited(desk: Desk, req: FastifyRequest, method: 'token' | 'oidc'): boolean {
  if (!desk.limit.blocked(req.ip)) return false;
  audit(desk, req, {
    event: 'sign-in',
    outcome: 'refused',
    method,
    reason: 'too many failed sign-ins from this address',
  });
  return true;
}

function failed(desk: Desk, req: FastifyRequest, method: 'token' | 'oidc', reason: string): void {
  desk.limit.fail(req.ip);
  audit(desk, req, { event: 'sign-in', outcome: 'refused', method, reason });
}
