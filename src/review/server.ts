/**
 * The review desk: Fastify with its own plugins for cookies, forms and static files (Range for the assets; media are
 * streamed from one opened descriptor, media.ts), pages rendered on the server (pages.ts). Nothing but sign-in,
 * `/health` and the stylesheet answers without a session; every POST must come from the desk's own origin and carry
 * the CSRF token derived from its session (desk.ts); the decision's `by` is the session's reviewer. Sessions live in
 * the store (sessions.ts); sign-in is by token, OIDC, or both (sign-in-routes.ts). Every route parses its input with
 * zod. Reads come from the store; decisions go to the production workflow as the CLI's updates
 * (src/review/decision-updates.ts). What the desk sees is in its audit log (audit-log.ts).
 */
import * as path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import fastifyStatic from '@fastify/static';
import type { Server } from 'node:http';
import Fastify, {
  type FastifyHttpOptions,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { z } from 'zod';
import { sendDecision, type Decision } from './decision-updates';
import { notesProblem } from '../domain/decision';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { isPipelineError } from '../domain/errors';
import { lastWeeks } from '../domain/week-id';
import { openPublishedPrices, openReviewSessions } from '../store/open-store';
import { AuditLog } from './audit-log';
import {
  DEFAULT_CONNECTION_LIMITS,
  audit,
  csrfOk,
  notFound,
  refused,
  registerHooks,
  sendPage,
  viewer,
  type Desk,
  type ReviewDeskOptions,
} from './desk';
import { isWaiting } from './episode-view';
import { FailureLimit } from './guards';
import { isPlayable, mediaKeySchema, mediaResponse, openMedia } from './media';
import { OidcSignIn } from './oidc';
import { slotPreview } from '../cli/preview-commands';
import { SCHEDULE_ID } from '../domain/names';
import { donePage, episodePage, waitingPage, type DecisionOutcome } from './pages';
import { publishedPriceSource } from './prices';
import { DEFAULT_SESSION_SETTINGS, DeskSessions, deskCookies } from './sessions';
import { loadSessionKey, sessionKeyFile } from './session-key';
import { registerSignIn } from './sign-in-routes';
import type { WeekSpend } from './spend-chart';

export { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits, type ReviewDeskOptions } from './desk';

const ASSETS = path.resolve(__dirname, '..', '..', '..', 'src', 'review', 'assets');

const episodeParams = z.strictObject({ id: z.string().max(40) });
const mediaParams = z.strictObject({ id: z.string().max(40), key: mediaKeySchema });
const decisionBody = z.discriminatedUnion('action', [
  z.object({ action: z.literal('approve'), round: z.coerce.number().int().min(0).max(9999), _csrf: z.string() }),
  z.object({
    action: z.literal('rework'),
    round: z.coerce.number().int().min(0).max(9999),
    notes: z.string().max(4000),
    _csrf: z.string(),
  }),
]);

export async function buildReviewDesk(o: ReviewDeskOptions): Promise<FastifyInstance> {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...o.limits };
  const options: FastifyHttpOptions<Server> = {
    logger: false,
    trustProxy: trustProxyOf(o.trustProxy),
    bodyLimit: 64 * 1024,
    connectionTimeout: limits.idleMs,
    keepAliveTimeout: limits.keepAliveMs,
    requestTimeout: limits.requestMs,
    // How often Node looks for requests past their headers or request timeout.
    http: { headersTimeout: limits.headersMs, connectionsCheckingInterval: Math.min(1_000, limits.headersMs) },
  };
  const app = Fastify(options);
  app.server.maxConnections = limits.maxConnections;
  const https = o.publicUrl?.protocol === 'https:';
  const limit = o.signInLimit ?? { max: 10, timeWindowMs: 5 * 60_000 };
  const desk: Desk = {
    o,
    sessions: new DeskSessions(
      o.sessions ?? openReviewSessions(o.store),
      { ...DEFAULT_SESSION_SETTINGS, ...o.sessionSettings },
      loadSessionKey(sessionKeyFile(o.reviewers.file)),
    ),
    oidc: o.oidc ? new OidcSignIn(o.oidc) : undefined,
    audit: o.audit ?? AuditLog.toStderr(),
    limit: new FailureLimit(limit.max, limit.timeWindowMs),
    https,
    cookie: { path: '/', httpOnly: true, secure: https ? true : 'auto' },
    names: deskCookies(https),
    prices: o.prices ?? publishedPriceSource(openPublishedPrices(o.store)),
  };
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody);
  await app.register(fastifyStatic, { root: ASSETS, prefix: '/assets/', index: false, list: false });
  registerHooks(app, desk);
  app.addHook('onClose', () => Promise.resolve(desk.audit.flush()));
  registerSignIn(app, desk);
  registerPages(app, desk);
  registerDecisions(app, desk);
  registerMedia(app, desk);
  app.setNotFoundHandler((req, reply) => notFound(req, reply));
  return app;
}

function registerPages(app: FastifyInstance, desk: Desk): void {
  const { o } = desk;
  app.get('/', async (req, reply) => {
    // Only the unfinished ones are read: a store of years of completed episodes costs this page nothing.
    const states = await o.store.listUnfinishedEpisodes();
    return sendPage(
      reply,
      waitingPage(states, {
        viewer: viewer(req, reply),
        budgetCents: o.budgetCents,
        prices: await desk.prices.current(),
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
    // Temporal down or no schedule: the page still shows, saying why there is no preview.
    const next = await o
      .getClient()
      .then((client) =>
        slotPreview(client, o.store, { scheduleId: SCHEDULE_ID, slots: 3, fallbackTimezone: o.timeZone }),
      )
      .catch((e: unknown) => `No preview: ${e instanceof Error ? e.message : String(e)}`);
    return sendPage(reply, donePage(entries, { viewer: viewer(req, reply), weeks, currency, next }));
  });

  app.get('/episodes/:id', async (req, reply) => {
    const id = episodeIdOf(episodeParams.safeParse(req.params).data?.id);
    return renderEpisode(desk, req, reply, { id, outcome: null });
  });
}

function registerDecisions(app: FastifyInstance, desk: Desk): void {
  const { o } = desk;
  app.post('/episodes/:id/decision', async (req, reply) => {
    if (!csrfOk(desk, req, 'session')) return refused(req, reply, 'The form was not this session’s; reload the page.');
    const id = episodeIdOf(episodeParams.safeParse(req.params).data?.id);
    const body = decisionBody.safeParse(req.body);
    if (id === undefined) return notFound(req, reply);
    if (!body.success)
      return renderEpisode(desk, req, reply.code(400), { id, outcome: refusal('the form was incomplete') });
    const by = req.deskSession!.record.reviewer;
    let decision: Decision;
    if (body.data.action === 'rework') {
      const notes = body.data.notes.trim();
      const problem = notesProblem(notes);
      if (problem !== undefined) return renderEpisode(desk, req, reply.code(400), { id, outcome: refusal(problem) });
      decision = { kind: 'rework', by, notes };
    } else decision = { kind: 'approve', by };
    if ((await o.store.getEpisode(id)) === undefined) return notFound(req, reply);
    let outcome: DecisionOutcome;
    try {
      const d = await sendDecision(await o.getClient(), id, decision, { pinned: body.data.round, door: 'desk' });
      const what = d.kind === 'approve' ? 'approved' : 'rework requested';
      outcome = { accepted: true, message: `Accepted: round ${d.round} ${what} by ${d.by}.` };
    } catch (e) {
      if (!isPipelineError(e)) throw e;
      outcome = refusal(e.message);
      reply.code(409);
    }
    auditDecision(desk, req, { id, kind: decision.kind, round: body.data.round, outcome });
    return renderEpisode(desk, req, reply, { id, outcome });
  });
}

function auditDecision(
  desk: Desk,
  req: FastifyRequest,
  d: { id: EpisodeId; kind: 'approve' | 'rework'; round: number; outcome: DecisionOutcome },
): void {
  const { record } = req.deskSession!;
  audit(desk, req, {
    event: 'decision',
    channel: 'desk',
    method: record.method,
    reviewer: record.reviewer,
    episode: d.id,
    round: d.round,
    kind: d.kind,
    outcome: d.outcome.accepted ? 'accepted' : 'refused',
    ...(d.outcome.accepted ? {} : { reason: d.outcome.message }),
  });
}

function registerMedia(app: FastifyInstance, { o }: Desk): void {
  app.get('/episodes/:id/media/:key', async (req, reply) => {
    const params = mediaParams.safeParse(req.params);
    const id = episodeIdOf(params.data?.id);
    const state = id === undefined ? undefined : await o.store.getEpisode(id);
    const media = state && params.success ? await openMedia(o.store, id!, state, params.data.key) : undefined;
    if (media === undefined) return notFound(req, reply);
    const res = mediaResponse(media, req.headers.range);
    reply.code(res.status).headers({ ...res.headers, 'cache-control': 'private, max-age=0' });
    return reply.send(res.body ?? '');
  });
}

async function renderEpisode(
  { o, prices: source }: Desk,
  req: FastifyRequest,
  reply: FastifyReply,
  { id, outcome }: { id: EpisodeId | undefined; outcome: DecisionOutcome | null },
) {
  const state = id === undefined ? undefined : await o.store.getEpisode(id);
  if (state === undefined) return notFound(req, reply);
  const playable: Record<string, boolean> = {};
  for (const key of Object.keys(state.media)) {
    const media = await openMedia(o.store, state.episode_id, state, key);
    try {
      playable[key] = media !== undefined && (await isPlayable(media));
    } finally {
      await media?.handle.close();
    }
  }
  const prices = isWaiting(state) ? await source.current() : ({ ok: false, reason: 'no decision waits' } as const);
  return sendPage(
    reply,
    episodePage({
      state,
      viewer: viewer(req, reply),
      budgetCents: o.budgetCents,
      prices,
      playable,
      outcome,
      now: new Date(),
    }),
  );
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

/**
 * A hop count trusts that many proxies in front, whoever they are (as Express's `trust proxy`; Fastify itself now
 * trusts nobody for a bare number): only for a desk that nothing but its proxy can reach. Addresses/CIDRs are checked.
 */
function trustProxyOf(t: ReviewDeskOptions['trustProxy']): FastifyHttpOptions<Server>['trustProxy'] {
  if (typeof t === 'number') return (_address: string, hop: number) => hop < t;
  return t ?? false;
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
