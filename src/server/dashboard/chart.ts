/**
 * The chart platform teams ask for first: environments by state over time, one stacked bar per
 * UTC day, rendered on the server as inline SVG (no script: the page's CSP stays `default-src
 * 'none'`; each bar's `<title>` is its tooltip). Past days come from the daily counts the server
 * records (`environment_state_days`; the days before it existed are estimates, drawn paler);
 * today is counted live.
 */
import type { RecordedDay } from '../db/repositories/environments.js';
import { escapeHtml, html, raw, type Html } from './html.js';

export interface StateDay {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  /** Environments per state; undefined when the day was never recorded (the server was down). */
  counts: Record<string, number> | undefined;
  /** Estimated (the days before the server recorded them), not recorded. */
  estimated?: boolean;
}

const dayMs = 86_400_000;

/** The last `days` UTC days up to today: recorded counts, and today's live ones. */
export function stateDays(
  history: ReadonlyMap<string, RecordedDay>,
  today: Record<string, number>,
  now: Date,
  days = 30,
): StateDay[] {
  const out: StateDay[] = [];
  for (let i = days - 1; i >= 0; i--) {
    const day = new Date(now.getTime() - i * dayMs).toISOString().slice(0, 10);
    const recorded = history.get(day);
    out.push(
      i === 0
        ? { day, counts: today }
        : { day, counts: recorded?.counts, estimated: recorded?.estimated ?? false },
    );
  }
  return out;
}

/** The first day of `stateDays(…, now, days)`, for the history query. */
export function firstDay(now: Date, days = 30): string {
  return new Date(now.getTime() - (days - 1) * dayMs).toISOString().slice(0, 10);
}

const stateOrder = ['active', 'paused', 'cleaned'];
const colours: Record<string, string> = { active: '#2da44e', paused: '#d4a72c', cleaned: '#8c959f' };
const colourOf = (state: string) => colours[state] ?? '#0969da';

/** A round number at least `n` (1, 2, 5 × 10^k), so the axis reads well. */
function ceiling(n: number): number {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  return ([1, 2, 5, 10].map((m) => m * p).find((v) => v >= n) ?? 10 * p) as number;
}

/** One part of a stacked bar. */
interface BarPart {
  value: number;
  fill: string;
  /** Its tooltip. */
  title: string;
  /** The `data-…` attributes that name it, in order. */
  data: readonly (readonly [string, string])[];
  /** `fill-opacity`, when not 1. */
  opacity?: string;
}

/** A bar: its parts from the bottom up, or a thin grey mark where nothing was recorded. */
export type Bar = { label: string; parts: BarPart[] } | { label: string; gap: string };

interface BarsFrame {
  /** The figure's id: the SVG's title is `<id>-title`. */
  id: string;
  title: string;
  /** Room left of the plot for the tick labels. */
  left: number;
  tickLabel: (n: number) => string;
  /** Only whole numbers as ticks (counts). */
  wholeTicks?: boolean;
}

/** Stacked bars as inline SVG, on an axis from 0 to a round maximum: grid lines, bars, 3 x labels. */
export function stackedBars(bars: readonly Bar[], frame: BarsFrame): Html {
  const total = (b: Bar) => ('parts' in b ? b.parts.reduce((n, p) => n + p.value, 0) : 0);
  const max = ceiling(Math.max(0, ...bars.map(total)));
  const { id, left } = frame;
  const [width, height, right, top, bottom] = [600, 170, 10, 12, 26];
  const plotH = height - top - bottom;
  const slot = (width - left - right) / Math.max(1, bars.length);
  const barW = Math.max(1, slot * 0.72);
  const y = (n: number) => top + plotH - (n / max) * plotH;
  const rects = bars.map((bar, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    if (!('parts' in bar)) {
      return html`<rect
        class="gap"
        x="${x.toFixed(1)}"
        y="${top + plotH - 2}"
        width="${barW.toFixed(1)}"
        height="2"
        fill="#d8dee4"
        ><title>${bar.gap}</title></rect
      >`;
    }
    let base = 0;
    return bar.parts
      .filter((part) => part.value > 0)
      .map((part) => {
        const data = raw(part.data.map(([k, v]) => `data-${k}="${escapeHtml(v)}"`).join(' '));
        const opacity = part.opacity === undefined ? '' : html` fill-opacity="${part.opacity}"`;
        const rect = html`<rect
          ${data}
          x="${x.toFixed(1)}"
          y="${y(base + part.value).toFixed(1)}"
          width="${barW.toFixed(1)}"
          height="${(y(base) - y(base + part.value)).toFixed(1)}"
          fill="${part.fill}"
          ${opacity}
          ><title>${part.title}</title></rect
        >`;
        base += part.value;
        return rect;
      });
  });
  const ticks = [0, max / 2, max].filter(
    (v, i, a) => (!frame.wholeTicks || Number.isInteger(v)) && a.indexOf(v) === i,
  );
  const xLabels = [0, Math.floor((bars.length - 1) / 2), bars.length - 1]
    .filter((v, i, a) => bars[v] && a.indexOf(v) === i)
    .map(
      (i) =>
        html`<text x="${(left + i * slot + slot / 2).toFixed(1)}" y="${height - 6}" text-anchor="middle"
          >${bars[i]!.label}</text
        >`,
    );
  return html`<svg
    viewBox="0 0 ${width} ${height}"
    role="img"
    aria-labelledby="${id}-title"
    xmlns="http://www.w3.org/2000/svg"
    font-size="14"
    fill="#57606a"
  >
    <title id="${id}-title">${frame.title}</title>
    ${ticks.map(
      (t) =>
        html`<line
            x1="${left}"
            x2="${width - right}"
            y1="${y(t).toFixed(1)}"
            y2="${y(t).toFixed(1)}"
            stroke="#eaeef2"
          /><text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end"
            >${frame.tickLabel(t)}</text
          >`,
    )}
    ${rects} ${xLabels}
  </svg>`;
}

export function statesChart(days: StateDay[], scope: string): Html {
  const states = [...new Set(days.flatMap((d) => Object.keys(d.counts ?? {})))].sort(
    (a, b) => (stateOrder.indexOf(a) + 1 || 99) - (stateOrder.indexOf(b) + 1 || 99) || a.localeCompare(b),
  );
  const bars: Bar[] = days.map((d) =>
    d.counts
      ? {
          label: d.day.slice(5),
          parts: states.map((state) => ({
            value: d.counts?.[state] ?? 0,
            fill: colourOf(state),
            title: `${d.day} ${state}: ${d.counts?.[state] ?? 0}${d.estimated ? ' (estimated)' : ''}`,
            data: [
              ['day', d.day],
              ['state', state],
            ],
            ...(d.estimated ? { opacity: '0.45' } : {}),
          })),
        }
      : { label: d.day.slice(5), gap: `${d.day}: not recorded` },
  );
  const first = days[0]?.day ?? '';
  const last = days.at(-1)?.day ?? '';
  return html`<figure class="chart" id="states-chart">
    <figcaption>Environments by state, ${first} to ${last} (UTC days) · ${scope}</figcaption>
    ${stackedBars(bars, {
      id: 'states-chart',
      title: `Environments by state per day, ${first} to ${last}`,
      left: 40,
      tickLabel: String,
      wholeTicks: true,
    })}
    <p class="legend">
      ${
        days.some((d) => d.estimated)
          ? html`<span class="muted">paler: estimated from first-seen and cleaned times</span>`
          : ''
      }
      ${
        states.length === 0
          ? html`<span class="muted">No environments recorded yet.</span>`
          : states.map(
              (state) =>
                html`<span
                  ><i style="background:${colourOf(state)}"></i>${state}
                  ${days.at(-1)?.counts?.[state] ?? 0}</span
                >`,
            )
      }
    </p>
    <details>
      <summary>Numbers</summary>
      <table class="chart-data">
        <thead>
          <tr>
            <th>Day</th>
            ${states.map((s) => html`<th>${s}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${days
            .filter((d) => d.counts)
            .map(
              (d) =>
                html`<tr>
                  <td>${d.day}${d.estimated ? ' (estimated)' : ''}</td>
                  ${states.map((s) => html`<td>${d.counts?.[s] ?? 0}</td>`)}
                </tr>`,
            )}
        </tbody>
      </table>
    </details>
  </figure>`;
}
