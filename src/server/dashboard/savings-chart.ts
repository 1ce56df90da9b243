/**
 * What cleanup saved, per week: one stacked bar per week (weeks start on Monday, UTC) —
 * deletions and pauses — rendered on the server as inline SVG, as `chart.ts` draws the states
 * chart (no script; each bar's `<title>` is its tooltip; the numbers in a table under "Numbers").
 */
import type { FreedView, SavingsReport } from '../../api/savings.js';
import { ceiling } from './chart.js';
import { html, type Html } from './html.js';

/** Which figure the bars show. */
export type SavingsMeasure = 'cost' | 'cpuHours' | 'gibHours' | 'environmentHours';

export const measureNames: Record<SavingsMeasure, string> = {
  cost: 'cost',
  cpuHours: 'CPU-hours',
  gibHours: 'GiB-hours',
  environmentHours: 'environment-hours',
};

export interface SavingsWeek {
  /** The Monday starting it, `YYYY-MM-DD`. */
  week: string;
  delete: number;
  pause: number;
}

const dayMs = 86_400_000;

/** The Monday (UTC) of the week holding `day`. */
export function weekOf(day: string): string {
  const t = Date.parse(`${day}T00:00:00Z`);
  const weekday = (new Date(t).getUTCDay() + 6) % 7;
  return new Date(t - weekday * dayMs).toISOString().slice(0, 10);
}

/** Every week from the one holding `since` to the one holding `now`, with one project's figures (or all). */
export function savingsWeeks(
  report: SavingsReport,
  measure: SavingsMeasure,
  project: string | null,
): SavingsWeek[] {
  const weeks = new Map<string, SavingsWeek>();
  const last = weekOf(report.serverTime.slice(0, 10));
  for (let w = weekOf(report.since.slice(0, 10)); w <= last;) {
    weeks.set(w, { week: w, delete: 0, pause: 0 });
    w = new Date(Date.parse(`${w}T00:00:00Z`) + 7 * dayMs).toISOString().slice(0, 10);
  }
  for (const d of report.days) {
    if (project !== null && d.project !== project) continue;
    const week = weeks.get(weekOf(d.day));
    if (week) week[d.action] += (d as FreedView)[measure] ?? 0;
  }
  return [...weeks.values()];
}

const colours = { delete: '#8c959f', pause: '#d4a72c' };
const labels = { delete: 'deletions', pause: 'pauses' };
const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

export function savingsChart(weeks: SavingsWeek[], measure: SavingsMeasure, scope: string, id: string): Html {
  const max = ceiling(Math.max(0, ...weeks.map((w) => w.delete + w.pause)));
  const [width, height, left, right, top, bottom] = [600, 170, 48, 10, 12, 26];
  const plotH = height - top - bottom;
  const slot = (width - left - right) / Math.max(1, weeks.length);
  const barW = Math.max(1, slot * 0.72);
  const y = (n: number) => top + plotH - (n / max) * plotH;
  const unit = measureNames[measure];
  const bars = weeks.map((w, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    let base = 0;
    return (['delete', 'pause'] as const).map((action) => {
      const n = w[action];
      if (n <= 0) return '';
      const rect = html`<rect
        data-week="${w.week}"
        data-action="${action}"
        x="${x.toFixed(1)}"
        y="${y(base + n).toFixed(1)}"
        width="${barW.toFixed(1)}"
        height="${(y(base) - y(base + n)).toFixed(1)}"
        fill="${colours[action]}"
        ><title>week of ${w.week}, ${labels[action]}: ${fmt(n)} ${unit}</title></rect
      >`;
      base += n;
      return rect;
    });
  });
  const ticks = [0, max / 2, max].filter((v, i, a) => a.indexOf(v) === i);
  const xLabels = [0, Math.floor((weeks.length - 1) / 2), weeks.length - 1]
    .filter((v, i, a) => weeks[v] && a.indexOf(v) === i)
    .map(
      (i) =>
        html`<text x="${(left + i * slot + slot / 2).toFixed(1)}" y="${height - 6}" text-anchor="middle"
          >${weeks[i]!.week.slice(5)}</text
        >`,
    );
  return html`<figure class="chart" id="${id}">
    <figcaption>Freed by cleanup per week (${unit}) · ${scope}</figcaption>
    <svg
      viewBox="0 0 ${width} ${height}"
      role="img"
      aria-labelledby="${id}-title"
      xmlns="http://www.w3.org/2000/svg"
      font-size="14"
      fill="#57606a"
    >
      <title id="${id}-title">${unit} freed per week by deletions and pauses · ${scope}</title>
      ${ticks.map(
        (t) =>
          html`<line
              x1="${left}"
              x2="${width - right}"
              y1="${y(t).toFixed(1)}"
              y2="${y(t).toFixed(1)}"
              stroke="#eaeef2"
            /><text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${fmt(t)}</text>`,
      )}
      ${bars} ${xLabels}
    </svg>
    <p class="legend">
      ${(['delete', 'pause'] as const).map(
        (a) =>
          html`<span
            ><i style="background:${colours[a]}"></i>${labels[a]}
            ${fmt(weeks.reduce((n, w) => n + w[a], 0))}</span
          >`,
      )}
    </p>
    <details>
      <summary>Numbers</summary>
      <table class="chart-data">
        <thead>
          <tr>
            <th>Week of</th>
            <th>deletions</th>
            <th>pauses</th>
          </tr>
        </thead>
        <tbody>
          ${weeks.map(
            (w) =>
              html`<tr>
                <td>${w.week}</td>
                <td>${fmt(w.delete)}</td>
                <td>${fmt(w.pause)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </details>
  </figure>`;
}
