/**
 * Configuration problems: schema errors turned into messages that name the key and what was
 * expected, and the one TendError that reports every problem of a load.
 */
import { formatSuggestion } from '../cleanup/policy.js';
import type { TSchema } from '@sinclair/typebox';
import { ValueErrorType } from '@sinclair/typebox/errors';
import type { ValueError } from '@sinclair/typebox/errors';
import { TendError } from '../errors.js';
import type { ErrorCode, SourceLocation } from '../errors.js';
import { schemaCheck } from '../schema-check.js';
import { formatLocation } from './project.js';
import type { ConfigPath, LocateTarget } from './project.js';

export interface ConfigProblem {
  code: ErrorCode;
  message: string;
  location: SourceLocation;
}

/** One TendError for all problems: the first is the primary one, the others follow on their own lines. */
export function configError(problems: readonly ConfigProblem[]): TendError {
  const [first, ...rest] = problems;
  if (!first) return new TendError('TEND_INTERNAL', 'configError called without problems');
  const more = rest.map((p) => `\n${formatLocation(p.location)}: ${p.message}`).join('');
  const summary = rest.length > 0 ? `\n(${problems.length} configuration errors)` : '';
  return new TendError(first.code, `${first.message}${more}${summary}`, {
    location: first.location,
    detail: {
      errors: problems.map((p) => ({ code: p.code, message: p.message, location: p.location })),
    },
  });
}

export interface SchemaCheckOptions {
  /** Where the checked value sits in its document (e.g. `['spec']`, `['providers', 1]`). */
  basePath: ConfigPath;
  locate(path: ConfigPath, target: LocateTarget): SourceLocation;
  /** How to name the checked value itself in messages (e.g. `action build.api`); default: its path. */
  rootLabel: string;
  /** Keys allowed at the root beside the schema's own (a provider entry's `name` and `environments`). */
  extraRootKeys?: readonly string[];
  /** Ignore type errors of strings holding template expressions: they are checked once resolved. */
  skipTemplated?: boolean;
}

/** Checks a value against a schema and describes every error with the key it concerns. */
export function checkSchema(schema: TSchema, value: unknown, options: SchemaCheckOptions): ConfigProblem[] {
  const check = schemaCheck(schema);
  if (check.Check(value)) return [];
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  for (const error of check.Errors(value)) {
    const problem = describeError(error, value, options);
    if (!problem || seen.has(problem.key)) continue;
    seen.add(problem.key);
    problems.push(problem.problem);
  }
  return sortProblems(problems);
}

export function sortProblems(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.sort((a, b) => a.location.line - b.location.line || a.location.column - b.location.column);
}

function describeError(
  error: ValueError,
  root: unknown,
  options: SchemaCheckOptions,
): { key: string; problem: ConfigProblem } | undefined {
  const relative = pointerToPath(error.path, root);
  const path = [...options.basePath, ...relative];
  const label = (p: ConfigPath) =>
    p.length === 0 ? options.rootLabel : formatPath([...options.basePath, ...p]);

  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    const parent = relative.slice(0, -1);
    const key = String(relative[relative.length - 1]);
    const known = Object.keys((error.schema as { properties?: object }).properties ?? {});
    const expected = parent.length === 0 ? [...(options.extraRootKeys ?? []), ...known] : known;
    return {
      key: error.path,
      problem: {
        code: 'TEND_CONFIG_UNKNOWN_KEY',
        message:
          `unknown key "${key}" in ${label(parent)}; ` +
          (expected.length > 0 ? `expected one of: ${expected.join(', ')}` : 'no keys are allowed here'),
        location: options.locate(path, 'key'),
      },
    };
  }
  if (error.type === ValueErrorType.ObjectRequiredProperty) {
    const parent = relative.slice(0, -1);
    const key = String(relative[relative.length - 1]);
    return {
      key: error.path,
      problem: {
        code: 'TEND_CONFIG_INVALID',
        message: `missing required key "${key}" in ${label(parent)}`,
        location: options.locate([...options.basePath, ...parent], 'value'),
      },
    };
  }
  if (options.skipTemplated && typeof error.value === 'string' && hasTemplate(error.value)) return undefined;
  if (error.type === ValueErrorType.Union) {
    const nested = unionBranch(error, root, options);
    if (nested) return nested;
  }
  return {
    key: error.path,
    problem: {
      code: 'TEND_CONFIG_INVALID',
      message: `invalid value for ${label(relative)}: expected ${expectation(error)}, got ${describeValue(error.value)}${suggestionOf(error)}`,
      location: options.locate(path, 'value'),
    },
  };
}

/** ` (did you mean Europe/Berlin?)` for a value its format knows another spelling of. */
function suggestionOf(error: ValueError): string {
  if (error.type !== ValueErrorType.StringFormat) return '';
  const suggestion = formatSuggestion((error.schema as { format?: unknown }).format, error.value);
  return suggestion ? ` (did you mean ${suggestion}?)` : '';
}

/**
 * A union whose only branch of the value's own type failed (a mapping where a string or a
 * mapping is allowed): report that branch's error, which names the key, rather than the union.
 */
function unionBranch(error: ValueError, root: unknown, options: SchemaCheckOptions) {
  const variants = (error.schema as { anyOf?: TSchema[] }).anyOf ?? [];
  const valueType = jsonType(error.value);
  const matching = variants.map((v, i) => [v, i] as const).filter(([v]) => schemaAccepts(v, valueType));
  if (matching.length !== 1) return undefined;
  const [, index] = matching[0]!;
  const branch = error.errors[index];
  if (!branch) return undefined;
  for (const inner of branch) {
    const described = describeError(inner, root, options);
    if (described) return described;
  }
  return undefined;
}

function schemaAccepts(schema: TSchema, valueType: string): boolean {
  const type = (schema as { type?: unknown }).type;
  if (type === undefined) return false;
  if (type === valueType) return true;
  return type === 'number' && valueType === 'integer';
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** What a failed check expected, in words. */
function expectation(error: ValueError): string {
  const schema = error.schema as Record<string, unknown>;
  switch (error.type) {
    case ValueErrorType.StringPattern:
    case ValueErrorType.StringFormat:
      return describeSchema(error.schema);
    case ValueErrorType.StringMinLength:
      return schema.minLength === 1
        ? 'a non-empty string'
        : `at least ${String(schema.minLength)} characters`;
    case ValueErrorType.StringMaxLength:
      return `at most ${String(schema.maxLength)} characters`;
    case ValueErrorType.ArrayMinItems:
      return `a list of at least ${String(schema.minItems)} item${schema.minItems === 1 ? '' : 's'}`;
    case ValueErrorType.ArrayMaxItems:
      return `a list of at most ${String(schema.maxItems)} items`;
    case ValueErrorType.ArrayUniqueItems:
      return 'a list without repeated items';
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return `a number ≥ ${String(schema.minimum)}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `a number ≤ ${String(schema.maximum)}`;
    case ValueErrorType.NumberExclusiveMinimum:
    case ValueErrorType.IntegerExclusiveMinimum:
      return `a number > ${String(schema.exclusiveMinimum)}`;
    case ValueErrorType.NumberExclusiveMaximum:
    case ValueErrorType.IntegerExclusiveMaximum:
      return `a number < ${String(schema.exclusiveMaximum)}`;
    case ValueErrorType.ObjectMinProperties:
      return `a mapping with at least ${String(schema.minProperties)} key(s)`;
    case ValueErrorType.ObjectMaxProperties:
      return `a mapping with at most ${String(schema.maxProperties)} key(s)`;
    case ValueErrorType.String:
    case ValueErrorType.Number:
    case ValueErrorType.Integer:
    case ValueErrorType.Boolean:
    case ValueErrorType.Array:
    case ValueErrorType.Object:
    case ValueErrorType.Null:
    case ValueErrorType.Literal:
    case ValueErrorType.Union:
      return describeSchema(error.schema);
    default:
      return error.message.replace(/^Expected /, '').replace(/^expected /, '');
  }
}

/** A schema in words: `a string`, `one of: delete, pause`, `a duration (…)`. */
export function describeSchema(schema: TSchema): string {
  const s = schema as Record<string, unknown>;
  if (typeof s.patternErrorMessage === 'string') return s.patternErrorMessage;
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return `one of: ${s.enum.map(String).join(', ')}`;
  if (Array.isArray(s.anyOf)) {
    const variants = s.anyOf as Record<string, unknown>[];
    if (variants.every((v) => 'const' in v))
      return `one of: ${variants.map((v) => String(v.const)).join(', ')}`;
    const words = [...new Set(variants.map((v) => describeSchema(v as TSchema)))];
    return words.length <= 1
      ? (words[0] ?? 'a value')
      : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
  }
  switch (s.type) {
    case 'string':
      return typeof s.pattern === 'string' ? `a string matching /${s.pattern}/` : 'a string';
    case 'number':
      return 'a number';
    case 'integer':
      return 'a whole number';
    case 'boolean':
      return 'true or false';
    case 'array':
      return 'a list';
    case 'object':
      return 'a mapping';
    case 'null':
      return 'null';
    default:
      return 'a value';
  }
}

/** A value in words, for `got …`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value);
  return `${typeof value} ${String(value)}`;
}

/** `environments[0].cleanup` from `['environments', 0, 'cleanup']`. */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

/** A JSON pointer as path segments; numbers where the value at that point is a list. */
function pointerToPath(pointer: string, root: unknown): (string | number)[] {
  if (pointer === '') return [];
  const path: (string | number)[] = [];
  let value: unknown = root;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(value)) {
      const index = Number(key);
      path.push(index);
      value = value[index];
    } else {
      path.push(key);
      value =
        value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
    }
  }
  return path;
}

/** Whether a string holds a template expression (`${`, not the escaped `$${`). */
export function hasTemplate(value: string): boolean {
  return /(^|[^$])\$\{/.test(value);
}
