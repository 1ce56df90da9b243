/**
 * Layers of variables (the project's, an environment's, a varfile's, an action's): how two
 * layers' values merge, as Garden merges them, and Garden's `$merge` written directly in a layer
 * (core/src/template/templated-collections.ts, ObjectSpreadLazyValue), which gives that layer the
 * keys of the mapping it resolves to.
 */
import { TendError, type SourceLocation } from '../errors.js';
import { TemplateEvaluationError, typeName } from '../expressions/evaluate.js';
import type { ConfigPath } from './project.js';

export const mergeKey = '$merge';

export function isMergeable(value: unknown): value is Record<string, unknown> | unknown[] {
  return value !== null && typeof value === 'object';
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return isMergeable(value) && !Array.isArray(value);
}

/**
 * `higher` merged into `lower` as Garden merges variable layers (lodash's merge): mappings key
 * by key, lists item by item, anything else replaced by the higher value. Returns a new value.
 */
export function mergeVariableValues(lower: unknown, higher: unknown): unknown {
  if (Array.isArray(lower) && Array.isArray(higher)) {
    const out = [...lower];
    higher.forEach((item, i) => (out[i] = mergeVariableValues(lower[i], item)));
    return out;
  }
  if (isMapping(lower) && isMapping(higher)) {
    const out: Record<string, unknown> = { ...lower };
    for (const [key, item] of Object.entries(higher)) {
      if (item !== undefined) out[key] = mergeVariableValues(lower[key], item);
    }
    return out;
  }
  return higher;
}

/**
 * The raw value at `keys` under a variable's raw value in one layer: `template` when a template
 * (or a `$merge`-like key) is on the way, so only resolving the whole variable tells; `hidden`
 * when a scalar is, which hides the layers below; undefined when the layer does not set it.
 */
export function rawAt(
  raw: unknown,
  keys: readonly string[],
  holdsTemplate: (value: unknown) => boolean,
): { raw: unknown } | 'template' | 'hidden' | undefined {
  for (const key of keys) {
    if (raw === undefined) return undefined;
    if (!isMergeable(raw)) return holdsTemplate(raw) ? 'template' : 'hidden';
    if (Object.keys(raw).some((k) => k.startsWith('$'))) return 'template';
    raw = Object.hasOwn(raw, key) ? (raw as Record<string, unknown>)[key] : undefined;
  }
  return raw === undefined ? undefined : { raw };
}

/** Where each layer of variables is written, by the layer: for a `$merge` in it that is not a mapping. */
const layerPlaces = new WeakMap<object, { owner: string; locate: (path: ConfigPath) => SourceLocation }>();

/** Records where a layer of variables is written (`locate` of a path inside it) and whose it is. */
export function placeVariableLayer(
  layer: object,
  owner: string,
  locate: (path: ConfigPath) => SourceLocation,
): void {
  layerPlaces.set(layer, { owner, locate });
}

export function hasMergeKey(layer: Record<string, unknown>): boolean {
  return Object.hasOwn(layer, mergeKey);
}

/**
 * A layer with its `$merge` replaced by the keys of the mapping it resolves to (`resolve`: the
 * value resolved, as Garden does, with `${var.…}` reading the layers below): keys written before
 * it lose to the merged ones, keys written after it win. Its other values stay as written.
 */
export function expandMergeKey(
  layer: Record<string, unknown>,
  resolve: (value: unknown) => unknown,
): Record<string, unknown> {
  let out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(layer)) {
    if (key !== mergeKey) {
      out[key] = raw;
      continue;
    }
    const merged = resolve(raw);
    if (!isMapping(merged)) throw notAMapping(layer, merged);
    out = { ...out, ...merged };
  }
  return out;
}

function notAMapping(layer: object, merged: unknown): Error {
  const place = layerPlaces.get(layer);
  const problem = `$merge in ${place ? `${place.owner}'s ` : ''}variables needs a mapping (got ${typeName(merged)})`;
  if (!place) return new TemplateEvaluationError(problem);
  return new TendError('TEND_TEMPLATE', problem, {
    location: place.locate([mergeKey]),
    detail: { hint: '$merge merges the keys of a mapping into the variables, e.g. $merge: ${var.common}' },
  });
}
