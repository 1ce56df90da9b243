/**
 * Checking values against TypeBox schemas, as fast for a command that checks a schema once as for
 * one that checks it thousands of times. Compiling a schema (TypeBox writes a checker's source,
 * V8 compiles it, and no code cache keeps that) costs a few milliseconds, as much as hundreds of
 * interpreted checks: measured on Node 20, the five schemas a Kubernetes project's `tend status`
 * checks took 7–15 ms to compile and check once, under 1 ms to check through `Value.Check`. So a
 * schema is interpreted for its first checks and compiled once it has been checked
 * `compileAfterChecks` times. Both ways give the same answer and the same errors.
 *
 * Interpreting costs in proportion to the value: TypeBox 1.x took about 0.1 ms per action document
 * to check the parse cache (Node 24), 50 ms for a project of 1,000 actions, where compiling and
 * checking took 7. So a check of a whole file counts as the checks its size stands for
 * (`weightOfJson`), and a large one is compiled at once.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import type { TLocalizedValidationError } from 'typebox/error';
import { Value } from 'typebox/value';

/**
 * One failed check, as JSON Schema validators report it: `instancePath` is a JSON pointer to the
 * value, `schemaPath` one to the schema (`#/properties/a`), `keyword` the rule that failed.
 */
export type SchemaError = TLocalizedValidationError;

/**
 * The key of a record that takes any key: `Type.Record(AnyKey(), value)`. TypeBox writes
 * `Type.String()` keys as the pattern `^.*$`, which no key with a line break matches, so such a
 * key's value went unchecked (a 4,096-character limit passed with "a\nb" as the key).
 */
export const AnyKey = () => Type.String({ pattern: '^[\\s\\S]*$' });

/**
 * Checks interpreted before the schema is compiled. TypeBox 1.x interprets more slowly than the
 * 0.34 line this was first measured on (64 then): with 16, an unchanged re-run of 100 exec Builds
 * took 231 ms against 250, of 500 Builds and 500 Tests 386 against 409, and `tend status` of a
 * Kubernetes project (a few checks per schema) the same (Node 24, median of 15 rounds).
 */
export const compileAfterChecks = 16;

export interface SchemaCheck<T extends TSchema = TSchema> {
  /** @param weight how many checks of a small value this one stands for (default 1) */
  Check(value: unknown, weight?: number): value is Static<T>;
  Errors(value: unknown): SchemaError[];
  /** Whether checks now go through the compiled checker. */
  readonly compiled: boolean;
}

/** The weight of a check of JSON text's value: about one small check per 128 bytes. */
export const weightOfJson = (text: string) => Math.ceil(text.length / 128);

const checks = new WeakMap<TSchema, SchemaCheck>();

/** The checker of a schema, one per schema and process. */
export function schemaCheck<T extends TSchema>(schema: T): SchemaCheck<T> {
  let check = checks.get(schema) as SchemaCheck<T> | undefined;
  if (!check) {
    check = adaptiveCheck(schema);
    checks.set(schema, check);
  }
  return check;
}

function adaptiveCheck<T extends TSchema>(schema: T): SchemaCheck<T> {
  let interpreted = 0;
  let compiled: Validator<Record<never, never>, T> | undefined;
  return {
    Check(value, weight = 1): value is Static<T> {
      if (!compiled && (interpreted += weight) > compileAfterChecks) compiled = Compile(schema);
      return compiled ? compiled.Check(value) : Value.Check(schema, value);
    },
    Errors: (value) => (compiled ? compiled.Errors(value) : Value.Errors(schema, value)),
    get compiled() {
      return compiled !== undefined;
    },
  };
}

/** A failed check in words: the JSON pointer of the value it concerns and what is wrong with it. */
export interface SchemaProblem {
  path: string;
  message: string;
}

/**
 * One segment of a JSON pointer for a message: escaped, cut to 64 characters, a NUL written out
 * (a hostile key is named, never echoed whole).
 */
export const pointerSegment = (key: string) =>
  key.slice(0, 64).replaceAll('~', '~0').replaceAll('/', '~1').replaceAll('\u0000', '\\u0000');

/** A validator's JSON pointer, each segment as `pointerSegment` writes it. */
function shortPointer(pointer: string): string {
  return pointer
    .split('/')
    .map((segment) => segment.slice(0, 64).replaceAll('\u0000', '\\u0000'))
    .join('/');
}

/**
 * The first `limit` problems of a failed check, one per value — never none. An unknown key is
 * named at its own path: JSON Schema reports it as the `false` schema it failed and once more on
 * the object, and a validator that stops after a few errors may keep only the first kind; a key
 * that breaks `propertyNames` likewise, its own error and the object's summary.
 */
export function schemaProblems(errors: readonly SchemaError[], limit = 5): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const seen = new Set<string>();
  const add = (path: string, message: string) => {
    const shown = shortPointer(path) || '/';
    if (seen.has(shown)) return;
    seen.add(shown);
    problems.push({ path: shown, message });
  };
  for (const error of errors) {
    if (error.keyword === 'boolean') {
      if (error.schemaPath.endsWith('/additionalProperties')) add(error.instancePath, 'unknown property');
    } else if (error.keyword === 'additionalProperties') {
      for (const key of error.params.additionalProperties) {
        add(`${error.instancePath}/${pointerSegment(key)}`, 'unknown property');
      }
    } else if (error.keyword === 'propertyNames') {
      for (const key of error.params.propertyNames) {
        add(`${error.instancePath}/${pointerSegment(key)}`, 'invalid property name');
      }
    } else {
      add(error.instancePath, error.message);
    }
  }
  if (problems.length === 0)
    problems.push({ path: '/', message: errors[0]?.message ?? 'does not match the schema' });
  return problems.slice(0, limit);
}
