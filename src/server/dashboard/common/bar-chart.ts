/**
 * The dashboard's charts: stacked bars rendered on the server as inline SVG (no script: the
 * page's CSP stays `default-src 'none'`; each bar's `<title>` is its tooltip), in a figure with a
 * caption, a legend and the numbers in a table under "Numbers" for whoever cannot see the bars.
 */
import { escapeHtml, html, raw, type Html } from './html.js';

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

export interface BarsFrame {
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

/** A series of the legend: its colour, its name and its figure (a total, or the latest). */
export interface LegendEntry {
  colour: string;
  label: string;
  value: string | number;
}

export interface BarChart {
  /** The figure's id (the SVG's title is `<id>-title`). */
  id: string;
  caption: Html | string;
  bars: readonly Bar[];
  frame: Omit<BarsFrame, 'id'>;
  legend: {
    /** Said before the entries. */
    note?: Html | string;
    entries: readonly LegendEntry[];
    /** Said instead of the entries when there are none. */
    empty?: Html | string;
  };
  /** The table under "Numbers": its column headings and rows of cells. */
  numbers: { head: readonly string[]; rows: readonly (readonly (string | number)[])[] };
}

/** A bar chart as a figure: caption, the bars, the legend and the numbers. */
export function barChart(chart: BarChart): Html {
  const { legend, numbers } = chart;
  return html`<figure class="chart" id="${chart.id}">
    <figcaption>${chart.caption}</figcaption>
    ${stackedBars(chart.bars, { ...chart.frame, id: chart.id })}
    <p class="legend">
      ${legend.note ?? ''}
      ${
        legend.entries.length === 0
          ? (legend.empty ?? '')
          : legend.entries.map(
              (entry) =>
                html`<span><i style="background:${entry.colour}"></i>${entry.label} ${entry.value}</span>`,
            )
      }
    </p>
    <details>
      <summary>Numbers</summary>
      <table class="chart-data">
        <thead>
          <tr>
            ${numbers.head.map((heading) => html`<th>${heading}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${numbers.rows.map(
            (row) =>
              html`<tr>
                ${row.map((cell) => html`<td>${cell}</td>`)}
              </tr>`,
          )}
        </tbody>
      </table>
    </details>
  </figure>`;
}
