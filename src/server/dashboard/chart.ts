/**
 * The chart platform teams ask for first: environments by state over time, one stacked bar per
 * UTC day, rendered on the server as inline SVG (no script: the page's CSP stays `default-src
 * 'none'`; each bar's `<title>` is its tooltip). Past days come from the daily counts the server
 * records (`environment_state_days`; the days before it existed are estimates, drawn paler);
 * today is counted live.
 */
import type { RecordedDay } from '../db/repositories/environments.js';
import { html, type Html } from './html.js';

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
export function ceiling(n: number): number {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  return ([1, 2, 5, 10].map((m) => m * p).find((v) => v >= n) ?? 10 * p) as number;
}

export function statesChart(days: StateDay[], scope: string): Html {
  const states = [...new Set(days.flatMap((d) => Object.keys(d.counts ?? {})))].sort(
    (a, b) => (stateOrder.indexOf(a) + 1 || 99) - (stateOrder.indexOf(b) + 1 || 99) || a.localeCompare(b),
  );
  const total = (d: StateDay) => Object.values(d.counts ?? {}).reduce((a, b) => a + b, 0);
  const max = ceiling(Math.max(0, ...days.map(total)));
  const [width, height, left, right, top, bottom] = [600, 170, 40, 10, 12, 26];
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(1, slot * 0.72);
  const y = (n: number) => top + plotH - (n / max) * plotH;
  const label = (day: string) => day.slice(5);
  const bars = days.map((d, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    if (!d.counts) {
      return html`<rect
        class="gap"
        x="${x.toFixed(1)}"
        y="${top + plotH - 2}"
        width="${barW.toFixed(1)}"
        height="2"
        fill="#d8dee4"
        ><title>${d.day}: not recorded</title></rect
      >`;
    }
    let base = 0;
    return states.map((state) => {
      const n = d.counts?.[state] ?? 0;
      if (n === 0) return '';
      const rect = html`<rect
        data-day="${d.day}"
        data-state="${state}"
        x="${x.toFixed(1)}"
        y="${y(base + n).toFixed(1)}"
        width="${barW.toFixed(1)}"
        height="${(y(base) - y(base + n)).toFixed(1)}"
        fill="${colourOf(state)}"
        fill-opacity="${d.estimated ? '0.45' : '1'}"
        ><title>${d.day} ${state}: ${n}${d.estimated ? ' (estimated)' : ''}</title></rect
      >`;
      base += n;
      return rect;
    });
  });
  const ticks = [0, max / 2, max].filter((v, i, a) => Number.isInteger(v) && a.indexOf(v) === i);
  const xLabels = [0, Math.floor((days.length - 1) / 2), days.length - 1]
    .filter((v, i, a) => days[v] && a.indexOf(v) === i)
    .map(
      (i) =>
        html`<text x="${(left + i * slot + slot / 2).toFixed(1)}" y="${height - 6}" text-anchor="middle"
          >${label(days[i]!.day)}</text
        >`,
    );
  const first = days[0]?.day ?? '';
  const last = days.at(-1)?.day ?? '';
  return html`<figure class="chart" id="states-chart">
    <figcaption>Environments by state, ${first} to ${last} (UTC days) · ${scope}</figcaption>
    <svg
      viewBox="0 0 ${width} ${height}"
      role="img"
      aria-labelledby="states-chart-title"
      xmlns="http://www.w3.org/2000/svg"
      font-size="14"
      fill="#57606a"
    >
      <title id="states-chart-title">Environments by state per day, ${first} to ${last}</title>
      ${ticks.map(
        (t) =>
          html`<line
              x1="${left}"
              x2="${width - right}"
              y1="${y(t).toFixed(1)}"
              y2="${y(t).toFixed(1)}"
              stroke="#eaeef2"
            /><text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${t}</text>`,
      )}
      ${bars} ${xLabels}
    </svg>
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
