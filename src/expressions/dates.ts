/**
 * The date helpers of templates (Garden's formatDateUtc, shiftDateUtc, modifyDateUtc), in UTC.
 * Formats use the Unicode tokens date-fns reads (`yyyy-MM-dd HH:mm:ss`); written here rather than
 * loading a date library on every command's path for three functions.
 */

/** Reads a date argument; the message is completed by the caller. */
export function parseDate(text: string): Date | undefined {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export const shiftUnits = ['years', 'months', 'weeks', 'days', 'hours', 'minutes', 'seconds'] as const;
export const modifyUnits = [
  'years',
  'months',
  'days',
  'hours',
  'minutes',
  'seconds',
  'milliseconds',
] as const;

const millisecondsPer: Record<string, number> = {
  weeks: 7 * 86_400_000,
  days: 86_400_000,
  hours: 3_600_000,
  minutes: 60_000,
  seconds: 1000,
};

/** Adds an amount of a unit; a month or year later on the 31st is the month's last day, as date-fns does. */
export function shiftDate(date: Date, amount: number, unit: (typeof shiftUnits)[number]): Date {
  if (unit === 'years' || unit === 'months') {
    const months = unit === 'years' ? amount * 12 : amount;
    const result = new Date(date.getTime());
    const day = result.getUTCDate();
    result.setUTCDate(1);
    result.setUTCMonth(result.getUTCMonth() + months);
    const lastDay = new Date(Date.UTC(result.getUTCFullYear(), result.getUTCMonth() + 1, 0)).getUTCDate();
    result.setUTCDate(Math.min(day, lastDay));
    return result;
  }
  return new Date(date.getTime() + amount * millisecondsPer[unit]!);
}

/** Sets one field (months count from 0, as in Garden). */
export function modifyDate(date: Date, amount: number, unit: (typeof modifyUnits)[number]): Date {
  const result = new Date(date.getTime());
  const setters: Record<(typeof modifyUnits)[number], (n: number) => number> = {
    years: (n) => result.setUTCFullYear(n),
    months: (n) => result.setUTCMonth(n),
    days: (n) => result.setUTCDate(n),
    hours: (n) => result.setUTCHours(n),
    minutes: (n) => result.setUTCMinutes(n),
    seconds: (n) => result.setUTCSeconds(n),
    milliseconds: (n) => result.setUTCMilliseconds(n),
  };
  setters[unit](amount);
  return result;
}

const monthNames = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const dayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** The value of one run of a pattern letter (`yyyy`, `MM`), or undefined when not supported. */
function field(date: Date, letter: string, width: number): string | undefined {
  const hours = date.getUTCHours();
  switch (letter) {
    case 'y':
      return width === 2 ? pad(date.getUTCFullYear() % 100, 2) : pad(date.getUTCFullYear(), width);
    case 'M': {
      const month = date.getUTCMonth();
      if (width >= 4) return monthNames[month];
      if (width === 3) return monthNames[month]!.slice(0, 3);
      return pad(month + 1, width);
    }
    case 'd':
      return pad(date.getUTCDate(), width);
    case 'E': {
      const name = dayNames[date.getUTCDay()]!;
      return width >= 4 ? name : name.slice(0, 3);
    }
    case 'H':
      return pad(hours, width);
    case 'h':
      return pad(hours % 12 === 0 ? 12 : hours % 12, width);
    case 'm':
      return pad(date.getUTCMinutes(), width);
    case 's':
      return pad(date.getUTCSeconds(), width);
    case 'S':
      return pad(date.getUTCMilliseconds(), 3).slice(0, width).padEnd(width, '0');
    case 'a':
      return hours < 12 ? 'AM' : 'PM';
    default:
      return undefined;
  }
}

/** Formats a date in UTC; throws a plain Error naming an unsupported pattern letter. */
export function formatDate(date: Date, format: string): string {
  let out = '';
  let i = 0;
  while (i < format.length) {
    const c = format[i]!;
    if (c === "'") {
      const end = format.indexOf("'", i + 1);
      if (end === i + 1) out += "'";
      else out += format.slice(i + 1, end < 0 ? undefined : end);
      i = end < 0 ? format.length : end + 1;
      continue;
    }
    if (!/[A-Za-z]/.test(c)) {
      out += c;
      i++;
      continue;
    }
    let width = 1;
    while (format[i + width] === c) width++;
    const value = field(date, c, width);
    if (value === undefined) {
      throw new Error(
        `unsupported letter "${c}" in the format; use y, M, d, E, H, h, m, s, S, a, or quote text in '…'`,
      );
    }
    out += value;
    i += width;
  }
  return out;
}
