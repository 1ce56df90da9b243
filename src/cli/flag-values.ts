/**
 * Parsers for the values of command-line flags: each refuses a value out of its range with a
 * usage error naming the flag (exit 2), before any command runs — and before a request carries
 * the value to a server, whose schema error would name a field of its API instead of the flag.
 */
import { durationWording, parseDuration } from '../cleanup/policy.js';
import { TendError } from '../errors.js';

/** A parser for `--<flag> <n>`, a whole number (of `unit`, when given) from `min` to `max`. */
export function wholeNumber(
  flag: string,
  min: number,
  max: number,
  unit?: string,
): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^[0-9]+$/.test(value) || !Number.isInteger(n) || n < min || n > max) {
      const what = unit ? `a whole number of ${unit}` : 'a whole number';
      const range = max >= 1_000_000 ? `from ${min}` : `from ${min} to ${max}`;
      throw new TendError('TEND_USAGE', `--${flag} expects ${what} ${range}, got "${value}"`);
    }
    return n;
  };
}

const dayMs = 86_400_000;

/**
 * A parser for `--<flag> <duration>` (`30m`, `8h`, `3d`), worded as tend.yml's durations are:
 * at most `maxDays` days, and more than zero unless `zero` is allowed. Returns the text as given.
 */
export function durationFlag(
  flag: string,
  options: { maxDays: number; zero?: boolean },
): (value: string) => string {
  const range = options.zero ? `of at most ${options.maxDays} days` : `from 1m to ${options.maxDays}d`;
  return (value) => {
    const ms = /^[0-9]+[mhd]$/.test(value) ? parseDuration(value) : undefined;
    if (ms === undefined || ms > options.maxDays * dayMs || (ms === 0 && !options.zero)) {
      throw new TendError('TEND_USAGE', `--${flag} expects ${durationWording(range)}, got "${value}"`);
    }
    return value;
  };
}

/**
 * A parser for `--<flag> <when>`: a duration back from now (`8h`, `3d`, at most 365 days) or a
 * time (RFC 3339, e.g. 2025-05-01T12:00:00Z). Returns the text as given.
 */
export function timeOrDurationFlag(flag: string): (value: string) => string {
  return (value) => {
    const duration = /^[0-9]+[smhd]$/.test(value);
    const time = /^[0-9]{4}-[0-9]{2}-[0-9]{2}/.test(value) && !Number.isNaN(Date.parse(value));
    if (duration ? parseDuration(value) === undefined : !time) {
      throw new TendError(
        'TEND_USAGE',
        `--${flag} expects ${durationWording()} or a time such as 2025-05-01T12:00:00Z, got "${value}"`,
      );
    }
    return value;
  };
}
