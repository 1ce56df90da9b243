/**
 * Template expressions `${…}` in configuration values: Garden's template language
 * (docs/templates.md; the language itself is in src/expressions/, the contexts in
 * template-context.ts). `$${` is a literal `${`. A string that is exactly one expression keeps
 * the value's type (a number stays a number, a list a list). What a `?` after `${…}` means is the
 * project's (`templateSyntax`: template-syntax.ts), which its template contexts carry.
 */
import { TendError } from '../errors.js';
import type { SourceLocation } from '../errors.js';
import type { ConfigProblem } from './diagnostics.js';
import {
  evaluateTemplate,
  Missing,
  NotYetKnownError,
  RecordNode,
  stringify,
  TemplateEvaluationError,
} from '../expressions/evaluate.js';
import type { Scope } from '../expressions/evaluate.js';
import { TemplateFunctionError } from '../expressions/functions.js';
import { resolveValue, StructureError, structuralKeys } from '../expressions/structure.js';
import type { ValueResolver } from '../expressions/structure.js';
import { eachLookup } from '../expressions/lookups.js';
import type { BranchTest } from '../expressions/lookups.js';
import { parseTemplateString, TemplateSyntaxError } from '../expressions/syntax.js';
import type { Expression, OptionalSuffix, SyntaxOptions, Template } from '../expressions/syntax.js';
import type { ConfigPath, TemplateReferences } from './project.js';
import { actionKindsLower, actionLookupProblem, actionsPathOf, isActionField } from './action-references.js';
import { gardenRoots, scopeOf, templateRoots } from './template-context.js';
import { InputsNode } from './template-inputs.js';
import type { TemplateContext } from './template-context.js';

export type { TemplateContext } from './template-context.js';
export { templateRoots } from './template-context.js';

export interface ResolveOptions {
  /** Leave `${actions.…}` expressions as they are (to check everything else before anything has run). */
  keepActionOutputs?: boolean;
  /** Called when, keeping action outputs, an expression is kept because a variable it reads does. */
  onDeferred?: () => void;
}

type Lookup = Extract<Expression, { type: 'lookup' }>;

/** Parsed templates by syntax and text: the same strings are resolved for every action and command. */
const parsed: Record<OptionalSuffix, Map<string, Template>> = {
  'whole-value': new Map(),
  'every-expression': new Map(),
  text: new Map(),
};
const parsedLimit = 10_000;

/**
 * A path written with `${…}` (a varfile's, a `source:`), resolved in a context: text that is not
 * empty and holds no NUL, else the error at its line. `what` names it (`varfile path`), `expected`
 * what it should be (`a file name`).
 */
export function resolvePathTemplate(
  template: string,
  context: TemplateContext,
  at: () => SourceLocation,
  what: string,
  expected: string,
): string {
  const given = resolveTemplates(template, context, at);
  if (typeof given !== 'string' || given === '' || given.includes('\0')) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `${what} "${template}" resolves to ${(JSON.stringify(given) ?? 'nothing').slice(0, 200)}; expected ${expected}`,
      { location: at() },
    );
  }
  return given;
}

/** A string's template in a syntax (default: tend's own), parsed once. Throws TemplateSyntaxError. */
function templateOf(text: string, syntax: SyntaxOptions = {}): Template {
  const cache = parsed[syntax.optionalSuffix ?? 'whole-value'];
  let template = cache.get(text);
  if (template === undefined) {
    template = parseTemplateString(text, syntax);
    if (cache.size >= parsedLimit) cache.clear();
    cache.set(text, template);
  }
  return template;
}

/**
 * A string's template for its lookups, which are the same in every syntax (only what a `?` after
 * `${…}` means differs): the one already parsed, whichever syntax it was parsed in.
 */
function lookupsTemplateOf(text: string): Template {
  return (
    parsed['every-expression'].get(text) ??
    parsed.text.get(text) ??
    templateOf(text, { optionalSuffix: 'whole-value' })
  );
}

/**
 * The parts of a string: literal text and expressions as written (`path` when the expression is
 * a plain dotted key). Throws a plain Error with the reason.
 */
export function parseTemplate(
  text: string,
): ({ literal: string } | { expression: string; path?: string[] })[] {
  const template = templateOf(text);
  const parts = template.parts.map((part) => {
    if (part.type === 'text') return { literal: part.text };
    const inner = part.source.slice(2, part.source.endsWith('}?') ? -2 : -1).trim();
    const lookup =
      part.type === 'expression' && part.expression.type === 'lookup' ? part.expression : undefined;
    const dotted = lookup?.path.every((s) => typeof s === 'string');
    return dotted
      ? { expression: inner, path: [lookup!.root, ...(lookup!.path as string[])] }
      : { expression: inner };
  });
  return parts.length > 0 ? parts : [{ literal: '' }];
}

/** Whether a value holds a template expression (`${`, an escaped `$${` too) or a structural operator. */
export function containsTemplate(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('${');
  if (Array.isArray(value)) return value.some(containsTemplate);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(
      ([key, item]) => structuralKeys.includes(key) || containsTemplate(item),
    );
  }
  return false;
}

/**
 * Each string of a value that holds `${`, with its path (made only for those: most strings hold
 * none, and this runs over every action's spec when loading). With `test`, the branch of a `$if`
 * its condition rules out is skipped; `branched`: the string is in one the test does not know.
 */
function eachTemplateString(
  value: unknown,
  onString: (text: string, path: ConfigPath, branched: boolean) => void,
  path: (string | number)[] = [],
  test?: BranchTest,
  branched = false,
): void {
  if (typeof value === 'string') {
    if (value.includes('${')) onString(value, [...path], branched);
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      eachTemplateString(value[i], onString, path, test, branched);
      path.pop();
    }
  } else if (value !== null && typeof value === 'object') {
    const isIf = '$if' in value;
    const known = test && isIf ? knownIf((value as { $if: unknown }).$if, test) : undefined;
    for (const key in value) {
      if ((key === '$then' && known === false) || (key === '$else' && known === true)) continue;
      const inBranch = branched || (isIf && known === undefined && (key === '$then' || key === '$else'));
      path.push(key);
      eachTemplateString((value as Record<string, unknown>)[key], onString, path, test, inBranch);
      path.pop();
    }
  }
}

/** Which way a `$if` goes, when its condition (a boolean, or one `${…}`) is known. */
function knownIf(condition: unknown, test: BranchTest): boolean | undefined {
  if (typeof condition === 'boolean') return condition;
  if (typeof condition !== 'string') return undefined;
  try {
    const [part, ...more] = lookupsTemplateOf(condition).parts;
    return part?.type === 'expression' && !part.optional && more.length === 0
      ? test(part.expression)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Every lookup in the templates of a value; a malformed template is skipped (loading reports it). */
export function eachValueLookup(
  value: unknown,
  onLookup: (lookup: Lookup, path: ConfigPath, branched: boolean) => void,
  test?: BranchTest,
): void {
  eachTemplateString(
    value,
    (text, path, branchedString) => {
      let template: Template;
      try {
        template = lookupsTemplateOf(text);
      } catch {
        return;
      }
      eachLookup(
        template,
        (lookup, _optional, branched) => onLookup(lookup, path, branchedString || branched === true),
        test,
      );
    },
    [],
    test,
  );
}
/** A lookup of a root that reads actions (`actions`, `runtime`, `modules`) as the path under `actions` it reads. */
function actionsPath(lookup: Lookup): Lookup['path'] | undefined {
  return actionsPathOf(lookup.root, lookup.path);
}

/** `build.api` for a lookup of an action with a static kind and name. */
function staticActionReference(lookup: Lookup): string | undefined {
  const [kind, name] = actionsPath(lookup) ?? [];
  if (typeof kind !== 'string' || typeof name !== 'string') return undefined;
  return `${kind}.${name}`;
}

/** Whether a lookup reads what the configuration says of an action (`actions.build.api.buildPath`): known before anything runs. */
function readsActionField(lookup: Lookup): boolean {
  return isActionField(actionsPath(lookup)?.[2]);
}

/**
 * Whether a lookup reads what an action has only once it ran or was versioned (`outputs`,
 * `version`): a dependency. An action's variables (`actions.<kind>.<name>.var`) and what the
 * configuration says of it (`.buildPath`, `.name`…) are known before.
 * A provider's outputs (`providers.<name>.outputs`) are known once the command prepared it: kept
 * as written like action outputs until then, but no dependency. Its configuration
 * (`providers.<name>.config`) is known when the configuration is read.
 */
function readsActionRuntime(lookup: Lookup): boolean {
  const path = actionsPath(lookup);
  if (path) return path[2] !== 'var' && !isActionField(path[2]);
  if (lookup.root !== 'providers') return false;
  const field = lookup.path[1];
  return field === 'outputs' || (field !== undefined && typeof field !== 'string');
}

/**
 * Action references (`build.api`) used in `${actions.<kind>.<name>.outputs.<key>}` and
 * `.version` expressions: the actions to run first.
 */
export function findActionReferences(value: unknown, test?: BranchTest): string[] {
  return actionReferencesOf(value, test).refs;
}

/**
 * The action references of a value's templates, and whether they read any action's outputs
 * (`actions.build[var.app]…` too, whose action is known only when resolved): one walk. `refs`
 * read outputs or versions; `fieldRefs` only what the configuration says of an action
 * (`actions.build.api.buildPath`), which Garden makes a dependency too, to resolve (not run) first.
 * With `test`, those in a branch the environment does not use are left out, as Garden does.
 */
export function actionReferencesOf(value: unknown, test?: BranchTest): TemplateReferences {
  const refs = new Set<string>();
  const fieldRefs = new Set<string>();
  let readsOutputs = false;
  eachValueLookup(
    value,
    (lookup) => {
      const runtime = readsActionRuntime(lookup);
      if (runtime) readsOutputs = true;
      const into = runtime ? refs : readsActionField(lookup) ? fieldRefs : undefined;
      const ref = into && staticActionReference(lookup);
      if (ref !== undefined) into!.add(ref);
    },
    test,
  );
  return { refs: [...refs], fieldRefs: [...fieldRefs].filter((ref) => !refs.has(ref)), readsOutputs };
}

/** Variables (`port`) read by `${var.<name>}` (or `${variables.<name>}`) expressions, added to `into`. */
export function findVariableReferences(value: unknown, into: Set<string>): Set<string> {
  eachValueLookup(value, (lookup) => {
    const [name] = lookup.path;
    if ((lookup.root === 'var' || lookup.root === 'variables') && typeof name === 'string') into.add(name);
  });
  return into;
}

/** Whether a value's templates read `${secrets.…}`: a command loads secrets only then. */
export function readsSecrets(value: unknown): boolean {
  let reads = false;
  eachValueLookup(value, (lookup) => {
    if (lookup.root === 'secrets') reads = true;
  });
  return reads;
}

/** A template reference to an action, found when loading (for the graph and for checks). */
export interface TemplateActionReference {
  ref: string;
  path: ConfigPath;
  /** What it reads of the action (`outputs`, `version`, `var`, `buildPath`…), when written out. */
  field?: string;
  /** The lookup as written (`modules.api.outputs.image`), for messages. */
  text: string;
  /**
   * It is in a branch whose condition is known only in an environment (`?:`, `$if`, `${if}`,
   * `&&`/`||`): an unknown action there is an error only where the branch is used.
   */
  branched?: true;
  /**
   * Why it reads nothing an action gives (`outputs.bucket.name`: outputs are one level), when it
   * does not: the cross-check reports it, unless the action is one tend does not load (a Garden
   * module type it does not convert, itself the error).
   */
  problem?: string;
}

const allRoots: readonly string[] = [...templateRoots, ...gardenRoots];

/**
 * Checks the syntax of every expression in a value without resolving: malformed expressions,
 * unknown roots, malformed action output references. Used when loading.
 */
export function checkTemplateSyntax(
  value: unknown,
  basePath: ConfigPath,
  locate: (path: ConfigPath) => SourceLocation,
  options: {
    /** Roots known beside tend's and Garden's (a rendered action's `inputs`, `parent`, `template`). */
    extraRoots?: readonly string[];
    /** The project's template syntax (default: tend's own). */
    syntax?: SyntaxOptions;
    /** A malformed reference to a named action is returned with its `problem`, not among `problems`. */
    deferActionProblems?: boolean;
  } = {},
): { problems: ConfigProblem[]; actionReferences: TemplateActionReference[] } {
  const { extraRoots = [], syntax, deferActionProblems = false } = options;
  const roots = extraRoots.length > 0 ? [...allRoots, ...extraRoots] : allRoots;
  const problems: ConfigProblem[] = [];
  const actionReferences: TemplateActionReference[] = [];
  const fail = (message: string, relative: ConfigPath) =>
    problems.push({ code: 'TEND_TEMPLATE', message, location: locate([...basePath, ...relative]) });
  // Garden 0.12 and 0.13 (every `${…}?` optional) read a key that is not there, an unknown
  // context included, in an optional expression as no value (`${deploy.db}?`).
  const optionalAnywhere = syntax?.optionalSuffix === 'every-expression';
  const checkLookup = (lookup: Lookup, relative: ConfigPath, optional: boolean, branched: boolean) => {
    if (!roots.includes(lookup.root)) {
      if (optional && optionalAnywhere) return;
      fail(
        `unknown template key "${lookup.text}"; available: ${[...templateRoots, ...extraRoots].join(', ')}\n` +
          `  (and Garden's: ${gardenRoots.join(', ')}; see docs/templates.md)`,
        relative,
      );
      return;
    }
    const path = actionsPath(lookup);
    if (!path) return;
    const ref = staticActionReference(lookup);
    const reference = (): TemplateActionReference => ({
      ref: ref!,
      path: [...basePath, ...relative],
      ...(typeof path[2] === 'string' ? { field: path[2] } : {}),
      text: lookup.text,
      ...(branched ? { branched: true as const } : {}),
    });
    if (lookup.path.every((s) => typeof s === 'string')) {
      const problem = actionLookupProblem(lookup.root, lookup.path as string[], lookup.text);
      if (!problem) actionReferences.push(reference());
      else if (deferActionProblems && ref !== undefined) actionReferences.push({ ...reference(), problem });
      else fail(problem, relative);
    } else if (typeof path[0] === 'string' && !actionKindsLower.includes(path[0])) {
      fail(
        `unknown action kind "${path[0]}" in "${lookup.text}"; expected one of: ${actionKindsLower.join(', ')}`,
        relative,
      );
    } else if (ref !== undefined) {
      actionReferences.push(reference());
    }
  };
  eachTemplateString(value, (text, relative, branchedString) => {
    let template: Template;
    try {
      template = templateOf(text, syntax);
    } catch (error) {
      fail((error as Error).message, relative);
      return;
    }
    eachLookup(template, (lookup, optional, branched) =>
      checkLookup(lookup, relative, optional, branchedString || branched === true),
    );
  });
  return { problems, actionReferences };
}

/** Whether a value's templates read action outputs. */
function readsActionOutputs(value: unknown): boolean {
  let reads = false;
  eachValueLookup(value, (lookup) => {
    if (readsActionRuntime(lookup)) reads = true;
  });
  return reads;
}

/** Which parts of a template read action outputs, found once per template. */
const keptPartsOf = new WeakMap<Template, boolean[]>();
function keptParts(template: Template): boolean[] {
  let kept = keptPartsOf.get(template);
  if (!kept) {
    kept = template.parts.map((part) => {
      let reads = false;
      if (part.type !== 'text') {
        eachLookup({ parts: [part] }, (lookup) => {
          if (readsActionRuntime(lookup)) reads = true;
        });
      }
      return reads;
    });
    keptPartsOf.set(template, kept);
  }
  return kept;
}

/** `${` as `$${`, deeply: a value left partly resolved is resolved again later. */
function escapeTemplates(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('${', () => '$${');
  if (Array.isArray(value)) return value.map(escapeTemplates);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeTemplates(v)]));
  }
  return value;
}

/** A string's value; errors are plain (TemplateSyntaxError, TemplateEvaluationError, …). */
function evaluateString(text: string, scope: Scope, syntax: SyntaxOptions | undefined): unknown {
  if (!text.includes('${')) return text;
  return templateValue(templateOf(text, syntax), scope);
}

/** A template's value (undefined: none, an optional `${…}?` whose key is not there). */
function templateValue(template: Template, scope: Scope): unknown {
  const value = evaluateTemplate(template, scope);
  if (value instanceof Missing) {
    if (value.later) throw new NotYetKnownError(value.reason);
    const error = new TemplateEvaluationError(value.reason);
    if (value.undeclared !== undefined) error.undeclared = value.undeclared;
    throw error;
  }
  // A copy: a variable's list or mapping is not to be changed through the spec that holds it.
  return value !== null && typeof value === 'object' ? structuredClone(value) : value;
}

/** A string's value in keep-action-outputs mode: those expressions stay as written, the rest is escaped. */
function evaluateKeepingActionOutputs(
  text: string,
  scope: Scope,
  syntax: SyntaxOptions | undefined,
  onDeferred: () => void,
): unknown {
  if (!text.includes('${')) return text;
  const template = templateOf(text, syntax);
  const kept = keptParts(template);
  if (!kept.includes(true)) {
    // Nothing kept, the value is final: a literal `${` (written `$${`) stays one. A variable that
    // reads an action's outputs is resolved when the action runs, as Garden does.
    try {
      return templateValue(template, scope);
    } catch (error) {
      if (!(error instanceof NotYetKnownError)) throw error;
      onDeferred();
    }
  }
  if (template.parts.length === 1) return text;
  return template.parts
    .map((part, i) => {
      if (part.type === 'text') return escapeTemplates(part.text) as string;
      if (kept[i]) return part.source;
      try {
        const value = templateValue({ parts: [part] }, scope);
        return value === undefined ? '' : (escapeTemplates(stringify(value)) as string);
      } catch (error) {
        if (!(error instanceof NotYetKnownError)) throw error;
        onDeferred();
        return part.source;
      }
    })
    .join('');
}

function holdsTemplate(value: unknown): boolean {
  return containsTemplate(value);
}

/** How a variable's value is read: its own templates resolved, in the scope it is read in. */
function variableResolver(syntax: SyntaxOptions | undefined): (value: unknown, scope: Scope) => unknown {
  const plain: ValueResolver = { string: (text, _path, scope) => evaluateString(text, scope, syntax) };
  return (value, scope) => resolveValue(value, [], scope, plain);
}

/** The expression language's scope for a context: what a templated file's text is resolved in. */
export function templateScope(context: TemplateContext): Scope {
  return scopeOf(context, variableResolver(context.templateSyntax), holdsTemplate);
}

/** A thrown template error as a TendError at the value's location. */
function asTendError(error: unknown, where: () => SourceLocation): unknown {
  if (
    error instanceof TemplateSyntaxError ||
    error instanceof TemplateEvaluationError ||
    error instanceof TemplateFunctionError
  ) {
    const undeclared = error instanceof TemplateEvaluationError ? error.undeclared : undefined;
    return new TendError('TEND_TEMPLATE', error.message, {
      location: where(),
      ...(undeclared !== undefined ? { detail: { undeclaredVariable: undeclared } } : {}),
    });
  }
  return error;
}

/**
 * Resolves every template expression and structural operator in a value (deeply), returning a
 * new value.
 * @param locate the position of a string inside `value`, for errors
 */
export function resolveTemplates<T>(
  value: T,
  context: TemplateContext,
  locate: (path: ConfigPath) => SourceLocation,
  options: ResolveOptions = {},
): T {
  return resolveInScope(value, templateScope(context), locate, context.templateSyntax, options);
}

/**
 * Resolves a value with only a Garden template's roots (`inputs`, `parent`, `template`): the keys
 * of a templated config that tend needs when it reads the configuration (its name, dependencies…).
 */
export function resolveRenderedKeys<T>(
  value: T,
  roots: Required<Pick<TemplateContext, 'inputs' | 'parent' | 'template'>> &
    Pick<TemplateContext, 'locateInput' | 'item'>,
  locate: (path: ConfigPath) => SourceLocation,
  /** The project's template syntax (default: tend's own). */
  syntax?: SyntaxOptions,
): T {
  const inputs = new InputsNode(roots.inputs, variableResolver(syntax), holdsTemplate, roots.locateInput);
  const scope: Scope = {
    roots: {
      inputs,
      parent: new RecordNode(roots.parent),
      template: new RecordNode(roots.template),
      ...(roots.item ? { item: roots.item } : {}),
    },
  };
  inputs.scope = scope;
  return resolveInScope(value, scope, locate, syntax, {});
}

function resolveInScope<T>(
  value: T,
  scope: Scope,
  locate: (path: ConfigPath) => SourceLocation,
  syntax: SyntaxOptions | undefined,
  options: ResolveOptions,
): T {
  const onDeferred = options.onDeferred ?? (() => undefined);
  const evaluate = options.keepActionOutputs
    ? (text: string, stringScope: Scope) =>
        evaluateKeepingActionOutputs(text, stringScope, syntax, onDeferred)
    : (text: string, stringScope: Scope) => evaluateString(text, stringScope, syntax);
  const resolver: ValueResolver = {
    string(text, path, stringScope) {
      try {
        return evaluate(text, stringScope);
      } catch (error) {
        throw asTendError(error, () => locate(path));
      }
    },
    ...(options.keepActionOutputs ? { deferred: readsActionOutputs } : {}),
  };
  try {
    return resolveValue(value, [], scope, resolver) as T;
  } catch (error) {
    if (error instanceof StructureError) throw asTendError(error, () => locate(error.path));
    throw error;
  }
}

/**
 * `actions.<kind>.<name>` of a template context: outputs and versions keyed by reference
 * (`build.api`).
 */
export function actionOutputsContext(
  outputsByRef: Record<string, Record<string, string>>,
  versionsByRef: Record<string, string> = {},
): NonNullable<TemplateContext['actions']> {
  const actions: NonNullable<TemplateContext['actions']> = {};
  const entry = (ref: string) => {
    const [kind, name] = ref.split('.') as [string, string];
    return ((actions[kind] ??= {})[name] ??= {});
  };
  for (const [ref, outputs] of Object.entries(outputsByRef)) entry(ref).outputs = outputs;
  for (const [ref, version] of Object.entries(versionsByRef)) entry(ref).version = version;
  return actions;
}
