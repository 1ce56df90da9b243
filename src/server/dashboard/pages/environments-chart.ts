/**
 * The chart platform teams ask for first, on the environments list: environments by state over
 * time, one stacked bar per UTC day. Past days come from the daily counts the server records
 * (`environment_state_days`; the days before it existed are estimates, drawn paler); today is
 * counted live.
 */
import type { RecordedDay } from '../../db/repositories/environments.js';
import { barChart, type Bar } from '../common/bar-chart.js';
import { html, type Html } from '../common/html.js';

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
  return barChart({
    id: 'states-chart',
    caption: `Environments by state, ${first} to ${last} (UTC days) · ${scope}`,
    bars,
    frame: {
      title: `Environments by state per day, ${first} to ${last}`,
      left: 40,
      tickLabel: String,
      wholeTicks: true,
    },
    legend: {
      note: days.some((d) => d.estimated)
        ? html`<span class="muted">paler: estimated from first-seen and cleaned times</span>`
        : '',
      entries: states.map((state) => ({
        colour: colourOf(state),
        label: state,
        value: days.at(-1)?.counts?.[state] ?? 0,
      })),
      empty: html`<span class="muted">No environments recorded yet.</span>`,
    },
    numbers: {
      head: ['Day', ...states],
      rows: days
        .filter((d) => d.counts)
        .map((d) => [
          `${d.day}${d.estimated ? ' (estimated)' : ''}`,
          ...states.map((s) => d.counts?.[s] ?? 0),
        ]),
    },
  });
}
