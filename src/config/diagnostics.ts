/**
 * Configuration problems: schema errors turned into messages that name the key and what was
 * expected, and the one TendError that reports every problem of a load.
 */
import { formatSuggestion } from '../cleanup/policy.js';
import type { TSchema } from 'typebox';
import { TendError } from '../errors.js';
import type { SourceLocation } from '../errors.js';
import { schemaCheck, type SchemaError } from '../schema-check.js';
import { closestName } from '../suggest.js';
import { structuralKeys } from '../expressions/structure.js';
import { formatLocation, inRenderedConfig } from './project.js';
import type { ConfigPath, ConfigProblem, LocateTarget, RenderedFrom } from './project.js';

export type { ConfigProblem } from './project.js';

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

/**
 * An error of a later step as problems, to list beside others: the ones it lists (a configError),
 * or itself at its place (or `fallback`), its hint appended; none without a place.
 */
export function problemsOfError(error: TendError, fallback?: SourceLocation): ConfigProblem[] {
  const listed = (error.detail as { errors?: ConfigProblem[] } | undefined)?.errors;
  if (Array.isArray(listed) && listed.length > 0) return listed;
  const location = error.location ?? fallback;
  if (!location) return [];
  const hint = error.detail?.hint;
  const message = typeof hint === 'string' ? `${error.message}; ${hint}` : error.message;
  return [{ code: error.code, message, location }];
}

/**
 * A step on a config a template rendered: the error it throws says which rendering it is of, in
 * each problem it lists (the config's lines are the template's, shared by each rendering), its
 * detail kept (a variable nothing declares stays one).
 */
export function inRenderedStep<T>(rendered: RenderedFrom | undefined, step: () => T): T {
  if (!rendered) return step();
  try {
    return step();
  } catch (error) {
    if (!(error instanceof TendError)) throw error;
    const listed = (error.detail as { errors?: ConfigProblem[] } | undefined)?.errors;
    if (Array.isArray(listed) && listed.length > 0) {
      throw configError(listed.map((p) => ({ ...p, message: inRenderedConfig(p.message, rendered) })));
    }
    throw new TendError(error.code, inRenderedConfig(error.message, rendered), {
      ...(error.location ? { location: error.location } : {}),
      ...(error.detail ? { detail: error.detail } : {}),
    });
  }
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
  /** A path as its file writes it, for messages (a Garden key tend renamed); default: as it is. */
  writtenPath?: (path: ConfigPath) => ConfigPath;
}

/** Checks a value against a schema and describes every error with the key it concerns. */
export function checkSchema(schema: TSchema, value: unknown, options: SchemaCheckOptions): ConfigProblem[] {
  const check = schemaCheck(schema);
  if (check.Check(value)) return [];
  const errors = check.Errors(value);
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    if (insideUnion(error, errors)) continue; // described through its union
    for (const described of describeError(
      failedCheck(error, schema, value),
      schema,
      value,
      errors,
      options,
    )) {
      if (seen.has(described.key)) continue;
      seen.add(described.key);
      problems.push(described.problem);
    }
  }
  // A failed check always says so, whatever the errors it kept.
  const templated = (e: SchemaError) => {
    const at = resolveInstance(e.instancePath, value).value;
    return (
      (typeof at === 'string' && hasTemplate(at)) ||
      underStructuralOperator(value, resolveInstance(e.instancePath, value).path)
    );
  };
  if (problems.length === 0 && !(options.skipTemplated && errors.some(templated))) {
    problems.push({
      code: 'TEND_CONFIG_INVALID',
      message: `invalid value for ${options.rootLabel}: ${errors[0]!.message}`,
      location: options.locate(options.basePath, 'value'),
    });
  }
  return sortProblems(problems);
}

/** Problems file by file, each file's in the order of their lines. */
export function sortProblems(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.sort(
    (a, b) =>
      (a.location.file < b.location.file ? -1 : a.location.file > b.location.file ? 1 : 0) ||
      a.location.line - b.location.line ||
      a.location.column - b.location.column,
  );
}

/** A failed check with the schema whose keyword failed and the value it was checked against. */
interface FailedCheck {
  error: SchemaError;
  schema: Record<string, unknown>;
  value: unknown;
  /** The value's path relative to the checked value. */
  path: (string | number)[];
}

function failedCheck(error: SchemaError, rootSchema: TSchema, root: unknown): FailedCheck {
  const { path, value } = resolveInstance(error.instancePath, root);
  return { error, schema: resolveSchema(error.schemaPath, rootSchema), value, path };
}

type Described = { key: string; problem: ConfigProblem };

function describeError(
  failed: FailedCheck,
  rootSchema: TSchema,
  root: unknown,
  errors: readonly SchemaError[],
  options: SchemaCheckOptions,
): Described[] {
  const { error, schema, value, path: relative } = failed;
  if (options.skipTemplated && underStructuralOperator(root, relative)) return [];
  const label = (p: ConfigPath) => {
    if (p.length === 0) return options.rootLabel;
    const path = [...options.basePath, ...p];
    return formatPath(options.writtenPath ? options.writtenPath(path) : path);
  };
  const unknownKey = (at: (string | number)[], key: string, objectSchema: Record<string, unknown>) => {
    const known = Object.keys((objectSchema.properties as object | undefined) ?? {});
    const expected = at.length === 0 ? [...(options.extraRootKeys ?? []), ...known] : known;
    const similar = closestName(key, expected);
    return {
      key: `${formatPath(at)}/${key}`,
      problem: {
        code: 'TEND_CONFIG_UNKNOWN_KEY' as const,
        message:
          `unknown key ${JSON.stringify(key)} in ${label(at)}; ` +
          (similar ? `did you mean ${JSON.stringify(similar)}? ` : '') +
          (expected.length > 0 ? `expected one of: ${expected.join(', ')}` : 'no keys are allowed here'),
        location: options.locate([...options.basePath, ...at, key], 'key'),
      },
    };
  };

  // An unknown key fails the `false` schema of `additionalProperties` once, and the object once
  // more (a validator that stops after a few errors may keep only the first kind); `propertyNames`
  // sums up its keys' own errors. Each key is reported once, on its own.
  if (error.keyword === 'boolean') {
    if (!error.schemaPath.endsWith('/additionalProperties')) return [];
    const objectSchema = resolveSchema(
      error.schemaPath.slice(0, -'/additionalProperties'.length),
      rootSchema,
    );
    return [unknownKey(relative.slice(0, -1), String(relative.at(-1)), objectSchema)];
  }
  if (error.keyword === 'propertyNames') return [];
  if (error.schemaPath.endsWith('/propertyNames')) {
    const key = String(relative.at(-1));
    return [
      {
        key: `${error.instancePath}#key`,
        problem: {
          code: 'TEND_CONFIG_INVALID',
          message: `invalid key ${JSON.stringify(key)} in ${label(relative.slice(0, -1))}: expected ${expectation(error, schema)}`,
          location: options.locate([...options.basePath, ...relative], 'key'),
        },
      },
    ];
  }
  if (error.keyword === 'additionalProperties') {
    return error.params.additionalProperties.map((key) => unknownKey(relative, key, schema));
  }
  if (error.keyword === 'required') {
    return error.params.requiredProperties.map((key) => ({
      key: `${error.instancePath}/${key}`,
      problem: {
        code: 'TEND_CONFIG_INVALID' as const,
        message: `missing required key ${JSON.stringify(key)} in ${label(relative)}`,
        location: options.locate([...options.basePath, ...relative], 'value'),
      },
    }));
  }
  const alternatives = error.keyword === 'anyOf' ? requiredAlternatives(schema) : undefined;
  if (alternatives) {
    return [
      {
        key: error.instancePath,
        problem: {
          code: 'TEND_CONFIG_INVALID',
          message: `${label(relative)} needs one of the keys ${alternatives.map((k) => JSON.stringify(k)).join(', ')}`,
          location: options.locate([...options.basePath, ...relative], 'value'),
        },
      },
    ];
  }
  if (options.skipTemplated && typeof value === 'string' && hasTemplate(value)) return [];
  if (error.keyword === 'anyOf') {
    const nested = unionBranch(failed, rootSchema, root, errors, options);
    if (nested.length > 0) return nested;
  }
  return [
    {
      key: error.instancePath,
      problem: {
        code: 'TEND_CONFIG_INVALID',
        message: `invalid value for ${label(relative)}: expected ${expectation(error, schema)}, got ${describeValue(value)}${suggestionOf(error, schema, value)}`,
        location: options.locate([...options.basePath, ...relative], 'value'),
      },
    },
  ];
}

/** The keys of an object schema that needs one of them (`anyOf: [{required: [a]}, {required: [b]}]`). */
function requiredAlternatives(schema: Record<string, unknown>): string[] | undefined {
  const branches = schema.anyOf;
  if (!Array.isArray(branches) || schema.type !== 'object') return undefined;
  const keys = branches.map((b: unknown) => {
    const required = (b as { required?: unknown }).required;
    return Array.isArray(required) && required.length === 1 && Object.keys(b as object).length === 1
      ? String(required[0])
      : undefined;
  });
  return keys.every((k) => k !== undefined) ? (keys as string[]) : undefined;
}

/** ` (did you mean Europe/Berlin?)` for a value its format knows another spelling of. */
function suggestionOf(error: SchemaError, schema: Record<string, unknown>, value: unknown): string {
  if (error.keyword !== 'format') return '';
  const suggestion = formatSuggestion(schema.format, value);
  return suggestion ? ` (did you mean ${suggestion}?)` : '';
}

/** Whether an error concerns the union's value or one inside it. */
function withinValue(error: SchemaError, union: SchemaError): boolean {
  return error.instancePath === union.instancePath || error.instancePath.startsWith(`${union.instancePath}/`);
}

/**
 * Whether an error is one of a failed union's branches (its schema path runs through
 * `anyOf/<n>`, its value is the union's or inside it), of a union within `branchPath` if given.
 */
function insideUnion(error: SchemaError, errors: readonly SchemaError[], branchPath?: string): boolean {
  return errors.some(
    (union) =>
      union.keyword === 'anyOf' &&
      (branchPath === undefined || union.schemaPath.startsWith(`${branchPath}/`)) &&
      error.schemaPath.startsWith(`${union.schemaPath}/anyOf/`) &&
      withinValue(error, union),
  );
}

/**
 * A union whose only branch of the value's own type failed (a mapping where a string or a
 * mapping is allowed): report that branch's error, which names the key, rather than the union.
 */
function unionBranch(
  union: FailedCheck,
  rootSchema: TSchema,
  root: unknown,
  errors: readonly SchemaError[],
  options: SchemaCheckOptions,
): Described[] {
  const variants = (union.schema.anyOf as TSchema[] | undefined) ?? [];
  const valueType = jsonType(union.value);
  const matching = variants.map((v, i) => [v, i] as const).filter(([v]) => schemaAccepts(v, valueType));
  if (matching.length !== 1) return [];
  const [, index] = matching[0]!;
  const branchPath = `${union.error.schemaPath}/anyOf/${index}`;
  for (const inner of errors) {
    if (inner.schemaPath !== branchPath && !inner.schemaPath.startsWith(`${branchPath}/`)) continue;
    if (!withinValue(inner, union.error)) continue;
    if (insideUnion(inner, errors, branchPath)) continue;
    const described = describeError(failedCheck(inner, rootSchema, root), rootSchema, root, errors, options);
    if (described.length > 0) return described;
  }
  return [];
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
function expectation(error: SchemaError, schema: Record<string, unknown>): string {
  switch (error.keyword) {
    case 'minLength':
      return schema.minLength === 1
        ? 'a non-empty string'
        : `at least ${String(schema.minLength)} characters`;
    case 'maxLength':
      return `at most ${String(schema.maxLength)} characters`;
    case 'minItems':
      return `a list of at least ${String(schema.minItems)} item${schema.minItems === 1 ? '' : 's'}`;
    case 'maxItems':
      return `a list of at most ${String(schema.maxItems)} items`;
    case 'uniqueItems':
      return 'a list without repeated items';
    case 'minimum':
      return `a number ≥ ${String(schema.minimum)}`;
    case 'maximum':
      return `a number ≤ ${String(schema.maximum)}`;
    case 'exclusiveMinimum':
      return `a number > ${String(schema.exclusiveMinimum)}`;
    case 'exclusiveMaximum':
      return `a number < ${String(schema.exclusiveMaximum)}`;
    case 'minProperties':
      return `a mapping with at least ${String(schema.minProperties)} key(s)`;
    case 'maxProperties':
      return `a mapping with at most ${String(schema.maxProperties)} key(s)`;
    case 'not':
      // A schema that rules out a combination says which in words (`notErrorMessage`).
      return typeof schema.notErrorMessage === 'string' ? schema.notErrorMessage : 'another value';
    case 'pattern':
    case 'format':
    case 'type':
    case 'const':
    case 'enum':
    case 'anyOf':
      return describeSchema(schema as TSchema);
    default:
      return error.message.replace(/^must (be |match )?/, '');
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
  switch (s.type ?? (typeof s.pattern === 'string' ? 'string' : undefined)) {
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

/** Longer strings are shown cut in messages: a hostile or mistaken value is named, not echoed whole. */
const shownStringLength = 200;

/** A value in words, for `got …`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    return value.length <= shownStringLength
      ? JSON.stringify(value)
      : `${JSON.stringify(value.slice(0, shownStringLength))}… (${value.length} characters)`;
  }
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

/** A JSON pointer's segments, unescaped. */
function pointerSegments(pointer: string): string[] {
  if (pointer === '' || pointer === '#') return [];
  return pointer
    .replace(/^#/, '')
    .slice(1)
    .split('/')
    .map((raw) => raw.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The value a JSON pointer names, and its path: numbers where the value at that point is a list. */
function resolveInstance(pointer: string, root: unknown): { path: (string | number)[]; value: unknown } {
  const path: (string | number)[] = [];
  let value: unknown = root;
  for (const key of pointerSegments(pointer)) {
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
  return { path, value };
}

/** The schema a schema path (`#/properties/a/anyOf/1`) names. */
function resolveSchema(pointer: string, root: TSchema): Record<string, unknown> {
  let schema: unknown = root;
  for (const key of pointerSegments(pointer)) {
    schema =
      schema !== null && typeof schema === 'object' ? (schema as Record<string, unknown>)[key] : undefined;
  }
  return (schema ?? {}) as Record<string, unknown>;
}

/** Whether a string holds a template expression (`${`, not the escaped `$${`). */
/** Whether the value at `path` is, or is inside, a structural operator (`$if`, `$merge`, …): checked once resolved. */
function underStructuralOperator(root: unknown, path: ConfigPath): boolean {
  let current = root;
  for (let i = 0; ; i++) {
    if (current !== null && typeof current === 'object' && !Array.isArray(current)) {
      if (Object.keys(current).some((key) => structuralKeys.includes(key))) return true;
    }
    if (i >= path.length || current === null || typeof current !== 'object') return false;
    current = (current as Record<string | number, unknown>)[path[i]!];
  }
}

export function hasTemplate(value: string): boolean {
  return /(^|[^$])\$\{/.test(value);
}
