/**
 * What cleanup saved, per week, on the Savings page: one stacked bar per week (weeks start on
 * Monday, UTC) — deletions and pauses — drawn by the dashboard's one bar chart (bar-chart.ts).
 */
import type { FreedView, SavingsReport } from '../../../api/savings.js';
import { formatFigure } from '../../../cleanup/format.js';
import { barChart, type Bar } from '../common/bar-chart.js';
import type { Html } from '../common/html.js';

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

export function savingsChart(weeks: SavingsWeek[], measure: SavingsMeasure, scope: string, id: string): Html {
  const unit = measureNames[measure];
  const bars: Bar[] = weeks.map((w) => ({
    label: w.week.slice(5),
    parts: (['delete', 'pause'] as const).map((action) => ({
      value: w[action],
      fill: colours[action],
      title: `week of ${w.week}, ${labels[action]}: ${formatFigure(w[action])} ${unit}`,
      data: [
        ['week', w.week],
        ['action', action],
      ],
    })),
  }));
  return barChart({
    id,
    caption: `Freed by cleanup per week (${unit}) · ${scope}`,
    bars,
    frame: {
      title: `${unit} freed per week by deletions and pauses · ${scope}`,
      left: 48,
      tickLabel: formatFigure,
    },
    legend: {
      entries: (['delete', 'pause'] as const).map((action) => ({
        colour: colours[action],
        label: labels[action],
        value: formatFigure(weeks.reduce((n, w) => n + w[action], 0)),
      })),
    },
    numbers: {
      head: ['Week of', 'deletions', 'pauses'],
      rows: weeks.map((w) => [w.week, formatFigure(w.delete), formatFigure(w.pause)]),
    },
  });
}
