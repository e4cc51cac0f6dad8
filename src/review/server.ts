/**
 * The review desk: Fastify with its own plugins for cookies, CSRF tokens, rate limits and static files (Range,
 * ETag, no path tricks through `send`), pages rendered on the server (pages.ts). Nothing but `/sign-in`, `/health` and
 * the stylesheet answers without a session; every POST needs the CSRF token of the form it came from; the decision's
 * `by` is the session's reviewer. Every route parses its input with zod. Reads come from the store; decisions go to
 * the production workflow as the CLI's updates (src/review/decision-updates.ts).
 */
import * as path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifyRateLimit from '@fastify/rate-limit';
import fastifyStatic from '@fastify/static';
import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { sendDecision, type Decision } from './decision-updates';
import { notesProblem } from '../domain/decision';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { isPipelineError } from '../domain/errors';
import { lastWeeks, parseWeekId } from '../domain/week-id';
import type { EpisodeState } from '../domain/episode-state';
import type { EpisodeStore } from '../store/episode-store';
import { knownQuotes } from './episode-view';
import type { SafeHtml } from './html';
import { isPlayable, mediaKeySchema, resolveMedia } from './media';
import { donePage, episodePage, errorPage, signInPage, waitingPage, type DecisionOutcome, type Viewer } from './pages';
import type { ReviewerStore } from './reviewers';
import { TOKEN_PATTERN } from './reviewers';
import { DEFAULT_SESSION_TTL_MS, SESSION_COOKIE, Sessions } from './sessions';
import type { WeekSpend } from './spend-chart';

export interface ReviewDeskOptions {
  store: EpisodeStore;
  reviewers: ReviewerStore;
  /** Connected at the first decision, so pages work while Temporal is away. */
  getClient: () => Promise<Client>;
  budgetCents: number;
  timeZone: string;
  /** Fastify's `trustProxy` (e.g. `127.0.0.1`): only then are X-Forwarded-For/-Proto believed. */
  trustProxy?: boolean | string;
  /** `https://…`: cookies are Secure whatever the hop to the desk was. */
  publicUrl?: URL;
  signInLimit?: { max: number; timeWindowMs: number };
  sessionTtlMs?: number;
}

const ASSETS = path.resolve(__dirname, '..', '..', '..', 'src', 'review', 'assets');
const PUBLIC_PATHS = new Set(['/sign-in', '/health', '/assets/desk.css']);

const episodeParams = z.strictObject({ id: z.string().max(40) });
const mediaParams = z.strictObject({ id: z.string().max(40), key: mediaKeySchema });
const signInBody = z.object({ token: z.string().max(200), _csrf: z.string().max(200) });
const decisionBody = z.discriminatedUnion('action', [
  z.object({ action: z.literal('approve'), round: z.coerce.number().int().min(0).max(9999), _csrf: z.string() }),
  z.object({
    action: z.literal('rework'),
    round: z.coerce.number().int().min(0).max(9999),
    notes: z.string().max(4000),
    _csrf: z.string(),
  }),
]);

declare module 'fastify' {
  interface FastifyRequest {
    reviewer?: string;
  }
}

/** What every route shares: the options, the sessions and the cookie settings. */
interface Desk {
  o: ReviewDeskOptions;
  sessions: Sessions;
  cookieOptions: { path: '/'; httpOnly: true; sameSite: 'strict'; secure: true | 'auto' };
}

export async function buildReviewDesk(o: ReviewDeskOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, trustProxy: o.trustProxy ?? false, bodyLimit: 64 * 1024 });
  const secure = o.publicUrl?.protocol === 'https:' ? true : 'auto';
  const desk: Desk = {
    o,
    sessions: new Sessions(o.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS),
    cookieOptions: { path: '/', httpOnly: true, sameSite: 'strict', secure },
  };
  await registerPlugins(app, desk);
  registerHooks(app, desk);
  registerSignIn(app, desk);
  registerPages(app, desk);
  registerDecisions(app, desk);
  registerMedia(app, desk);
  app.setNotFoundHandler((req, reply) => notFound(req, reply));
  return app;
}

async function registerPlugins(app: FastifyInstance, desk: Desk): Promise<void> {
  await app.register(fastifyCookie, { secret: randomBytes(32).toString('hex') });
  await app.register(fastifyFormbody);
  await app.register(fastifyCsrf, { cookieOpts: { ...desk.cookieOptions, signed: true } });
  await app.register(fastifyRateLimit, { global: false });
  await app.register(fastifyStatic, { root: ASSETS, prefix: '/assets/', index: false, list: false });
}

function registerHooks(app: FastifyInstance, { o, sessions }: Desk): void {
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header(
      'content-security-policy',
      "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; form-action 'self'; " +
        "frame-ancestors 'none'; base-uri 'none'",
    );
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    return payload;
  });

  app.addHook('onRequest', async (req, reply) => {
    req.reviewer = sessions.lookup(req.cookies[SESSION_COOKIE], (name) => o.reviewers.exists(name));
    if (req.reviewer !== undefined || PUBLIC_PATHS.has(req.url.split('?')[0]!)) return;
    // Only the sign-in page, whatever was asked for.
    if (req.method === 'GET' || req.method === 'HEAD') return reply.redirect('/sign-in', 303);
    return sendPage(reply.code(401), signInPage(reply.generateCsrf(), 'Sign in first.'));
  });

  app.get('/health', () => Promise.resolve({ status: 'ok' }));
}

function registerSignIn(app: FastifyInstance, { o, sessions, cookieOptions }: Desk): void {
  const csrf = app.csrfProtection.bind(app);
  app.get('/sign-in', async (req, reply) => {
    if (req.reviewer !== undefined) return reply.redirect('/', 303);
    return sendPage(reply, signInPage(reply.generateCsrf(), null));
  });

  const limit = o.signInLimit ?? { max: 10, timeWindowMs: 5 * 60_000 };
  app.post(
    '/sign-in',
    {
      preHandler: csrf,
      config: { rateLimit: { max: limit.max, timeWindow: limit.timeWindowMs } },
    },
    async (req, reply) => {
      const body = signInBody.safeParse(req.body);
      const token = body.success ? body.data.token.trim() : '';
      const name = TOKEN_PATTERN.test(token) ? o.reviewers.authenticate(token) : undefined;
      if (name === undefined) {
        return sendPage(reply.code(401), signInPage(reply.generateCsrf(), 'That token is not a reviewer’s token.'));
      }
      sessions.end(req.cookies[SESSION_COOKIE]);
      reply.setCookie(SESSION_COOKIE, sessions.create(name), {
        ...cookieOptions,
        maxAge: Math.floor((o.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS) / 1000),
      });
      return reply.redirect('/', 303);
    },
  );

  app.post('/sign-out', { preHandler: csrf }, async (req, reply) => {
    sessions.end(req.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, cookieOptions);
    return reply.redirect('/sign-in', 303);
  });
}

function registerPages(app: FastifyInstance, { o }: Desk): void {
  app.get('/', async (req, reply) => {
    // Only the unfinished ones are read: a store of years of completed episodes costs this page nothing.
    const states = await o.store.listUnfinishedEpisodes();
    const newest = await newestCompleted(o, new Date());
    return sendPage(
      reply,
      waitingPage(states, {
        viewer: viewer(req, reply),
        budgetCents: o.budgetCents,
        quotes: knownQuotes(newest ? [...states, newest] : states),
        now: new Date(),
      }),
    );
  });

  app.get('/done', async (req, reply) => {
    const entries = await o.store.listHistory();
    const weeks = lastWeeks(12, new Date(), o.timeZone).map((weekId): WeekSpend => {
      const ofWeek = entries.filter((e) => e.week_id === weekId);
      const cents = ofWeek.reduce((sum, e) => sum + e.total_cost_cents, 0);
      return { weekId, cents, budgetCents: ofWeek.length * o.budgetCents };
    });
    const currency = entries[0]?.currency ?? 'USD';
    return sendPage(reply, donePage(entries, { viewer: viewer(req, reply), weeks, currency }));
  });

  app.get('/episodes/:id', async (req, reply) => {
    const id = episodeIdOf(episodeParams.safeParse(req.params).data?.id);
    return renderEpisode(o, req, reply, { id, outcome: null });
  });
}

function registerDecisions(app: FastifyInstance, { o }: Desk): void {
  app.post('/episodes/:id/decision', { preHandler: app.csrfProtection.bind(app) }, async (req, reply) => {
    const id = episodeIdOf(episodeParams.safeParse(req.params).data?.id);
    const body = decisionBody.safeParse(req.body);
    if (id === undefined) return notFound(req, reply);
    if (!body.success)
      return renderEpisode(o, req, reply.code(400), { id, outcome: refusal('the form was incomplete') });
    const by = req.reviewer!;
    let decision: Decision;
    if (body.data.action === 'rework') {
      const notes = body.data.notes.trim();
      const problem = notesProblem(notes);
      if (problem !== undefined) return renderEpisode(o, req, reply.code(400), { id, outcome: refusal(problem) });
      decision = { kind: 'rework', by, notes };
    } else decision = { kind: 'approve', by };
    if ((await o.store.getEpisode(id)) === undefined) return notFound(req, reply);
    let outcome: DecisionOutcome;
    try {
      const d = await sendDecision(await o.getClient(), id, decision, body.data.round);
      const what = d.kind === 'approve' ? 'approved' : 'rework requested';
      outcome = { accepted: true, message: `Accepted: round ${d.round} ${what} by ${d.by}.` };
    } catch (e) {
      if (!isPipelineError(e)) throw e;
      outcome = refusal(e.message);
      reply.code(409);
    }
    return renderEpisode(o, req, reply, { id, outcome });
  });
}

function registerMedia(app: FastifyInstance, { o }: Desk): void {
  app.get('/episodes/:id/media/:key', async (req, reply) => {
    const params = mediaParams.safeParse(req.params);
    const id = episodeIdOf(params.data?.id);
    const state = id === undefined ? undefined : await o.store.getEpisode(id);
    const media = state && params.success ? await resolveMedia(o.store, id!, state, params.data.key) : undefined;
    if (media === undefined) return notFound(req, reply);
    reply.header('cache-control', 'private, max-age=0');
    reply.type(media.contentType);
    return reply.sendFile(media.relative, media.root, { dotfiles: 'deny', acceptRanges: true });
  });
}

/**
 * The latest completed episode of the last 12 weeks, for the quotes of the steps no unfinished episode has reached
 * yet (assembly): the newest week with history is read, not all of it.
 */
async function newestCompleted(o: ReviewDeskOptions, now: Date): Promise<EpisodeState | undefined> {
  for (const weekId of lastWeeks(12, now, o.timeZone).reverse()) {
    const entries = await o.store.listHistory({ weekId: parseWeekId(weekId) });
    const last = entries.sort((a, b) => a.completed_at.localeCompare(b.completed_at)).at(-1);
    if (last) return o.store.getEpisode(last.episode_id);
  }
  return undefined;
}

function viewer(req: FastifyRequest, reply: FastifyReply): Viewer {
  return { name: req.reviewer!, csrf: reply.generateCsrf() };
}

async function renderEpisode(
  o: ReviewDeskOptions,
  req: FastifyRequest,
  reply: FastifyReply,
  { id, outcome }: { id: EpisodeId | undefined; outcome: DecisionOutcome | null },
) {
  const state = id === undefined ? undefined : await o.store.getEpisode(id);
  if (state === undefined) return notFound(req, reply);
  const playable: Record<string, boolean> = {};
  for (const key of Object.keys(state.media)) {
    const media = await resolveMedia(o.store, state.episode_id, state, key);
    playable[key] = media !== undefined && (await isPlayable(media));
  }
  // The quotes of the next steps from this episode alone: the waiting list has the store-wide ones.
  const quotes = knownQuotes([state]);
  return sendPage(
    reply,
    episodePage({
      state,
      viewer: viewer(req, reply),
      budgetCents: o.budgetCents,
      quotes,
      playable,
      outcome,
      now: new Date(),
    }),
  );
}

function notFound(req: FastifyRequest, reply: FastifyReply) {
  const who = req.reviewer === undefined ? null : viewer(req, reply);
  return sendPage(reply.code(404), errorPage('Not found', 'There is nothing here.', who));
}

function sendPage(reply: FastifyReply, body: SafeHtml): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body.text);
}

function refusal(message: string): DecisionOutcome {
  return { accepted: false, message: `Refused: ${message}` };
}

function episodeIdOf(raw: string | undefined): EpisodeId | undefined {
  if (raw === undefined) return undefined;
  try {
    return parseEpisodeId(raw).episodeId;
  } catch {
    return undefined;
  }
}

/** Listens on host:port and returns the URL and a close. */
export async function startReviewDesk(
  o: ReviewDeskOptions & { host: string; port: number },
): Promise<{ url: string; app: FastifyInstance; close(): Promise<void> }> {
  const app = await buildReviewDesk(o);
  await app.listen({ host: o.host, port: o.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : o.port;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return { url: `http://${host}:${port}`, app, close: () => app.close() };
}
