/**
 * Working-hours schedules (`environments[].cleanup.schedule`): an environment is awake from
 * `wakeAt` to `sleepAt` (local wall-clock times in `timeZone`, an IANA zone) on its `weekdays`,
 * asleep (paused) otherwise. All time-zone arithmetic goes through luxon; nothing here adds or
 * subtracts an offset of its own.
 *
 * Daylight-saving changes (docs/cleanup.md#schedules):
 * - a wall time that does not exist (inside the spring-forward gap, e.g. 02:30 in Berlin on the
 *   last Sunday of March) fires once, at that time shifted forward by the gap (03:30 CEST);
 * - a wall time that exists twice (inside the autumn overlap, e.g. 02:30 in Berlin on the last
 *   Sunday of October) fires once, at its first occurrence (02:30 CEST, 00:30 UTC).
 * Both are what Temporal calls the "compatible" disambiguation.
 *
 * A `sleepAt` earlier than `wakeAt` (say wake 22:00, sleep 06:00) is a night shift: awake from
 * `wakeAt` on a listed weekday until `sleepAt` the next morning.
 */
import { DateTime } from 'luxon';

import type { CleanupSchedule } from './policy.js';

export type Schedule = CleanupSchedule;
export type Weekday = Schedule['weekdays'][number];
/** Luxon's weekday numbers (1 = Monday) as the schedule spells them. */
const weekdayNames: readonly Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

export interface Transition {
  kind: 'sleep' | 'wake';
  /** The instant (epoch ms). */
  at: number;
  /** The wall time it was written as, local to the schedule's zone (`2026-03-29 08:00 CEST`). */
  local: string;
  /** The instant in UTC (`2026-03-29 06:00 UTC`). */
  utc: string;
}

const minutesOf = (clock: string): number => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));

/**
 * The instant a local wall time on a local date fires: the earlier of its two occurrences in an
 * overlap, the time shifted by the gap in a gap.
 */
function instantOf(zone: string, date: DateTime, clock: string): DateTime {
  const wall = {
    year: date.year,
    month: date.month,
    day: date.day,
    hour: Number(clock.slice(0, 2)),
    minute: Number(clock.slice(3, 5)),
  };
  // luxon shifts a time in a gap forward by the gap, and picks the later of two in an overlap.
  const chosen = DateTime.fromObject(wall, { zone });
  // An overlap: the zone's offset falls around that wall time; the same reading comes earlier.
  const fall = chosen.minus({ hours: 3 }).offset - chosen.plus({ hours: 3 }).offset;
  if (fall > 0) {
    const earlier = chosen.minus({ minutes: fall });
    if (earlier.hour === wall.hour && earlier.minute === wall.minute && earlier.day === wall.day)
      return earlier;
  }
  return chosen;
}

interface Interval {
  wake: DateTime;
  sleep: DateTime;
}

/** The awake interval that starts on the local date `date`, if that date is a listed weekday. */
function intervalStarting(schedule: Schedule, date: DateTime): Interval | undefined {
  const weekday = weekdayNames[date.weekday - 1]!;
  if (!schedule.weekdays.includes(weekday)) return undefined;
  const wake = instantOf(schedule.timeZone, date, schedule.wakeAt);
  const overnight = minutesOf(schedule.sleepAt) <= minutesOf(schedule.wakeAt);
  const sleep = instantOf(schedule.timeZone, overnight ? date.plus({ days: 1 }) : date, schedule.sleepAt);
  return { wake, sleep };
}

/** The awake intervals starting on the local dates from the day before `from` to the day after `to`. */
function intervals(schedule: Schedule, from: number, to: number): Interval[] {
  const zone = schedule.timeZone;
  let date = DateTime.fromMillis(from, { zone }).startOf('day').minus({ days: 1 });
  const last = DateTime.fromMillis(to, { zone }).startOf('day').plus({ days: 1 });
  const list: Interval[] = [];
  while (date <= last) {
    const interval = intervalStarting(schedule, date);
    if (interval) {
      const previous = list[list.length - 1];
      // Back-to-back intervals (a night shift every night) are one: no sleep-and-wake at once.
      if (previous && previous.sleep.toMillis() >= interval.wake.toMillis()) previous.sleep = interval.sleep;
      else list.push(interval);
    }
    date = date.plus({ days: 1 });
  }
  return list;
}

/** True when the schedule has the environment awake at `at`. */
export function isAwake(schedule: Schedule, at: number): boolean {
  return intervals(schedule, at, at).some((i) => i.wake.toMillis() <= at && at < i.sleep.toMillis());
}

const localFormat = 'yyyy-MM-dd HH:mm ZZ';

function transition(kind: Transition['kind'], instant: DateTime): Transition {
  return {
    kind,
    at: instant.toMillis(),
    local: `${instant.toFormat(localFormat)} ${instant.zoneName ?? ''}`,
    utc: instant.toUTC().toFormat("yyyy-MM-dd HH:mm 'UTC'"),
  };
}

/** Every sleep and wake in `(from, to]`, in order. */
export function transitions(schedule: Schedule, from: number, to: number): Transition[] {
  const list: Transition[] = [];
  for (const i of intervals(schedule, from, to)) {
    if (i.wake.toMillis() > from && i.wake.toMillis() <= to) list.push(transition('wake', i.wake));
    if (i.sleep.toMillis() > from && i.sleep.toMillis() <= to) list.push(transition('sleep', i.sleep));
  }
  return list.sort((a, b) => a.at - b.at);
}

/** The last transition at or before `at` (within the last 8 days), or undefined. */
export function lastTransition(schedule: Schedule, at: number): Transition | undefined {
  const list = transitions(schedule, at - 8 * 86_400_000, at);
  return list[list.length - 1];
}

/** The next transition after `at` (within 8 days), or undefined (no weekday listed). */
export function nextTransition(schedule: Schedule, at: number): Transition | undefined {
  return transitions(schedule, at, at + 8 * 86_400_000)[0];
}

/** `wake 08:00, sleep 20:00 Europe/Berlin, mon–fri`: for sentences. */
export function describeSchedule(schedule: Schedule): string {
  return `awake ${schedule.wakeAt}–${schedule.sleepAt} ${schedule.timeZone}, ${schedule.weekdays.join(' ')}`;
}

/** `2026-03-29 08:00 +02:00 Europe/Berlin`: an instant as the schedule's zone reads it. */
export function formatLocal(schedule: Schedule, at: number): string {
  return transition('wake', DateTime.fromMillis(at, { zone: schedule.timeZone })).local;
}
