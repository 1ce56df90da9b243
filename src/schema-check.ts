/**
 * Checking values against TypeBox schemas, as fast for a command that checks a schema once as for
 * one that checks it thousands of times. Compiling a schema (TypeBox writes a checker's source,
 * V8 compiles it, and no code cache keeps that) costs a few milliseconds, as much as hundreds of
 * interpreted checks: measured on Node 20, the five schemas a Kubernetes project's `tend status`
 * checks took 7–15 ms to compile and check once, under 1 ms to check through `Value.Check`. So a
 * schema is interpreted for its first checks and compiled once it has been checked
 * `compileAfterChecks` times. Both ways give the same answer and the same errors.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { Value, type ValueError } from '@sinclair/typebox/value';

/** Checks interpreted before the schema is compiled. */
export const compileAfterChecks = 64;

export interface SchemaCheck<T extends TSchema = TSchema> {
  Check(value: unknown): value is Static<T>;
  Errors(value: unknown): Iterable<ValueError>;
}

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
  let compiled: TypeCheck<T> | undefined;
  return {
    Check(value): value is Static<T> {
      if (compiled) return compiled.Check(value);
      if (++interpreted >= compileAfterChecks) compiled = TypeCompiler.Compile(schema);
      return Value.Check(schema, value);
    },
    Errors: (value) => (compiled ? compiled.Errors(value) : Value.Errors(schema, value)),
  };
}
