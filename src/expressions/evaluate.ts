/**
 * Evaluates parsed templates (syntax.ts) against a scope of named roots (`var`, `project`, …).
 *
 * A key that is not there evaluates to `Missing` (with the reason), not to an error, so that
 * `||`, `&&`, `!`, `typeof` and `?:` can test for it as Garden does: `${var.x || "default"}` is
 * "default" when `var.x` is not set, `!var.x` is true, `typeof var.x` is "undefined"; an
 * optional `${…}?` is no value then (undefined). Anywhere else a Missing stays one, and whoever
 * asked for the value reports its reason.
 */
import { callFunction } from './functions.js';
import type { Expression, Template, TemplatePart } from './syntax.js';

/**
 * A key that is not there; `reason` says which and what is available instead. `later`: it is
 * there once an action has run (its outputs, its version), so the value can be resolved then.
 * `undeclared`: the context says nothing declares it (a value to pass when the command runs).
 */
export class Missing {
  constructor(
    readonly reason: string,
    readonly later = false,
    readonly undeclared?: string,
  ) {}
}

/** An error in evaluating: a wrong type for an operator or a function argument, a cycle. */
export class TemplateEvaluationError extends Error {
  override name = 'TemplateEvaluationError';
  /** The key of a `Missing` that nothing declares, when that was the error. */
  undeclared?: string;
}

/** A value that needs what is known only once an action has run (a `Missing` that is `later`). */
export class NotYetKnownError extends TemplateEvaluationError {
  override name = 'NotYetKnownError';
}

/** A value computed when first read, then kept (git's branch, a variable holding a template). */
export class Lazy {
  private state: { done: false } | { done: true; value: unknown } = { done: false };
  constructor(private readonly compute: () => unknown) {}

  get(): unknown {
    if (!this.state.done) this.state = { done: true, value: this.compute() };
    return this.state.value;
  }
}

/** Where a lookup has got to, for messages: `prefix` is the path so far, `text` the whole lookup. */
export interface LookupPlace {
  prefix: string;
  text: string;
}

/**
 * A part of the context that is not data (`project`, `local.env`, `actions`): it answers for its
 * members, and is not a value itself (`${project}` alone is incomplete).
 */
export interface ContextNode {
  member(key: string | number, place: LookupPlace): unknown;
  /** What to write instead of the node itself, for "incomplete" errors (`project.name`). */
  completions(prefix: string): string[];
  /** The node as one value, where it has one (`${var}`: every variable, as Garden gives it). */
  whole?(place: LookupPlace): unknown;
}

/** Data from YAML never holds functions: an object with `member` and `completions` methods is a node. */
export function isContextNode(value: unknown): value is ContextNode {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<ContextNode>).member === 'function' &&
    typeof (value as Partial<ContextNode>).completions === 'function'
  );
}

/** A ContextNode of fixed members (values, Lazy values or other nodes). */
export class RecordNode implements ContextNode {
  constructor(readonly members: Readonly<Record<string, unknown>>) {}

  member(key: string | number, place: LookupPlace): unknown {
    const name = String(key);
    const value = Object.hasOwn(this.members, name) ? this.members[name] : undefined;
    if (value === undefined) {
      const keys = this.keys().map((k) => (place.prefix ? `${place.prefix}.${k}` : k));
      return new Missing(`unknown key "${place.text}"; available: ${keys.join(', ') || '(none)'}`);
    }
    return value;
  }

  keys(): string[] {
    return Object.keys(this.members).filter((k) => this.members[k] !== undefined);
  }

  completions(prefix: string): string[] {
    return this.keys().map((k) => `${prefix}.${k}`);
  }
}

export interface Scope {
  /** The roots by name: data, Lazy values, or ContextNodes that answer for their members. */
  readonly roots: Readonly<Record<string, unknown>>;
  /** Other names of roots (`variables` for `var`), not listed in messages. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** The roots messages list as available, in order (default: all of them). */
  readonly listed?: readonly string[];
}

/**
 * A ContextNode that resolves a whole lookup at once (its keys evaluated), for a root whose
 * messages need the whole path (`actions.<kind>.<name>.outputs.<key>`).
 */
export interface PathNode {
  resolvePath(path: readonly (string | number)[], text: string): unknown;
}

function isPathNode(value: unknown): value is PathNode {
  return typeof value === 'object' && value !== null && 'resolvePath' in value;
}

function rootOf(scope: Scope, name: string, text: string): unknown {
  const actual = scope.aliases?.[name] ?? name;
  const value = Object.hasOwn(scope.roots, actual) ? scope.roots[actual] : undefined;
  if (value !== undefined) return value;
  const listed = scope.listed ?? Object.keys(scope.roots);
  return new Missing(`unknown key "${text}"; available: ${listed.join(', ')}`);
}

type Lookup = Extract<Expression, { type: 'lookup' }>;

/**
 * The value of a template: a single part keeps its type, several join into a string. An optional
 * expression (`${…}?`) whose key is not there gives undefined: no value, or nothing in a string.
 */
export function evaluateTemplate(template: Template, scope: Scope): unknown {
  return evaluateParts(template.parts, scope);
}

function evaluateParts(parts: readonly TemplatePart[], scope: Scope): unknown {
  if (parts.length === 0) return '';
  if (parts.length === 1) return evaluatePart(parts[0]!, scope);
  let text = '';
  for (const part of parts) {
    const value = evaluatePart(part, scope);
    if (value instanceof Missing) return value;
    if (value !== undefined) text += stringify(value);
  }
  return text;
}

function evaluatePart(part: TemplatePart, scope: Scope): unknown {
  if (part.type === 'text') return part.text;
  if (part.type === 'expression') {
    const value = evaluateExpression(part.expression, scope);
    return part.optional && value instanceof Missing ? undefined : value;
  }
  const condition = evaluateExpression(part.condition, scope);
  if (condition instanceof Missing) return condition;
  return evaluateParts(isTruthy(condition) ? part.then : part.else, scope);
}

/** How a value reads inside a longer string: lists as Garden joins them, mappings as JSON. */
export function stringify(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((v) => (v === null ? '' : stringify(v))).join(',');
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Collections are truthy even when empty, as in Garden. */
export function isTruthy(value: unknown): boolean {
  return typeof value === 'object' && value !== null ? true : Boolean(value);
}

export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'object') return 'mapping';
  return typeof value;
}

export function evaluateExpression(node: Expression, scope: Scope): unknown {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'template':
      return evaluateTemplate(node.template, scope);
    case 'array': {
      const values: unknown[] = [];
      for (const element of node.elements) {
        const value = evaluateExpression(element, scope);
        if (value instanceof Missing) return value;
        values.push(value);
      }
      return values;
    }
    case 'lookup':
      return lookup(node, scope);
    case 'call': {
      const args: unknown[] = [];
      for (const arg of node.args) {
        const value = evaluateExpression(arg, scope);
        if (value instanceof Missing) return value;
        args.push(value);
      }
      return callFunction(node.name, args);
    }
    case 'not': {
      const value = evaluateExpression(node.operand, scope);
      return value instanceof Missing ? true : !isTruthy(value);
    }
    case 'typeof': {
      const value = evaluateExpression(node.operand, scope);
      return value instanceof Missing ? 'undefined' : typeof value;
    }
    case 'negate': {
      const value = evaluateExpression(node.operand, scope);
      if (value instanceof Missing) return value;
      if (typeof value !== 'number')
        throw new TemplateEvaluationError(`unary "-" needs a number (got ${typeName(value)})`);
      return -value;
    }
    case 'or': {
      const left = evaluateExpression(node.left, scope);
      return !(left instanceof Missing) && isTruthy(left) ? left : evaluateExpression(node.right, scope);
    }
    case 'and': {
      const left = evaluateExpression(node.left, scope);
      if (left instanceof Missing) return false;
      if (!isTruthy(left)) return left;
      const right = evaluateExpression(node.right, scope);
      return right instanceof Missing ? false : right;
    }
    case 'conditional': {
      const test = evaluateExpression(node.test, scope);
      const chosen = !(test instanceof Missing) && isTruthy(test) ? node.consequent : node.alternate;
      return evaluateExpression(chosen, scope);
    }
    case 'binary': {
      const left = evaluateExpression(node.left, scope);
      if (left instanceof Missing) return left;
      const right = evaluateExpression(node.right, scope);
      if (right instanceof Missing) return right;
      return binary(node.operator, left, right);
    }
  }
}

function binary(operator: string, left: unknown, right: unknown): unknown {
  switch (operator) {
    case '==':
      return left === right;
    case '!=':
      return left !== right;
    case '+':
      if (typeof left === 'number' && typeof right === 'number') return left + right;
      if (Array.isArray(left) && Array.isArray(right)) return [...left, ...right];
      if ((typeof left === 'string' || typeof right === 'string') && isPrimitive(left) && isPrimitive(right))
        return String(left) + String(right);
      throw new TemplateEvaluationError(
        `"+" needs two numbers, two strings or two lists (got ${typeName(left)} and ${typeName(right)})`,
      );
    case 'contains':
      return contains(left, right);
  }
  if (typeof left !== 'number' || typeof right !== 'number') {
    throw new TemplateEvaluationError(
      `"${operator}" needs two numbers (got ${typeName(left)} and ${typeName(right)})`,
    );
  }
  switch (operator) {
    case '-':
      return left - right;
    case '*':
      return left * right;
    case '/':
    case '%':
      if (right === 0) throw new TemplateEvaluationError(`"${operator}" by zero`);
      return operator === '/' ? left / right : left % right;
    case '<':
      return left < right;
    case '<=':
      return left <= right;
    case '>':
      return left > right;
    default:
      return left >= right;
  }
}

function isPrimitive(value: unknown): boolean {
  return value === null || (typeof value !== 'object' && typeof value !== 'function');
}

function contains(collection: unknown, element: unknown): boolean {
  if (!isPrimitive(element)) {
    throw new TemplateEvaluationError(
      `the right side of "contains" must be a string, number, boolean or null (got ${typeName(element)})`,
    );
  }
  if (Array.isArray(collection)) return collection.includes(element);
  if (typeof collection === 'string') return collection.includes(String(element));
  if (collection !== null && typeof collection === 'object')
    return Object.hasOwn(collection, String(element));
  throw new TemplateEvaluationError(
    `the left side of "contains" must be a string, list or mapping (got ${typeName(collection)})`,
  );
}

function lookup(node: Lookup, scope: Scope): unknown {
  const current: unknown = rootOf(scope, node.root, node.text);
  const keys: (string | number)[] = [];
  for (const segment of node.path) {
    const key = typeof segment === 'string' ? segment : bracketKey(segment, node.text, scope);
    if (key instanceof Missing) return key;
    keys.push(key);
  }
  if (isPathNode(current)) return current.resolvePath(keys, node.text);
  return followPath(current, keys, node.root, node.text);
}

/**
 * The value at `keys` under `current` (a value or a node), whose own path is `prefix`; a Missing
 * names what is not there. `text` is the whole lookup, for messages.
 */
export function followPath(
  current: unknown,
  keys: readonly (string | number)[],
  prefix: string,
  text: string,
): unknown {
  for (const key of keys) {
    current = force(current);
    if (current instanceof Missing) return current;
    current = member(current, key, { prefix, text });
    prefix = `${prefix}.${key}`;
  }
  current = force(current);
  if (current instanceof Missing) return current;
  if (isContextNode(current)) {
    if (current.whole) return current.whole({ prefix, text });
    // An error, not a Missing: a conditional would read it as a key that is not there (false).
    throw new TemplateEvaluationError(
      `incomplete template expression "${text}"; expected one of: ${current.completions(prefix).join(', ') || '(none)'}`,
    );
  }
  return current;
}

function bracketKey(segment: Expression, text: string, scope: Scope): string | number | Missing {
  const value = evaluateExpression(segment, scope);
  if (value instanceof Missing || typeof value === 'string' || typeof value === 'number') return value;
  throw new TemplateEvaluationError(
    `a key in brackets must be a string or a number (got ${typeName(value)} in "${text}")`,
  );
}

function force(value: unknown): unknown {
  return value instanceof Lazy ? value.get() : value;
}

function member(container: unknown, key: string | number, place: LookupPlace): unknown {
  if (isContextNode(container)) return container.member(key, place);
  if (Array.isArray(container)) {
    const index = typeof key === 'number' ? key : /^[0-9]+$/.test(key) ? Number(key) : NaN;
    if (Number.isInteger(index) && index >= 0 && index < container.length) return container[index];
    return new Missing(
      `unknown key "${place.text}"; "${place.prefix}" is a list of ${container.length} items (indexes 0 to ${container.length - 1})`,
    );
  }
  if (container !== null && typeof container === 'object') {
    const name = String(key);
    const value = Object.hasOwn(container, name) ? (container as Record<string, unknown>)[name] : undefined;
    if (value !== undefined) return value;
    const keys = Object.keys(container).map((k) => `${place.prefix}.${k}`);
    return new Missing(`unknown key "${place.text}"; available: ${keys.join(', ') || '(none)'}`);
  }
  return new Missing(`unknown key "${place.text}"; "${place.prefix}" is a value, not a mapping`);
}
