/**
 * Parsers for the values of numeric command-line flags: each refuses what is not a whole number
 * in its range with a usage error naming the flag (exit 2), before any command runs.
 */
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
    if (!Number.isInteger(n) || n < min || n > max) {
      const what = unit ? `a whole number of ${unit}` : 'a whole number';
      const range = max >= 1_000_000 ? `from ${min}` : `from ${min} to ${max}`;
      throw new TendError('TEND_USAGE', `--${flag} expects ${what} ${range}, got "${value}"`);
    }
    return n;
  };
}
