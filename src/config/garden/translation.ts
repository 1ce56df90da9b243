/**
 * A Garden document read as tend's: the value tend checks and loads, where each of its keys came
 * from in the Garden document (so that every message points at the file:line the user wrote),
 * what tend cannot do (problems, TEND_CONFIG_UNSUPPORTED), the keys Garden does not have either
 * (problems, TEND_CONFIG_UNKNOWN_KEY) and what it accepts and ignores (notes).
 */
import { closestName } from '../../suggest.js';
import { formatPath, type ConfigProblem } from '../diagnostics.js';
import type { ConfigPath } from '../project.js';

export interface GardenFinding {
  message: string;
  /** Where in the Garden document, as written. */
  path: ConfigPath;
  /** Of a provider entry limited to these environments: said only when one of them is chosen. */
  environments?: string[];
}

/** What fails the load: what tend cannot do, or a key Garden does not have either. */
export interface GardenProblem extends GardenFinding {
  code: Extract<
    ConfigProblem['code'],
    'TEND_CONFIG_UNSUPPORTED' | 'TEND_CONFIG_UNKNOWN_KEY' | 'TEND_CONFIG_INVALID'
  >;
}

/**
 * In `unloadedActions`: any action may be one tend did not load (a project's remote sources hold
 * actions it does not fetch), so a reference to an unknown action is no further error.
 */
export const everyAction = '*';

export class Translation {
  readonly problems: GardenProblem[] = [];
  readonly notes: GardenFinding[] = [];
  /** Actions not loaded because tend cannot run them (their problem says why): `deploy.api`, or `everyAction`. */
  readonly unloadedActions: string[] = [];
  /** A Workflow or custom Command: not an action, run by `tend workflow` and `tend command`. */
  runnable: { kind: 'Workflow' | 'Command'; value: GardenRecord } | undefined;
  /** The action's type as the Garden document names it, where tend runs it as another (a container Run). */
  writtenType: string | undefined;
  /** The name of the 0.12 module the action was converted from. */
  fromModule: string | undefined;
  /** Translated path prefix → the Garden document's path prefix, for renamed and moved keys. */
  readonly #moves: [ConfigPath, ConfigPath][] = [];

  /** @param outer the translation this one's paths go through (a 0.12 module's, for its actions) */
  constructor(readonly outer?: Translation) {}

  /** Where a finding's path (in this translation's input) is in the document. */
  documentPath(path: ConfigPath): ConfigPath {
    return this.outer ? this.outer.originalPath(path) : path;
  }

  /** What tend does not do: the load fails with it. */
  unsupported(path: ConfigPath, message: string): void {
    this.problems.push({ code: 'TEND_CONFIG_UNSUPPORTED', path, message });
  }

  /** A key Garden does not have there either: the load fails with it, as with tend's own unknown keys. */
  unknownKey(path: ConfigPath, message: string): void {
    this.problems.push({ code: 'TEND_CONFIG_UNKNOWN_KEY', path, message });
  }

  /** A value of the wrong shape, where tend checks a Garden key that it then ignores: the load fails with it. */
  invalid(path: ConfigPath, message: string): void {
    this.problems.push({ code: 'TEND_CONFIG_INVALID', path, message });
  }

  /** What tend accepts and ignores: said once, never an error. */
  note(path: ConfigPath, message: string): void {
    this.notes.push({ path, message });
  }

  /** The translated `to` (and what is below it) came from `from` in the Garden document. */
  moved(to: ConfigPath, from: ConfigPath): void {
    this.#moves.push([to, from]);
  }

  /** The Garden document's path of a translated path (the longest moved prefix wins). */
  originalPath(path: ConfigPath): ConfigPath {
    let best: [ConfigPath, ConfigPath] | undefined;
    for (const move of this.#moves) {
      const [to] = move;
      if (to.length > path.length || (best && best[0].length >= to.length)) continue;
      if (to.every((segment, i) => String(segment) === String(path[i]))) best = move;
    }
    return this.documentPath(best ? [...best[1], ...path.slice(best[0].length)] : path);
  }
}

export type GardenRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is GardenRecord {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * RFC 7396 JSON merge patch, as Garden merges a base module's values and serviceResource, and a
 * provider's entries of the project and of an environment.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const out: GardenRecord = isRecord(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** A dependency as tend writes it: `build.api`, from `build.api`, `Build.api` or `{ kind: Build, name: api }`. */
export function dependencyRef(dependency: unknown): unknown {
  if (isRecord(dependency) && typeof dependency.kind === 'string' && typeof dependency.name === 'string') {
    return `${dependency.kind.toLowerCase()}.${dependency.name}`;
  }
  if (typeof dependency === 'string' && dependency.includes('.')) {
    const dot = dependency.indexOf('.');
    return `${dependency.slice(0, dot).toLowerCase()}${dependency.slice(dot)}`;
  }
  return dependency;
}

/** `a, b and c`. */
export function listWords(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** The keys of `value` that `keep` keeps, with their values, and the names of the others. */
function keepKeys(
  value: GardenRecord,
  keep: (key: string) => boolean,
): { kept: GardenRecord; left: string[] } {
  const kept: GardenRecord = {};
  const left: string[] = [];
  for (const [key, item] of Object.entries(value)) {
    if (keep(key)) kept[key] = item;
    else left.push(key);
  }
  return { kept, left };
}

/**
 * Moves the keys of `spec` that tend ignores into one note (`what` names them: "Garden's
 * kubernetes provider settings"), and returns the others.
 */
export function dropIgnoredKeys(
  translation: Translation,
  value: GardenRecord,
  ignored: readonly string[],
  at: ConfigPath,
  what: string,
): GardenRecord {
  const { kept, left: dropped } = keepKeys(value, (key) => !ignored.includes(key));
  if (dropped.length > 0) {
    translation.note([...at, dropped[0]!], `${listWords(dropped)}: ${what} that tend accepts and ignores`);
  }
  return kept;
}

/**
 * `value` without the keys Garden does not have there but accepts (a schema that allows unknown
 * keys), in one note that names them as no setting of `what` (with the closest of `known`), ignored.
 */
export function noteUnknownKeys(
  translation: Translation,
  value: GardenRecord,
  known: readonly string[],
  at: ConfigPath,
  what: string,
): GardenRecord {
  const { kept, left: unknown } = keepKeys(value, (key) => known.includes(key));
  if (unknown.length > 0) {
    const similar = unknown.flatMap((key) => {
      const close = closestName(key, known);
      if (close === undefined) return [];
      return [unknown.length === 1 ? JSON.stringify(close) : `${JSON.stringify(close)} (${key})`];
    });
    translation.note(
      [...at, unknown[0]!],
      `${listWords(unknown)}: ${unknown.length === 1 ? 'not a setting' : 'not settings'} of ${what}; ` +
        (similar.length > 0 ? `did you mean ${similar.join(', ')}? ` : '') +
        `Garden accepts unknown keys there and tend ignores ${unknown.length === 1 ? 'it' : 'them'}`,
    );
  }
  return kept;
}

/** `garden.io/v0`, `garden.io/v1` and `garden.io/v2` are read; another is a problem. */
export function checkApiVersion(translation: Translation, value: GardenRecord): void {
  if (value.apiVersion === undefined) return;
  if (typeof value.apiVersion !== 'string' || !/^garden\.io\/v[012]$/.test(value.apiVersion)) {
    translation.unsupported(
      ['apiVersion'],
      `apiVersion ${JSON.stringify(value.apiVersion)} is not one tend reads; expected garden.io/v0, garden.io/v1 or garden.io/v2`,
    );
  }
}

/**
 * `value` without the keys Garden does not have there, each refused as tend's schema check
 * refuses an unknown key (a close name suggested), with Garden's keys (`known`, in Garden's
 * order) as the expected ones: the tend type it becomes would name its own. `hint` adds to the
 * message of a key (say what it belongs to); `label` names where `value` is (its path, else).
 */
export function refuseUnknownKeys(
  translation: Translation,
  value: GardenRecord,
  known: readonly string[],
  at: ConfigPath,
  hint: (key: string) => string | undefined = () => undefined,
  label = formatPath(at),
): GardenRecord {
  const kept: GardenRecord = {};
  for (const [key, item] of Object.entries(value)) {
    if (known.includes(key)) {
      kept[key] = item;
      continue;
    }
    const similar = closestName(key, known);
    const more = hint(key);
    translation.unknownKey(
      [...at, key],
      `unknown key ${JSON.stringify(key)} in ${label}; ` +
        (similar ? `did you mean ${JSON.stringify(similar)}? ` : '') +
        `expected one of: ${known.join(', ')}` +
        (more ? `; ${more}` : ''),
    );
  }
  return kept;
}
