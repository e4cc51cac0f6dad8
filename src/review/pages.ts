/** The desk's pages, rendered on the server from plain view data; every value goes through `html`'s escaping. */
import { CHANNEL_LABELS } from '../domain/decision';
import type { EpisodeState, HistoryEntry, Money } from '../domain/episode-state';
import { formatMoney } from '../domain/money';
import {
  costOf,
  currentRound,
  decisionCosts,
  decisionsOf,
  finalVideoRound,
  isWaiting,
  remoteJobsOf,
  roundsOf,
  waitingSince,
  type ChoiceCost,
} from './episode-view';
import { PREVIEW_NOTE, slotLabel, type SlotPreview } from '../cli/preview-commands';
import { html, page, type SafeHtml } from './html';
import type { PriceList } from './prices';
import { spendChart, type WeekSpend } from './spend-chart';

export interface Viewer {
  name: string;
  csrf: string;
}

/** `8.00 USD`, or a metered step's range `8.00 – 30.00 USD`. */
const money = (m: Money & { max_cents?: number }): string =>
  m.max_cents === undefined || m.max_cents === m.amount_cents
    ? formatMoney(m.amount_cents, m.currency)
    : `${formatMoney(m.amount_cents, '').trim()} – ${formatMoney(m.max_cents, m.currency)}`;

/** A table; a heading ending in ` $` is a money column (right-aligned). */
function table(headings: string[], rows: SafeHtml[], foot: SafeHtml | null): SafeHtml {
  const th = headings.map((h) =>
    h.endsWith(' $') ? html`<th class="money">${h.slice(0, -2)}</th>` : html`<th>${h}</th>`,
  );
  return html`<table>
    <thead>
      <tr>
        ${th}
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
    ${
      foot
        ? html`<tfoot>
            ${foot}
          </tfoot>`
        : null
    }
  </table>`;
}

export function errorPage(title: string, message: string, viewer: Viewer | null): SafeHtml {
  return page(
    title,
    html`<h1>${title}</h1>
      <p>${message}</p>
      <p><a href="/">Back to the waiting list</a></p>`,
    viewer,
  );
}

function waited(since: string | null, now: Date): string {
  if (since === null) return 'unknown';
  const minutes = Math.max(0, Math.floor((now.getTime() - Date.parse(since)) / 60_000));
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ${minutes % 60} min` : `${Math.floor(hours / 24)} days ${hours % 24} h`;
}

function budgetCell(cost: Money, budgetCents: number): SafeHtml {
  const over = cost.amount_cents > budgetCents;
  return html`<span class="${over ? 'over' : ''}">${money(cost)} of ${formatMoney(budgetCents, cost.currency)}</span>`;
}

/** The waiting list's line: what each choice's next paid step costs at the vendor's current prices. */
function pricesText(prices: PriceList): string {
  if (!prices.ok) return `price unavailable: ${prices.reason}`;
  return `approve: assembly ${money(prices.prices.assembly)} · rework: ${money(prices.prices.rework)}`;
}

export function waitingPage(
  states: readonly EpisodeState[],
  ctx: { viewer: Viewer; budgetCents: number; prices: PriceList; now: Date },
): SafeHtml {
  const waiting = states
    .filter(isWaiting)
    .map((s) => ({ state: s, since: waitingSince(s) }))
    .sort(
      (a, b) => (a.since ?? '').localeCompare(b.since ?? '') || a.state.episode_id.localeCompare(b.state.episode_id),
    );
  const rows = waiting.map(
    ({ state, since }) =>
      html`<tr>
        <td><a href="/episodes/${state.episode_id}">${state.episode_id}</a></td>
        <td>${currentRound(state)}</td>
        <td title="${since ?? ''}">${waited(since, ctx.now)}</td>
        <td class="money">${budgetCell(costOf(state), ctx.budgetCents)}</td>
      </tr>`,
  );
  return page(
    'Waiting',
    html`<h1>Waiting for a decision</h1>
      ${
        rows.length === 0
          ? html`<p>No episode is waiting for a decision.</p>`
          : table(['Episode', 'Round', 'Waiting', 'Cost so far / budget $'], rows, null)
      }
      <p>Next paid step: ${pricesText(ctx.prices)}.</p>`,
    ctx.viewer,
  );
}

export type DecisionOutcome = { accepted: true; message: string } | { accepted: false; message: string };

export interface EpisodePageData {
  state: EpisodeState;
  viewer: Viewer;
  budgetCents: number;
  /** The vendor's current prices, for what each choice will cost. */
  prices: PriceList;
  /** Media keys whose file is real media (false: the simulator had no ffmpeg). */
  playable: Record<string, boolean>;
  outcome: DecisionOutcome | null;
  now: Date;
}

function mediaUrl(state: EpisodeState, key: string): string {
  return `/episodes/${state.episode_id}/media/${key}`;
}

function videoBlock(d: EpisodePageData, key: string | null, label: string): SafeHtml {
  if (key === null) return html`<p>${label}: not delivered yet.</p>`;
  return html`<figure>
    <video controls preload="metadata" src="${mediaUrl(d.state, key)}" aria-label="${label}"></video>
    <figcaption>
      ${label} (<a href="${mediaUrl(d.state, key)}">${key}</a>)
      ${
        d.playable[key] === false
          ? html`<span class="notice warn"
              >Preview not playable: the vendor simulator had no ffmpeg, so this file holds synthetic bytes.</span
            >`
          : null
      }
    </figcaption>
  </figure>`;
}

function decisionForms(d: EpisodePageData, round: number): SafeHtml {
  if (!isWaiting(d.state)) return html`<p>No decision is waiting (status: ${d.state.status}).</p>`;
  const hidden = html`<input type="hidden" name="_csrf" value="${d.viewer.csrf}" />
    <input type="hidden" name="round" value="${round}" />`;
  const url = `/episodes/${d.state.episode_id}/decision`;
  const { prices } = d;
  const costs = prices.ok ? decisionCosts(d.state, prices.prices, d.budgetCents) : null;
  const cost = (id: 'approve' | 'rework', what: string): SafeHtml =>
    prices.ok && costs
      ? costText(costs[id], { id: `${id}-cost`, what, currency: costs.currency })
      : html`<p id="${id}-cost">${what}: price unavailable: ${prices.ok ? '' : prices.reason}.</p>`;
  return html`<section aria-label="Decision">
    <h2>Decision on round ${round}</h2>
    ${
      prices.ok && costs
        ? html`<p>
            Budget left: <strong>${formatMoney(costs.leftCents, costs.currency)}</strong> of
            ${formatMoney(d.budgetCents, costs.currency)}. Prices as the vendor published them at
            ${prices.at.toISOString()}; the vendor quotes again when a step is sent.
          </p>`
        : null
    }
    <form method="post" action="${url}">
      ${hidden} ${cost('approve', 'Approve costs')}
      <button type="submit" name="action" value="approve" aria-describedby="approve-cost">Approve</button>
    </form>
    <form method="post" action="${url}">
      ${hidden}
      <p>
        <label for="notes">Notes</label><br /><textarea id="notes" name="notes" maxlength="4000" required></textarea>
      </p>
      ${cost('rework', 'A rework costs')}
      <button type="submit" name="action" value="rework" aria-describedby="rework-cost">Request rework</button>
    </form>
  </section>`;
}

/** `Approve costs 8.00 USD (assembly); budget left after: 147.00 USD.`, flagged when it would exceed the budget. */
function costText(c: ChoiceCost, o: { id: string; what: string; currency: string }): SafeHtml {
  const steps = c.steps.map((s) => (s.step === 'rework' ? `rework round ${s.round}` : s.step)).join(', ');
  const left = c.leftAfterCents;
  return html`<p id="${o.id}">
    ${o.what} <strong>${money(c.total)}</strong> (${steps})${
      left === null ? null : html`; budget left after: ${formatMoney(left, o.currency)}`
    }.${
      left !== null && left < 0
        ? html` <span class="over"
            >Over the budget by ${formatMoney(-left, o.currency)}: the vendor step would be refused.</span
          >`
        : null
    }
  </p>`;
}

export function episodePage(d: EpisodePageData): SafeHtml {
  const { state } = d;
  const round = currentRound(state);
  const rounds = roundsOf(state);
  const cost = costOf(state);
  const completed = state.status === 'completed';
  const current = completed ? (state.media.video ? 'video' : null) : (rounds.at(-1)?.videoKey ?? null);
  const cover = state.media.cover ? 'cover' : state.media['cover-r0'] ? 'cover-r0' : null;
  const earlier = earlierRoundItems(d, completed ? rounds : rounds.slice(0, -1));
  const outcome = d.outcome
    ? html`<p class="notice ${d.outcome.accepted ? 'ok' : 'refused'}" role="status">${d.outcome.message}</p>`
    : null;
  const from = finalVideoRound(state);
  const label = completed ? `Final video, assembled from round ${from ?? '?'}` : `Round ${round}`;
  return page(
    state.episode_id,
    html`<h1>Episode ${state.episode_id}</h1>
      ${outcome}
      <p>
        Status: <strong>${state.status}</strong>${lastDecision(state)} · cost so far ${budgetCell(cost, d.budgetCents)}
      </p>
      <section aria-label="Current cut">
        <h2>${completed ? 'Final video' : `Round ${round}`}</h2>
        ${videoBlock(d, current, label)} ${coverBlock(d, cover)}
      </section>
      ${decisionForms(d, round)} ${decisionsTable(state)}
      ${
        earlier.length > 0
          ? html`<section>
              <h2>Earlier rounds</h2>
              <ol start="0">
                ${earlier}
              </ol>
            </section>`
          : null
      }
      <section>
        <h2>Ledger</h2>
        ${table(
          ['Step', 'Remote job', 'Recorded', 'Amount $'],
          ledgerRows(state),
          html`<tr>
            <th colspan="3">Total</th>
            <th class="money">${money(cost)}</th>
          </tr>`,
        )}
      </section>
      <section>
        <h2>Remote jobs</h2>
        ${table(['Step', 'Status', 'Vendor job', 'Quoted $'], remoteJobRows(state), null)}
      </section>`,
    d.viewer,
  );
}

/** ` · last decision: approved by alice through the review desk` (the channel where the store has it). */
function lastDecision(state: EpisodeState): SafeHtml | null {
  const approval = state.approval;
  if (!approval || approval.status === 'pending') return null;
  const last = decisionsOf(state).at(-1);
  const via = last && last.by === approval.by ? html` through ${CHANNEL_LABELS[last.channel]}` : null;
  return html` · last decision: ${approval.status}${approval.by ? html` by ${approval.by}${via}` : null}`;
}

/** Every decision taken: round, what, who, through which channel, when. */
function decisionsTable(state: EpisodeState): SafeHtml | null {
  const decisions = decisionsOf(state);
  if (decisions.length === 0) return null;
  const rows = decisions.map(
    (x) =>
      html`<tr>
        <td>${x.round}</td>
        <td>${x.kind === 'approve' ? 'approved' : 'rework requested'}</td>
        <td>${x.by}</td>
        <td>${CHANNEL_LABELS[x.channel]}</td>
        <td>${x.at}</td>
      </tr>`,
  );
  return html`<section aria-label="Decisions">
    <h2>Decisions</h2>
    ${table(['Round', 'Decision', 'By', 'Through', 'At'], rows, null)}
  </section>`;
}

/** The rounds before the current one (all of them once completed), each with its cut and its rework notes. */
function earlierRoundItems(d: EpisodePageData, rounds: ReturnType<typeof roundsOf>): SafeHtml[] {
  return rounds.map(
    (r) =>
      html`<li>
        ${videoBlock(d, r.videoKey, `Round ${r.round}`)}
        ${r.reworkNotes !== null ? html`<p>Rework notes: <q class="notes">${r.reworkNotes}</q></p>` : null}
      </li>`,
  );
}

/** Every round shows the one cover, made in round 0 (`cover-r0`). */
function coverBlock(d: EpisodePageData, cover: string | null): SafeHtml {
  if (!cover) return html`<p>Cover: not delivered yet.</p>`;
  return html`<figure>
    <img class="cover" src="${mediaUrl(d.state, cover)}" alt="Cover of ${d.state.episode_id}, round 0" />
    ${
      d.playable[cover] === false
        ? html`<figcaption class="notice warn">Cover preview not viewable (synthetic bytes).</figcaption>`
        : null
    }
  </figure>`;
}

function ledgerRows(state: EpisodeState): SafeHtml[] {
  return state.ledger.map(
    (l) =>
      html`<tr>
        <td>${l.step}-r${l.round}</td>
        <td>${l.remote_job_id}</td>
        <td>${l.recorded_at}</td>
        <td class="money">${formatMoney(l.amount_cents, l.currency)}</td>
      </tr>`,
  );
}

function remoteJobRows(state: EpisodeState): SafeHtml[] {
  return remoteJobsOf(state).map(
    (j) =>
      html`<tr>
        <td>${j.key}</td>
        <td>${j.status}</td>
        <td>${j.remoteJobId ?? '-'}</td>
        <td class="money">${j.quoted ? money(j.quoted) : '-'}</td>
      </tr>`,
  );
}

export function donePage(
  entries: readonly HistoryEntry[],
  ctx: { viewer: Viewer; weeks: readonly WeekSpend[]; currency: string; next: SlotPreview | string },
): SafeHtml {
  const rows = [...entries]
    .sort((a, b) => b.completed_at.localeCompare(a.completed_at))
    .map(
      (e) =>
        html`<tr>
          <td><a href="/episodes/${e.episode_id}">${e.episode_id}</a></td>
          <td>${e.completed_at}</td>
          <td>${e.media.video ? html`<a href="/episodes/${e.episode_id}/media/video">final video</a>` : 'none'}</td>
          <td class="money">${formatMoney(e.total_cost_cents, e.currency)}</td>
        </tr>`,
    );
  return page(
    'Done',
    html`<h1>Completed episodes</h1>
      <section>
        <h2>Spend per week</h2>
        ${spendChart(ctx.weeks, ctx.currency)}
      </section>
      ${nextSlotsSection(ctx.next)}
      ${
        rows.length === 0
          ? html`<p>No completed episode yet.</p>`
          : table(['Episode', 'Completed', 'Final video', 'Total cost $'], rows, null)
      }`,
    ctx.viewer,
  );
}

/** `episodes preview` on the Done page: the ids the next runs would take now, or why there is no preview. */
function nextSlotsSection(next: SlotPreview | string): SafeHtml {
  if (typeof next === 'string')
    return html`<section>
      <h2>Next episodes</h2>
      <p>${next}</p>
    </section>`;
  const rows = next.slots.map(
    (s) =>
      html`<tr>
        <td>${slotLabel(s.slot)}</td>
        <td>${s.weekId}</td>
        <td>${s.episodeId ?? 'week full'}</td>
      </tr>`,
  );
  return html`<section>
    <h2>Next episodes</h2>
    ${table(['Slot', 'Week', 'Episode id if it ran now'], rows, null)}
    <p>${PREVIEW_NOTE}</p>
  </section>`;
}
