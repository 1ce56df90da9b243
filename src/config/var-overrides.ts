/**
 * `--var name=value`, with Garden's dotted path into a variable (`--var db.password=secret`,
 * `--var hosts[0]=a`: core/src/config/template-contexts/variables.ts, applyOverrides): the key
 * is set inside the variable and the mapping's other keys stay. (Garden first looks for a
 * variable named with the dot itself; tend's variable names hold no dot, so the path is always
 * one into a variable.)
 */
import { TendError } from '../errors.js';
import { Missing } from '../expressions/evaluate.js';
import type { VariableValue } from './project.js';
import { variableNamePattern } from './schema.js';

/** A path's key: a name, or a list's index. */
type PathKey = string | number;

/** A variable's name, as `variables:` allows it, unanchored. */
const nameSource = variableNamePattern.slice(1, -1);
const nameRegExp = new RegExp(variableNamePattern);
const pathRegExp = new RegExp(`^${nameSource}(?:\\.${nameSource}|\\[[0-9]{1,4}\\])*$`);
const keyRegExp = new RegExp(`${nameSource}|\\[([0-9]+)\\]`, 'g');
/** Keys that lead to an object's prototype: setting under them could change every object. */
const prototypeKeys = new Set(['__proto__', 'constructor', 'prototype']);

/** `db.hosts[0].name` → `['db', 'hosts', 0, 'name']`; the path is checked by parseVarFlags. */
export function varPathKeys(path: string): PathKey[] {
  return [...path.matchAll(keyRegExp)].map((m) => (m[1] === undefined ? m[0] : Number(m[1])));
}

/** `['db', 'hosts', 0]` → `db.hosts[0]`; undefined when a key cannot be written so. */
export function varPathText(keys: readonly PathKey[]): string | undefined {
  let text = '';
  for (const key of keys) {
    if (typeof key === 'number') text += `[${key}]`;
    else if (nameRegExp.test(key)) text += text === '' ? key : `.${key}`;
    else return undefined;
  }
  return text;
}

/** `['team=payments', 'db.password=x']` → `{team: 'payments', 'db.password': 'x'}`. */
export function parseVarFlags(flags: readonly string[] | undefined): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const flag of flags ?? []) {
    const eq = flag.indexOf('=');
    const key = eq < 0 ? '' : flag.slice(0, eq).trim();
    const shown = JSON.stringify(flag.slice(0, 140));
    if (eq < 0 || !pathRegExp.test(key)) {
      throw new TendError(
        'TEND_USAGE',
        `invalid --var ${shown}; expected name=value, the name a variable's or a dotted path into one ` +
          '(e.g. --var team=payments, --var db.password=secret, --var hosts[0]=a)',
      );
    }
    const reserved = varPathKeys(key).find((k) => typeof k === 'string' && prototypeKeys.has(k));
    if (reserved !== undefined) {
      throw new TendError(
        'TEND_USAGE',
        `invalid --var ${shown}; "${reserved}" cannot name a variable or a key in one (it names an object's prototype)`,
      );
    }
    vars[key] = flag.slice(eq + 1);
  }
  return vars;
}

function valueAt(variables: Record<string, VariableValue>, keys: readonly PathKey[]): unknown {
  let value: unknown = variables;
  for (const key of keys) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PathKey, unknown>)[key];
  }
  return value;
}

/**
 * --var values are strings; one that overrides a number or boolean variable becomes that type
 * when it reads as one (`--var replicas=3` keeps `replicas` a number).
 */
function typed(previous: unknown, text: string): VariableValue {
  if (typeof previous === 'number' && text.trim() !== '' && Number.isFinite(Number(text)))
    return Number(text);
  if (typeof previous === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

/**
 * The --var overrides as a layer of variables above `variables`: a dotted path becomes nested
 * mappings (lists for `[n]`), which merge into the variable as any higher layer does. As with
 * Garden's lodash `set`, a later flag's path through an earlier flag's scalar replaces it.
 */
export function varOverridesLayer(
  variables: Record<string, VariableValue>,
  overrides: Record<string, string>,
): Record<string, VariableValue> {
  const layer: Record<string, VariableValue> = {};
  for (const [path, text] of Object.entries(overrides)) {
    const keys = varPathKeys(path);
    let parent: Record<PathKey, unknown> = layer;
    keys.slice(0, -1).forEach((key, i) => {
      const child = Object.hasOwn(parent, key) ? parent[key] : undefined;
      if (child === null || typeof child !== 'object') {
        parent[key] = typeof keys[i + 1] === 'number' ? [] : {};
      }
      parent = parent[key] as Record<PathKey, unknown>;
    });
    parent[keys.at(-1)!] = typed(valueAt(variables, keys), text);
  }
  return layer;
}

/**
 * A key missing inside a declared variable (`${var.db.password}` where `db` has no `password`)
 * with the --var that sets it: the dotted path, not `--var db=…`, which would replace `db`. Like a
 * variable nothing declares, it is `undeclared` (its dotted path): a value to pass when the
 * command runs, which `tend validate` notes where it notes an undeclared one.
 */
export function withVarFlagHint(missing: Missing, keys: readonly PathKey[], variable: unknown): Missing {
  if (missing.later || missing.undeclared !== undefined) return missing;
  let value = variable;
  for (let i = 1; i < keys.length; i++) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return missing;
    const key = keys[i]!;
    if (!Object.hasOwn(value, key)) {
      const path = varPathText(keys.slice(0, i + 1));
      return path === undefined
        ? missing
        : new Missing(`${missing.reason}; set it with --var ${path}=<value>`, false, path);
    }
    value = (value as Record<PathKey, unknown>)[key];
  }
  return missing;
}
