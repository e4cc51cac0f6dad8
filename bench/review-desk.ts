/**
 * The review desk's pages on a store with many episodes: the waiting list and an episode page against a 1 KiB static
 * file (the desk's stylesheet) served by the same server in the same run, as server time: Fastify's `inject()` runs
 * the whole request pipeline (hooks, session, CSRF token, rendering) without a socket, so the client and the network
 * are not in the numbers. The three kinds of request alternate, so machine noise hits them alike.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { EpisodeState } from '../src/domain/episode-state';
import { ReviewerStore } from '../src/review/reviewers';
import { AuditLog } from '../src/review/audit-log';
import { buildReviewDesk } from '../src/review/server';
import type { Prices } from '../src/vendor-api/api';
import { DEFAULT_PRICES_CENTS } from '../src/vendor-sim/simulator';
import { measured, target, type Row } from './results';
import { seedPlan, type SeedWeek } from './seed-data';
import { seedFileStore } from './seed-file-store';
import { nowMs, summarize } from './stats';

export interface ReviewBenchOptions {
  completed: number;
  waiting: number;
  requests: number;
  workDir: string;
  log: (line: string) => void;
}

/** Completed episodes from the seed plan, the newest `waiting` of them turned into episodes waiting on round 0. */
function deskPlan(completed: number, waiting: number): SeedWeek[] {
  let made = 0;
  return seedPlan(Math.ceil((completed + waiting) * 1.1) + 40)
    .map((week) => ({
      ...week,
      episodes: week.episodes.flatMap((e) => {
        if (e.history === null || made >= completed + waiting) return [];
        made += 1;
        return made <= waiting ? [{ state: waitingState(e.state), history: null }] : [e];
      }),
    }))
    .filter((w) => w.episodes.length > 0);
}

/** The first bytes the desk looks at (an MP4 `ftyp` box, a PNG signature); the rest does not matter here. */
const VIDEO_HEAD = Buffer.from('\0\0\0\x20ftypisom');
const PNG_HEAD = Buffer.from('89504e470d0a1a0a', 'hex');

function waitingState(s: EpisodeState): EpisodeState {
  const keep = (key: string) => key === 'video-r0' || key === 'cover-r0';
  const steps = Object.fromEntries(Object.entries(s.steps).filter(([k]) => keep(k)));
  const sha256 = '0'.repeat(64); // the desk shows media, it does not verify them (`episodes verify` does)
  const media = {
    'video-r0': { path: 'media/video-r0.mp4', sha256, bytes: VIDEO_HEAD.length },
    'cover-r0': { path: 'media/cover-r0.png', sha256, bytes: PNG_HEAD.length },
  };
  return {
    ...s,
    status: 'awaiting_approval',
    steps,
    ledger: s.ledger.filter((l) => l.step !== 'assembly'),
    approval: { status: 'pending', by: null, at: null, notes: null },
    media,
    completed_at: null,
  };
}

const SIMULATOR_PRICES = Object.fromEntries(
  Object.entries(DEFAULT_PRICES_CENTS).map(([kind, amount_cents]) => [kind, { amount_cents, currency: 'USD' }]),
) as Prices;

export async function benchReviewDesk(o: ReviewBenchOptions): Promise<Row[]> {
  const plan = deskPlan(o.completed, o.waiting);
  const store = await seedFileStore(o.workDir, plan);
  const waitingIds = plan.flatMap((w) => w.episodes.filter((e) => e.history === null).map((e) => e.state.episode_id));
  for (const id of waitingIds) {
    await fs.mkdir(path.join(store.mediaDir(id), 'media'), { recursive: true });
    await fs.writeFile(path.join(store.mediaDir(id), 'media', 'video-r0.mp4'), VIDEO_HEAD);
    await fs.writeFile(path.join(store.mediaDir(id), 'media', 'cover-r0.png'), PNG_HEAD);
  }
  const reviewers = new ReviewerStore(path.join(o.workDir, 'review', 'reviewers.json'));
  const token = await reviewers.add('bench');
  const app = await buildReviewDesk({
    store,
    reviewers,
    getClient: () => Promise.reject(new Error('the bench sends no decision')),
    budgetCents: 20_000,
    // The vendor's list as the simulator publishes it: the bench times the desk, not a vendor round trip.
    prices: { current: () => Promise.resolve({ ok: true, prices: SIMULATOR_PRICES, at: new Date() }) },
    timeZone: 'UTC',
    audit: new AuditLog(() => undefined),
  });
  try {
    const cookies = await signIn(app, token);
    const episode = `/episodes/${waitingIds[0]!}`;
    const kinds = { static: '/assets/desk.css', waiting: '/', episode, done: '/done' } as const;
    const samples: Record<keyof typeof kinds, number[]> = { static: [], waiting: [], episode: [], done: [] };
    let staticBytes = 0;
    let listed = 0;
    for (let i = -Math.min(20, o.requests); i < o.requests; i++) {
      for (const [kind, url] of Object.entries(kinds) as [keyof typeof kinds, string][]) {
        const start = nowMs();
        const res = await app.inject({ method: 'GET', url, cookies });
        const ms = nowMs() - start;
        if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
        if (kind === 'static') staticBytes = res.rawPayload.length;
        if (kind === 'waiting') listed = (res.body.match(/<tr>/g) ?? []).length - 1;
        if (i >= 0) samples[kind].push(ms);
      }
    }
    o.log(`review: ${o.completed} completed + ${waitingIds.length} waiting, ${o.requests} requests per page`);
    const s = summarize(samples.static);
    const row = (kind: 'waiting' | 'episode' | 'done', label: string, withTarget: boolean): Row => {
      const m = summarize(samples[kind]);
      return measured(
        'review',
        `review/${kind}`,
        label,
        {
          n: m.n,
          p50_ms: m.p50,
          p99_ms: m.p99,
          static_p50_ms: s.p50,
          static_p99_ms: s.p99,
          p99_over_static: m.p99 / s.p99,
        },
        {
          targets: withTarget ? [target('p99 / static p99', m.p99 / s.p99, 3)] : [],
          checks:
            kind === 'waiting'
              ? [{ name: 'lists every waiting episode', pass: listed === waitingIds.length, detail: `${listed} rows` }]
              : [],
          notes: [`static file: ${staticBytes} bytes, p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms`],
        },
      );
    };
    return [
      row('waiting', `waiting list (${o.completed} completed + ${waitingIds.length} waiting)`, true),
      row('episode', 'episode page (waiting episode)', true),
      row('done', `done page + chart (${o.completed} completed)`, false),
    ];
  } finally {
    await app.close();
  }
}

async function signIn(
  app: Awaited<ReturnType<typeof buildReviewDesk>>,
  token: string,
): Promise<Record<string, string>> {
  const form = await app.inject({ method: 'GET', url: '/sign-in' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
  const pre = form.cookies.find((c) => c.name === 'episodes_review_sign_in')?.value;
  if (csrf === undefined || pre === undefined) throw new Error('no CSRF token on the sign-in page');
  const res = await app.inject({
    method: 'POST',
    url: '/sign-in',
    headers: { origin: 'http://localhost:80' },
    cookies: { episodes_review_sign_in: pre },
    payload: { token, _csrf: csrf },
  });
  const session = res.cookies.find((c) => c.name === 'episodes_review_session')?.value;
  if (res.statusCode !== 303 || session === undefined) throw new Error(`sign-in: ${res.statusCode}`);
  return { episodes_review_session: session };
}
