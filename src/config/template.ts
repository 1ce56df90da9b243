/**
 * Template expressions `${…}` in configuration values (docs/design.md#configuration): `project.name`,
 * `environment.name`, `environment.namespace`, `var.<name>`, `local.username`,
 * `local.env.<NAME>`, `actions.<kind>.<name>.outputs.<key>`. `$${` is a literal `${`.
 * A string that is exactly one expression keeps the value's type (a number stays a number).
 */
import { TendError } from '../errors.js';
import type { SourceLocation } from '../errors.js';
import { closestName } from '../suggest.js';
import type { ConfigProblem } from './diagnostics.js';
import type { ConfigPath } from './project.js';

export interface TemplateContext {
  project: { name: string };
  environment: { name: string; namespace: string };
  var: Record<string, unknown>;
  local: { username: string; env: Record<string, string | undefined> };
  /** Outputs of actions that have run, by lower-case kind then name: `actions.build.api.outputs.image`. */
  actions?: Record<string, Record<string, { outputs: Record<string, string> }>>;
}

export interface ResolveOptions {
  /** Leave `${actions.…}` expressions as they are (to check everything else before anything has run). */
  keepActionOutputs?: boolean;
}

type Part = { literal: string } | { expression: string; path: string[] };

const expressionPattern = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
export const templateRoots = ['project', 'environment', 'var', 'local', 'actions'] as const;
const actionKindsLower = ['build', 'deploy', 'test', 'run'];

/** The parts of a string: literal text and expressions. Throws a plain Error with the reason. */
export function parseTemplate(text: string): Part[] {
  const parts: Part[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      literal += '${';
      i += 3;
    } else if (text.startsWith('${', i)) {
      const end = text.indexOf('}', i + 2);
      if (end < 0)
        throw new Error(`unterminated template expression "${text.slice(i)}"; expected a closing "}"`);
      const expression = text.slice(i + 2, end).trim();
      if (!expressionPattern.test(expression)) {
        throw new Error(
          `invalid template expression "\${${text.slice(i + 2, end)}}"; expected a dotted key such as \${var.name}`,
        );
      }
      if (literal) parts.push({ literal });
      literal = '';
      parts.push({ expression, path: expression.split('.') });
      i = end + 1;
    } else {
      literal += text[i];
      i++;
    }
  }
  if (literal || parts.length === 0) parts.push({ literal });
  return parts;
}

/**
 * Resolves every template expression in a value (deeply), returning a new value.
 * @param locate the position of a string inside `value`, for errors
 */
export function resolveTemplates<T>(
  value: T,
  context: TemplateContext,
  locate: (path: ConfigPath) => SourceLocation,
  options: ResolveOptions = {},
): T {
  return walk(value, [], (text, path) => resolveString(text, context, options, () => locate(path))) as T;
}

/** Whether any string in the value holds a template expression (`${`, an escaped `$${` too). */
export function containsTemplate(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('${');
  if (Array.isArray(value)) return value.some(containsTemplate);
  if (value !== null && typeof value === 'object') return Object.values(value).some(containsTemplate);
  return false;
}

/** Action references (`build.api`) used in `${actions.<kind>.<name>.outputs.<key>}` expressions. */
export function findActionReferences(value: unknown): string[] {
  const refs = new Set<string>();
  eachExpression(value, (path) => {
    if (path[0] === 'actions' && path.length >= 3) refs.add(`${path[1]}.${path[2]}`);
  });
  return [...refs];
}

/** Variables (`port`) read by `${var.<name>}` expressions, added to `into`. */
export function findVariableReferences(value: unknown, into: Set<string>): Set<string> {
  eachExpression(value, (path) => {
    if (path[0] === 'var' && path[1] !== undefined) into.add(path[1]);
  });
  return into;
}

/** The dotted path of every expression in a value; a malformed one is skipped (loading reports it). */
function eachExpression(value: unknown, onExpression: (path: readonly string[]) => void): void {
  walk(value, [], (text) => {
    if (!text.includes('${')) return text;
    let parts: Part[];
    try {
      parts = parseTemplate(text);
    } catch {
      return text;
    }
    for (const part of parts) if ('expression' in part) onExpression(part.path);
    return text;
  });
}

/** A template reference to an action output, found when loading (for the graph and for checks). */
export interface TemplateActionReference {
  ref: string;
  path: ConfigPath;
}

/**
 * Checks the syntax of every expression in a value without resolving: unterminated or malformed
 * expressions, unknown roots, malformed action output references. Used when loading.
 */
export function checkTemplateSyntax(
  value: unknown,
  basePath: ConfigPath,
  locate: (path: ConfigPath) => SourceLocation,
): { problems: ConfigProblem[]; actionReferences: TemplateActionReference[] } {
  const problems: ConfigProblem[] = [];
  const actionReferences: TemplateActionReference[] = [];
  walk(value, [], (text, relative) => {
    if (!text.includes('${')) return text;
    const path = [...basePath, ...relative];
    const fail = (message: string) =>
      problems.push({ code: 'TEND_TEMPLATE', message, location: locate(path) });
    let parts: Part[];
    try {
      parts = parseTemplate(text);
    } catch (error) {
      fail((error as Error).message);
      return text;
    }
    for (const part of parts) {
      if (!('expression' in part)) continue;
      const root = part.path[0] ?? '';
      if (!(templateRoots as readonly string[]).includes(root)) {
        fail(`unknown template key "${part.expression}"; available: ${templateRoots.join(', ')}`);
      } else if (root === 'actions') {
        const problem = actionReferenceProblem(part.path);
        if (problem) fail(problem);
        else actionReferences.push({ ref: `${part.path[1]}.${part.path[2]}`, path });
      }
    }
    return text;
  });
  return { problems, actionReferences };
}

function actionReferenceProblem(path: string[]): string | undefined {
  const [, kind, , outputs, , ...extra] = path;
  if (path.length < 5 || outputs !== 'outputs' || extra.length > 0) {
    return (
      `invalid action output reference "${path.join('.')}"; ` +
      'expected actions.<kind>.<name>.outputs.<key> (e.g. actions.build.api.outputs.image)'
    );
  }
  if (!actionKindsLower.includes(kind ?? '')) {
    return `unknown action kind "${kind}" in "${path.join('.')}"; expected one of: ${actionKindsLower.join(', ')}`;
  }
  return undefined;
}

function walk(
  value: unknown,
  path: (string | number)[],
  onString: (text: string, path: ConfigPath) => unknown,
): unknown {
  if (typeof value === 'string') return onString(value, path);
  if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, i], onString));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = walk(item, [...path, key], onString);
    return out;
  }
  return value;
}

function resolveString(
  text: string,
  context: TemplateContext,
  options: ResolveOptions,
  where: () => SourceLocation,
): unknown {
  if (!text.includes('${')) return text;
  let parts: Part[];
  try {
    parts = parseTemplate(text);
  } catch (error) {
    throw new TendError('TEND_TEMPLATE', (error as Error).message, { location: where() });
  }
  const keep = (part: Part) =>
    options.keepActionOutputs && 'expression' in part && part.path[0] === 'actions';
  const only = parts[0];
  if (parts.length === 1 && only && 'expression' in only) {
    return keep(only) ? text : lookup(only.path, context, where);
  }
  return parts
    .map((part) => {
      if ('literal' in part)
        return options.keepActionOutputs ? part.literal.replaceAll('${', () => '$${') : part.literal;
      if (keep(part)) return `\${${part.expression}}`;
      return String(lookup(part.path, context, where));
    })
    .join('');
}

function lookup(path: string[], context: TemplateContext, where: () => SourceLocation): unknown {
  const fail = (message: string): never => {
    throw new TendError('TEND_TEMPLATE', message, { location: where() });
  };
  const expression = path.join('.');
  const [root, ...rest] = path;

  if (root === 'actions') {
    const problem = actionReferenceProblem(path);
    if (problem) fail(problem);
    const [kind, name, , key] = rest as [string, string, string, string];
    const action = own(context.actions, kind) ? own(context.actions?.[kind], name) : undefined;
    const outputs = (action as { outputs?: Record<string, string> } | undefined)?.outputs;
    if (!outputs) {
      return fail(
        `outputs of ${kind}.${name} are not available for "${expression}": it has not run before this action`,
      );
    }
    if (!Object.hasOwn(outputs, key)) {
      const available = Object.keys(outputs).map((k) => `actions.${kind}.${name}.outputs.${k}`);
      return fail(
        `action ${kind}.${name} has no output "${key}"; available: ${available.length > 0 ? available.join(', ') : '(none)'}`,
      );
    }
    return outputs[key];
  }

  if (root === 'local' && rest[0] === 'env' && rest.length === 2) {
    const name = rest[1] as string;
    const value = context.local.env[name];
    if (value === undefined)
      return fail(`environment variable "${name}" is not set (used as "${expression}")`);
    return value;
  }

  const tree: Record<string, unknown> = {
    project: context.project,
    environment: context.environment,
    var: context.var,
    local: { username: context.local.username, env: context.local.env },
  };
  let current: unknown = tree;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i] as string;
    const prefix = path.slice(0, i).join('.');
    if (current === null || typeof current !== 'object') {
      return fail(`unknown key "${expression}"; "${prefix}" is a value, not a mapping`);
    }
    const value = (current as Record<string, unknown>)[segment];
    if (!Object.hasOwn(current, segment) || value === undefined) {
      const keys = Object.entries(current)
        .filter(([, v]) => v !== undefined)
        .map(([k]) => (prefix ? `${prefix}.${k}` : k));
      if (i === 0) keys.push('actions');
      const available = keys.length > 0 ? keys.join(', ') : '(none)';
      if (root === 'var' && i === 1) {
        // A typo of a declared variable is that variable misspelt, not a new one to pass.
        const similar = closestName(
          segment,
          Object.keys(current).filter((k) => (current as Record<string, unknown>)[k] !== undefined),
        );
        if (similar !== undefined) {
          return fail(
            `unknown variable "${expression}"; did you mean "var.${similar}"? available: ${available}`,
          );
        }
        return fail(
          `unknown variable "${expression}"; available: ${available}; set it with --var ${segment}=<value>, ` +
            `or in tend.yml under variables: (or environment ${context.environment.name}'s variables:)`,
        );
      }
      if (root === 'local' && path[1] === 'env' && i === 2) return fail(`unknown key "${expression}"`);
      return fail(`unknown key "${expression}"; available: ${available}`);
    }
    current = value;
  }
  if (current !== null && typeof current === 'object') {
    const keys = Object.keys(current).map((k) => `${expression}.${k}`);
    if (root === 'local' && path.length === 2 && path[1] === 'env')
      keys.splice(0, keys.length, 'local.env.<NAME>');
    return fail(
      `incomplete template expression "${expression}"; expected one of: ${keys.join(', ') || '(none)'}`,
    );
  }
  return current;
}

function own(record: unknown, key: string): unknown {
  if (record === null || typeof record !== 'object' || !Object.hasOwn(record, key)) return undefined;
  return (record as Record<string, unknown>)[key];
}

/** `actions.<kind>.<name>.outputs` of a template context, from outputs keyed by reference (`build.api`). */
export function actionOutputsContext(
  outputsByRef: Record<string, Record<string, string>>,
): NonNullable<TemplateContext['actions']> {
  const actions: NonNullable<TemplateContext['actions']> = {};
  for (const [ref, outputs] of Object.entries(outputsByRef)) {
    const [kind, name] = ref.split('.') as [string, string];
    (actions[kind] ??= {})[name] = { outputs };
  }
  return actions;
}
