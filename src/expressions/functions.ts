/**
 * The helper functions of templates: Garden's list (docs/templates.md#functions), plus snakeCase.
 * Each declares its arguments, so that a wrong one is reported with the function's name, the
 * argument's name and what was expected.
 */
import { createHash, randomUUID } from 'node:crypto';
import { parse as parseYaml, parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import { closestName } from '../suggest.js';
import { formatDate, modifyDate, modifyUnits, parseDate, shiftDate, shiftUnits } from './dates.js';

/** Thrown for a call that cannot be made; template.ts adds where. */
export class TemplateFunctionError extends Error {
  override name = 'TemplateFunctionError';
}

type ArgumentType = 'string' | 'number' | 'integer' | 'boolean' | 'list' | 'string or list' | 'any';

interface Parameter {
  name: string;
  type: ArgumentType;
  optional?: boolean;
}

interface HelperFunction {
  description: string;
  parameters: Parameter[];
  // The arguments have been checked against `parameters`.
  call(...args: never[]): unknown;
}

const string = (name: string, optional = false): Parameter => ({ name, type: 'string', optional });

/** Words of an identifier-like string: `fooBar`, `Foo Bar`, `__FOO_BAR__` → foo, bar. */
function words(text: string): string[] {
  return text.match(/\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{N}+/gu) ?? [];
}

const capitalize = (word: string) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();

/** A date argument, or an error naming the function. */
function dateArgument(functionName: string, text: string): Date {
  const date = parseDate(text);
  if (!date) {
    throw new TemplateFunctionError(
      `${functionName}(): argument "date" is not a date: ${JSON.stringify(text)} (expected e.g. "2021-01-01T00:00:00Z")`,
    );
  }
  return date;
}

function unitArgument<T extends string>(functionName: string, unit: string, units: readonly T[]): T {
  if (!(units as readonly string[]).includes(unit)) {
    throw new TemplateFunctionError(
      `${functionName}(): argument "unit" is "${unit}"; expected one of: ${units.join(', ')}`,
    );
  }
  return unit as T;
}

/** Longer lists than this from range() are refused: a typo, not a configuration. */
const largestRange = 100_000;

export const helperFunctions: Record<string, HelperFunction> = {
  base64Decode: {
    description: 'Decodes the given base64-encoded string.',
    parameters: [string('string')],
    call: (text: string) => Buffer.from(text, 'base64').toString(),
  },
  base64Encode: {
    description: 'Encodes the given string as base64.',
    parameters: [string('string')],
    call: (text: string) => Buffer.from(text).toString('base64'),
  },
  camelCase: {
    description: 'Converts the given string to a camelCase identifier.',
    parameters: [string('string')],
    call: (text: string) =>
      words(text)
        .map((w, i) => (i === 0 ? w.toLowerCase() : capitalize(w)))
        .join(''),
  },
  concat: {
    description: 'Concatenates two lists or two strings.',
    parameters: [
      { name: 'arg1', type: 'string or list' },
      { name: 'arg2', type: 'string or list' },
    ],
    call: (a: string | unknown[], b: string | unknown[]) => {
      if (typeof a === 'string' && typeof b === 'string') return a + b;
      if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
      throw new TemplateFunctionError(
        'concat(): arguments "arg1" and "arg2" must be both lists or both strings',
      );
    },
  },
  formatDateUtc: {
    description: 'Formats the given date, in UTC, with a date-fns format such as "yyyy-MM-dd".',
    parameters: [string('date'), string('format')],
    call: (date: string, format: string) => {
      try {
        return formatDate(dateArgument('formatDateUtc', date), format);
      } catch (error) {
        if (error instanceof TemplateFunctionError) throw error;
        throw new TemplateFunctionError(`formatDateUtc(): argument "format": ${(error as Error).message}`);
      }
    },
  },
  indent: {
    description: 'Indents each line of the given string with the given number of spaces.',
    parameters: [string('string'), { name: 'spaces', type: 'integer' }],
    call: (text: string, spaces: number) => text.replace(/^(?!\s*$)/gm, ' '.repeat(Math.max(0, spaces))),
  },
  isEmpty: {
    description: 'Whether the given value is an empty string, list or mapping, or null.',
    parameters: [{ name: 'value', type: 'any', optional: true }],
    call: (value: unknown) => {
      if (value === undefined || value === null) return true;
      if (typeof value === 'string' || Array.isArray(value)) return value.length === 0;
      if (typeof value === 'object') return Object.keys(value).length === 0;
      throw new TemplateFunctionError(
        `isEmpty(): argument "value" must be a string, list, mapping or null (got ${typeof value})`,
      );
    },
  },
  join: {
    description: 'Joins a list of strings (or other plain values) with the given separator.',
    parameters: [
      { name: 'input', type: 'list' },
      { name: 'separator', type: 'string' },
    ],
    call: (input: unknown[], separator: string) => {
      const bad = input.findIndex((v) => v !== null && typeof v === 'object');
      if (bad >= 0)
        throw new TemplateFunctionError(
          `join(): argument "input" item ${bad} is not a string, number or boolean`,
        );
      return input.map((v) => (v === null ? '' : String(v))).join(separator);
    },
  },
  jsonDecode: {
    description: 'Decodes the given JSON-encoded string.',
    parameters: [string('string')],
    call: (text: string) => {
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new TemplateFunctionError(
          `jsonDecode(): argument "string" is not JSON: ${(error as Error).message}`,
        );
      }
    },
  },
  jsonEncode: {
    description: 'Encodes the given value as JSON.',
    parameters: [{ name: 'value', type: 'any' }],
    call: (value: unknown) => JSON.stringify(value),
  },
  kebabCase: {
    description: 'Converts the given string to a kebab-case identifier.',
    parameters: [string('string')],
    call: (text: string) => words(text).join('-').toLowerCase(),
  },
  lower: {
    description: 'Converts the given string to lower case.',
    parameters: [string('string')],
    call: (text: string) => text.toLowerCase(),
  },
  modifyDateUtc: {
    description: 'Sets one unit of the given date (months count from 0), in UTC.',
    parameters: [string('date'), { name: 'amount', type: 'number' }, string('unit')],
    call: (date: string, amount: number, unit: string) =>
      modifyDate(
        dateArgument('modifyDateUtc', date),
        amount,
        unitArgument('modifyDateUtc', unit, modifyUnits),
      ).toISOString(),
  },
  range: {
    description: 'The whole numbers from first to last, both included.',
    parameters: [
      { name: 'first', type: 'integer' },
      { name: 'last', type: 'integer' },
    ],
    call: (first: number, last: number) => {
      if (last - first >= largestRange) {
        throw new TemplateFunctionError(
          `range(): at most ${largestRange} numbers (asked for ${last - first + 1})`,
        );
      }
      return Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => first + i);
    },
  },
  replace: {
    description: 'Replaces every occurrence of a substring.',
    parameters: [string('string'), string('substring'), string('replacement')],
    call: (text: string, substring: string, replacement: string) =>
      substring === '' ? text : text.split(substring).join(replacement),
  },
  sha256: {
    description: 'The SHA-256 hash of the given string, in hex.',
    parameters: [string('string')],
    call: (text: string) => createHash('sha256').update(text).digest('hex'),
  },
  shiftDateUtc: {
    description: 'Shifts the given date by an amount of a unit, in UTC.',
    parameters: [string('date'), { name: 'amount', type: 'number' }, string('unit')],
    call: (date: string, amount: number, unit: string) =>
      shiftDate(
        dateArgument('shiftDateUtc', date),
        amount,
        unitArgument('shiftDateUtc', unit, shiftUnits),
      ).toISOString(),
  },
  slice: {
    description: 'Part of a string or list, from start to end (not included); negative counts from the end.',
    parameters: [
      { name: 'input', type: 'string or list' },
      { name: 'start', type: 'any' },
      { name: 'end', type: 'any', optional: true },
    ],
    call: (input: string | unknown[], start: unknown, end: unknown) =>
      input.slice(offset('start', start), end === undefined ? undefined : offset('end', end)),
  },
  snakeCase: {
    description: 'Converts the given string to a snake_case identifier (not in Garden).',
    parameters: [string('string')],
    call: (text: string) => words(text).join('_').toLowerCase(),
  },
  split: {
    description: 'Splits the given string by a separator.',
    parameters: [string('string'), string('separator')],
    call: (text: string, separator: string) => text.split(separator),
  },
  string: {
    description: 'The given value as a string.',
    parameters: [{ name: 'value', type: 'any' }],
    call: (value: unknown) =>
      typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value),
  },
  trim: {
    description: 'Removes whitespace (or the given characters) from both ends.',
    parameters: [string('string'), string('characters', true)],
    call: (text: string, characters?: string) => {
      if (characters === undefined) return text.trim();
      const set = new Set(characters);
      let start = 0;
      let end = text.length;
      while (start < end && set.has(text[start]!)) start++;
      while (end > start && set.has(text[end - 1]!)) end--;
      return text.slice(start, end);
    },
  },
  upper: {
    description: 'Converts the given string to upper case.',
    parameters: [string('string')],
    call: (text: string) => text.toUpperCase(),
  },
  uuidv4: {
    description: 'A random version 4 UUID.',
    parameters: [],
    call: () => randomUUID(),
  },
  yamlDecode: {
    description: 'Decodes the given YAML string; with multiDocument true, a list of its documents.',
    parameters: [string('string'), { name: 'multiDocument', type: 'boolean', optional: true }],
    call: (text: string, multiDocument?: boolean) => {
      try {
        if (!multiDocument) return parseYaml(text) as unknown;
        return parseAllDocuments(text).map((document) => {
          if (document.errors.length > 0) throw document.errors[0]!;
          return document.toJS() as unknown;
        });
      } catch (error) {
        throw new TemplateFunctionError(
          `yamlDecode(): argument "string" is not YAML: ${(error as Error).message.split('\n')[0]}`,
        );
      }
    },
  },
  yamlEncode: {
    description:
      'Encodes the given value as YAML; with multiDocument true, each item of a list as a document.',
    parameters: [
      { name: 'value', type: 'any' },
      { name: 'multiDocument', type: 'boolean', optional: true },
    ],
    call: (value: unknown, multiDocument?: boolean) => {
      if (!multiDocument) return stringifyYaml(value);
      if (!Array.isArray(value)) {
        throw new TemplateFunctionError(
          'yamlEncode(): multiDocument is true but argument "value" is not a list',
        );
      }
      return '---' + value.map((v) => stringifyYaml(v)).join('---');
    },
  },
};

function offset(name: string, value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\s*-?[0-9]+/.test(value)) return Number.parseInt(value, 10);
  throw new TemplateFunctionError(
    `slice(): argument "${name}" must be a whole number or a numeric string (got ${JSON.stringify(value)})`,
  );
}

export function usage(name: string): string {
  const parameters = helperFunctions[name]?.parameters ?? [];
  return `${name}(${parameters.map((p) => (p.optional ? `[${p.name}]` : p.name)).join(', ')})`;
}

function matches(type: ArgumentType, value: unknown): boolean {
  switch (type) {
    case 'any':
      return value !== undefined;
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'list':
      return Array.isArray(value);
    case 'string or list':
      return typeof value === 'string' || Array.isArray(value);
    default:
      return typeof value === type;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  const shown = JSON.stringify(value);
  return `${typeof value} ${shown.length > 40 ? `${shown.slice(0, 40)}…` : shown}`;
}

/** Calls a helper function by name, its arguments checked. Throws TemplateFunctionError. */
export function callFunction(name: string, args: readonly unknown[]): unknown {
  const helper = Object.hasOwn(helperFunctions, name) ? helperFunctions[name] : undefined;
  if (!helper) {
    const similar = closestName(name, Object.keys(helperFunctions));
    throw new TemplateFunctionError(
      `unknown function "${name}"` +
        (similar ? `; did you mean "${similar}"?` : '') +
        ` (the functions: ${Object.keys(helperFunctions).join(', ')})`,
    );
  }
  const { parameters } = helper;
  if (args.length > parameters.length) {
    throw new TemplateFunctionError(
      `${name}() takes ${parameters.length} argument${parameters.length === 1 ? '' : 's'}, got ${args.length}; usage: ${usage(name)}`,
    );
  }
  parameters.forEach((parameter, i) => {
    const value = args[i];
    if (value === undefined) {
      if (parameter.optional) return;
      throw new TemplateFunctionError(
        `${name}(): missing argument "${parameter.name}"; usage: ${usage(name)}`,
      );
    }
    if (!matches(parameter.type, value)) {
      throw new TemplateFunctionError(
        `${name}(): argument "${parameter.name}" must be ${parameter.type === 'integer' ? 'a whole number' : `a ${parameter.type}`} (got ${describe(value)}); usage: ${usage(name)}`,
      );
    }
  });
  return (helper.call as (...values: unknown[]) => unknown)(...args);
}
