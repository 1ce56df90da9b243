/**
 * CEL for ValidatingAdmissionPolicies (admission.ts), with @bufbuild/cel: expressions parsed once
 * and cached, JSON values handed over as CEL sees Kubernetes objects — objects as maps (so
 * `has(object.metadata.labels)` and `'k' in labels` work), whole numbers as `int`, the rest as
 * is. @bufbuild/cel implements the CEL standard definitions and macros (`has`, `all`, `exists`,
 * `exists_one`, `map`, `filter`, `matches`, `startsWith`, `endsWith`, `contains`, `size`, …); it
 * has no optional syntax (`a.?b`, `orValue`) and none of the Kubernetes CEL libraries (`quantity`,
 * `url`, `authorizer`, the `lists` and `regex` extensions), so policies written with those fail
 * to compile here (422) rather than pass unchecked.
 */
import { celEnv, isCelError, parse, plan, type CelInput } from '@bufbuild/cel';

/** A compiled expression: call it with the variables it may name. */
export type CompiledExpression = (bindings: Record<string, CelInput>) => unknown;

const env = celEnv();
const compiled = new Map<string, CompiledExpression>();

export class CelEvaluationError extends Error {}

/** Parses and plans `expression` (cached); throws a message naming the syntax error. */
export function compile(expression: string): CompiledExpression {
  let fn = compiled.get(expression);
  if (fn) return fn;
  const program = plan(env, parse(expression));
  fn = (bindings) => {
    const result = program(bindings);
    if (isCelError(result)) throw new CelEvaluationError(result.message);
    return result;
  };
  compiled.set(expression, fn);
  return fn;
}

/** The syntax error of `expression`, or undefined when it compiles. */
export function compileError(expression: string): string | undefined {
  try {
    compile(expression);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** A JSON value as a CEL input: objects as maps, whole numbers as `int`. */
export function toCel(value: unknown): CelInput {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(toCel);
  if (typeof value === 'object') {
    return new Map(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, toCel(v)]));
  }
  return value as CelInput;
}
