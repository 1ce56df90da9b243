/**
 * Strings that hold a number or a boolean, converted where a schema wants one, exactly as Garden's
 * Joi schemas convert them (Joi's default `convert: true`): `memory: "7000"` is 7000,
 * `daemon: "false"` is false. TypeBox's `Value.Convert` finds where the schema wants another
 * scalar, but converts far more than Joi (`""` and `null` to 0, `"0x10"` to 16, `"2.5"` to the
 * whole number 2, `"1"` to true), so only the conversions Joi makes are kept: anything else stays
 * as written, for the check to refuse at its line.
 */
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';

/**
 * The strings `joi.number()` converts (joi lib/types/number.js `numberRx`): decimal digits with an
 * optional sign, fraction and exponent, blanks around. No hex, `Infinity`, `_` or empty string.
 */
const joiNumberText = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*$/i;

/** The digits that matter in a decimal's text: no sign, point, exponent, or zeros at either end. */
const significantDigits = (text: string) =>
  text
    .replace(/e.*$/i, '')
    .replace(/\D/g, '')
    .replace(/^0+|0+$/g, '');

/**
 * The number a string holds as Joi reads it; undefined when Joi refuses it: not a decimal, or one
 * a number cannot hold exactly (Joi's `number.unsafe`: `"12345678901234567890"`, `"1e400"`).
 */
export function numberOfText(text: string): number | undefined {
  if (!joiNumberText.test(text)) return undefined;
  const value = Number(text.trim());
  if (!Number.isFinite(value)) return undefined;
  if (significantDigits(text.trim()) !== significantDigits(String(value))) return undefined;
  return value === 0 ? 0 : value; // not -0
}

/** The boolean `joi.boolean()` converts a string to: `true` or `false`, in any case. */
function booleanOfText(text: string): boolean | undefined {
  const lower = text.toLowerCase();
  return lower === 'true' ? true : lower === 'false' ? false : undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `written` with TypeBox's conversions (`converted`) kept where Joi makes the same one. With
 * `numbersToText`, a number or boolean where a string is wanted becomes its text too (what a
 * single-expression template gives, `image: ${var.tag}` with a numeric tag).
 */
function keepJoiConversions(written: unknown, converted: unknown, numbersToText: boolean): unknown {
  if (Object.is(written, converted)) return written;
  if (Array.isArray(written)) {
    if (!Array.isArray(converted) || converted.length !== written.length) return written;
    const items = written.map((item, index) => keepJoiConversions(item, converted[index], numbersToText));
    return items.every((item, index) => item === written[index]) ? written : items;
  }
  if (isRecord(written)) {
    if (!isRecord(converted)) return written;
    const entries = Object.entries(written).map(([key, item]) => [
      key,
      keepJoiConversions(item, converted[key], numbersToText),
    ]);
    // Unchanged, the value is kept as it is (not a copy).
    return entries.every(([key, item]) => item === written[key as string])
      ? written
      : Object.fromEntries(entries);
  }
  if (typeof written === 'string') {
    // A whole number TypeBox truncated ("2.5" to 2) differs from Joi's 2.5, so stays as written.
    if (typeof converted === 'number') return numberOfText(written) === converted ? converted : written;
    if (typeof converted === 'boolean') return booleanOfText(written) === converted ? converted : written;
  }
  const scalar = typeof written === 'number' || typeof written === 'boolean';
  return numbersToText && scalar && typeof converted === 'string' ? converted : written;
}

/**
 * `value` with the strings Joi would convert for `schema` converted (a new value; `value` is not
 * changed). `numbersToText`: numbers and booleans where strings are wanted become text too.
 */
export function convertScalars(schema: TSchema, value: unknown, options: { numbersToText?: boolean } = {}) {
  const sparse = withoutSparseNulls(schema, value);
  const converted: unknown = Value.Convert(schema, structuredClone(sparse));
  return keepJoiConversions(sparse, converted, options.numbersToText ?? false);
}

/**
 * `value` without the null items of its lists where the schema's items cannot be null: Garden's
 * Joi sparse arrays (nearly every list of its schemas) leave them out, so that an entry a
 * condition turns off (`- ${var.on ? 'a.yaml' : null}`) is no entry. A list the schema does not
 * type (a chart's values) is kept as it is.
 */
function withoutSparseNulls(schema: TSchema, value: unknown): unknown {
  const typed = schema as { type?: unknown; items?: unknown; properties?: Record<string, TSchema> };
  if (Array.isArray(value) && typed.type === 'array' && isRecord(typed.items)) {
    const items = typed.items as TSchema;
    const kept =
      value.includes(null) && !Value.Check(items, null) ? value.filter((item) => item !== null) : value;
    const mapped = kept.map((item: unknown) => withoutSparseNulls(items, item));
    const same = mapped.length === value.length && mapped.every((item, index) => item === value[index]);
    return same ? value : mapped;
  }
  if (isRecord(value) && typed.type === 'object' && typed.properties) {
    const properties = typed.properties;
    const entries = Object.entries(value).map(([key, item]) => [
      key,
      properties[key] ? withoutSparseNulls(properties[key], item) : item,
    ]);
    return entries.every(([key, item]) => item === value[key as string])
      ? value
      : Object.fromEntries(entries);
  }
  return value;
}
