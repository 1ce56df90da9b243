/**
 * Garden's structural operators in YAML values: `$if`/`$then`/`$else`, `$merge`, `$concat`, and
 * `$forEach` with `$filter` and `$return` (`${item.key}`, `${item.value}`). Resolves a whole
 * value: each string through the caller's `string`, each operator here.
 */
import { TemplateEvaluationError, typeName } from './evaluate.js';
import type { Scope } from './evaluate.js';

export type ValuePath = (string | number)[];

export interface ValueResolver {
  /** One string's value, or undefined for none (an optional `${…}?` that is missing). */
  string(text: string, path: ValuePath, scope: Scope): unknown;
  /** Whether a value is to be left as written (it reads what is not known yet). */
  deferred?(value: unknown): boolean;
}

/** A structural operator's error, with the path of the value it concerns. */
export class StructureError extends TemplateEvaluationError {
  constructor(
    message: string,
    readonly path: ValuePath,
  ) {
    super(message);
  }
}

export const structuralKeys = [
  '$if',
  '$then',
  '$else',
  '$merge',
  '$concat',
  '$forEach',
  '$filter',
  '$return',
];

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function onlyKeys(
  value: Record<string, unknown>,
  operator: string,
  allowed: string[],
  path: ValuePath,
): void {
  const extra = Object.keys(value).filter((k) => !allowed.includes(k));
  if (extra.length > 0) {
    throw new StructureError(
      `unexpected key${extra.length > 1 ? 's' : ''} ${extra.map((k) => `"${k}"`).join(', ')} next to ${operator}; allowed: ${allowed.join(', ')}`,
      path,
    );
  }
}

/** Resolves a value deeply; undefined when it resolves to no value (a `$if` without `$else`). */
export function resolveValue(
  value: unknown,
  path: ValuePath,
  scope: Scope,
  resolver: ValueResolver,
): unknown {
  if (typeof value === 'string') return resolver.string(value, path, scope);
  if (Array.isArray(value)) return resolveList(value, path, scope, resolver);
  if (!isMapping(value)) return value;
  // An operator whose choice reads what is not known yet stays as written, to be resolved later.
  const deferred = (key: string) => key in value && resolver.deferred?.(value[key]) === true;
  if (deferred('$if') || deferred('$forEach') || deferred('$filter') || deferred('$merge')) return value;
  if ('$if' in value) return resolveIf(value, path, scope, resolver);
  if ('$forEach' in value) return resolveForEach(value, path, scope, resolver);
  let out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === '$merge') {
      const merged = resolveValue(item, [...path, key], scope, resolver);
      if (!isMapping(merged)) {
        throw new StructureError(`$merge needs a mapping (got ${typeName(merged)})`, [...path, key]);
      }
      out = { ...out, ...merged };
      continue;
    }
    const resolved = resolveValue(item, [...path, key], scope, resolver);
    if (resolved !== undefined) out[key] = resolved;
  }
  return out;
}

function resolveList(list: unknown[], path: ValuePath, scope: Scope, resolver: ValueResolver): unknown[] {
  const out: unknown[] = [];
  list.forEach((item, i) => {
    if (isMapping(item) && '$concat' in item) {
      if (resolver.deferred?.(item.$concat)) {
        out.push(item);
        return;
      }
      onlyKeys(item, '$concat', ['$concat'], [...path, i]);
      const items = resolveValue(item.$concat, [...path, i, '$concat'], scope, resolver);
      if (!Array.isArray(items)) {
        throw new StructureError(`$concat needs a list (got ${typeName(items)})`, [...path, i, '$concat']);
      }
      out.push(...items);
      return;
    }
    const resolved = resolveValue(item, [...path, i], scope, resolver);
    if (resolved !== undefined) out.push(resolved);
  });
  return out;
}

function resolveIf(value: Record<string, unknown>, path: ValuePath, scope: Scope, resolver: ValueResolver) {
  onlyKeys(value, '$if', ['$if', '$then', '$else'], path);
  if (!('$then' in value)) throw new StructureError('$if needs a $then next to it', path);
  const condition = resolveValue(value.$if, [...path, '$if'], scope, resolver);
  if (typeof condition !== 'boolean') {
    throw new StructureError(`$if needs true or false (got ${typeName(condition)})`, [...path, '$if']);
  }
  const branch = condition ? '$then' : '$else';
  return branch in value ? resolveValue(value[branch], [...path, branch], scope, resolver) : undefined;
}

function resolveForEach(
  value: Record<string, unknown>,
  path: ValuePath,
  scope: Scope,
  resolver: ValueResolver,
) {
  onlyKeys(value, '$forEach', ['$forEach', '$filter', '$return'], path);
  if (!('$return' in value)) throw new StructureError('$forEach needs a $return next to it', path);
  const collection = resolveValue(value.$forEach, [...path, '$forEach'], scope, resolver);
  if (!Array.isArray(collection) && !isMapping(collection)) {
    throw new StructureError(`$forEach needs a list or a mapping (got ${typeName(collection)})`, [
      ...path,
      '$forEach',
    ]);
  }
  const entries: [string | number, unknown][] = Array.isArray(collection)
    ? collection.map((item, i) => [i, item])
    : Object.entries(collection);
  const out: unknown[] = [];
  for (const [key, item] of entries) {
    const itemScope: Scope = { ...scope, roots: { ...scope.roots, item: { key, value: item } } };
    if ('$filter' in value) {
      const keep = resolveValue(value.$filter, [...path, '$filter'], itemScope, resolver);
      if (typeof keep !== 'boolean') {
        throw new StructureError(`$filter needs true or false (got ${typeName(keep)})`, [...path, '$filter']);
      }
      if (!keep) continue;
    }
    const returned = resolveValue(value.$return, [...path, '$return'], itemScope, resolver);
    if (returned !== undefined) out.push(returned);
  }
  return out;
}
