/** Spend per ISO week against the budget, as a server-rendered SVG bar chart (no script, no library). */
import { formatMoney } from '../domain/money';
import { html, type SafeHtml } from './html';

export interface WeekSpend {
  weekId: string;
  cents: number;
  /** The week's budget: episodes completed that week times the per-episode budget. */
  budgetCents: number;
}

const W = 640;
const H = 220;
const PAD = { right: 8, top: 12, bottom: 36 };
/** Wider than any glyph of a 10 px sans-serif (DejaVu Sans digits are 6.4 px): the axis label never starts left of 0. */
const CHAR_PX = 7;

export function spendChart(weeks: readonly WeekSpend[], currency: string): SafeHtml {
  const max = Math.max(1, ...weeks.map((w) => Math.max(w.cents, w.budgetCents)));
  const top = formatMoney(max, currency);
  // The plot starts right of its longest axis label (`200.00 USD`), whatever the budget's digits.
  const left = Math.max(56, top.length * CHAR_PX + 12);
  const plotH = H - PAD.top - PAD.bottom;
  const slot = (W - left - PAD.right) / Math.max(1, weeks.length);
  const y = (cents: number) => PAD.top + plotH - (cents / max) * plotH;
  const bars = weeks.map((w, i) => {
    const x = left + i * slot;
    const over = w.cents > w.budgetCents;
    const label = `${w.weekId}: ${formatMoney(w.cents, currency)} of ${formatMoney(w.budgetCents, currency)} budget`;
    return html`<g>
      <title>${label}</title>
      <rect
        x="${(x + 4).toFixed(1)}"
        y="${y(w.cents).toFixed(1)}"
        width="${(slot - 8).toFixed(1)}"
        height="${(PAD.top + plotH - y(w.cents)).toFixed(1)}"
        fill="${over ? '#b00020' : '#457b9d'}"
      />
      ${
        w.budgetCents > 0
          ? html`<line
              x1="${(x + 2).toFixed(1)}"
              x2="${(x + slot - 2).toFixed(1)}"
              y1="${y(w.budgetCents).toFixed(1)}"
              y2="${y(w.budgetCents).toFixed(1)}"
              stroke="#e63946"
              stroke-dasharray="4 3"
            />`
          : null
      }
      <text x="${(x + slot / 2).toFixed(1)}" y="${H - PAD.bottom + 14}" font-size="10" text-anchor="middle">
        ${w.weekId.slice(5)}
      </text>
    </g>`;
  });
  return html`<svg
    role="img"
    aria-label="Spend per week for the last ${weeks.length} weeks against the budget"
    viewBox="0 0 ${W} ${H}"
    width="${W}"
    height="${H}"
    xmlns="http://www.w3.org/2000/svg"
  >
    <text x="${left - 6}" y="${PAD.top + 4}" font-size="10" text-anchor="end">${top}</text>
    <text x="${left - 6}" y="${PAD.top + plotH}" font-size="10" text-anchor="end">0</text>
    <line x1="${left}" x2="${W - PAD.right}" y1="${PAD.top + plotH}" y2="${PAD.top + plotH}" stroke="#888" />
    ${bars}
    <text x="${left}" y="${H - 4}" font-size="10">bars: spend · dashed: budget (episodes × per-episode budget)</text>
  </svg>`;
}
