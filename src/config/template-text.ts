/**
 * Templated files (a kubernetes Deploy's `manifestTemplates`), resolved as Garden resolves them:
 * the file's whole text is one template string, resolved before it is parsed as YAML. Each
 * expression's value is written into the text where it stands (a list as its items joined with
 * `,`, a mapping as JSON: docs/templates.md), so `env: ${jsonEncode(var.env)}` gives the list as
 * YAML reads JSON; a file that is one expression alone must give text. `$${` is a literal `${`.
 *
 * A problem names the file, the line, the object it is in (`Deployment api`, when the YAML
 * document says) and the way out the caller gives (the plugin: apply the file as written).
 */
import { parseDocument } from 'yaml';
import { TendError } from '../errors.js';
import type { SourceLocation } from '../errors.js';
import type { ConfigProblem } from './diagnostics.js';
import {
  evaluateTemplate,
  Missing,
  NotYetKnownError,
  stringify,
  TemplateEvaluationError,
} from '../expressions/evaluate.js';
import type { Scope } from '../expressions/evaluate.js';
import { TemplateFunctionError } from '../expressions/functions.js';
import { eachLookup } from '../expressions/lookups.js';
import { parseTemplateString, partOffset, TemplateSyntaxError } from '../expressions/syntax.js';
import type { SyntaxOptions, Template, TemplatePart } from '../expressions/syntax.js';

/** An expression or a `${if}` block: a part that is not literal text. */
type ExpressionPart = Exclude<TemplatePart, { type: 'text' }>;
import {
  actionLookupProblem,
  actionsPathOf,
  isActionField,
  refsOfKind,
  unknownActionReference,
} from './action-references.js';
import type { TemplateContext } from './template-context.js';
import { templateScope } from './template.js';
import { keepsUnknownKeysInLegacyFiles } from './template-syntax.js';

export interface TemplateTextOptions {
  /** The file, relative to the project root, for messages. */
  file: string;
  /** How to have the file read as written, appended to every problem ("list it under `manifestFiles`"). */
  hint: string;
  /**
   * For `tend validate`: the action whose file it is and what it depends on. The file can read
   * those actions' outputs only (they run first); reading another's is a problem.
   */
  dependencies?: { of: string; refs: ReadonlySet<string> };
  /**
   * The file is listed under Garden's older key (`files`): in a Garden v0/v1 project an expression
   * naming a key that is not there is kept as written (template-syntax.ts), as Garden 0.13 keeps it.
   */
  legacy?: boolean;
}

/** A templated text's problem, at an offset of the text. */
class TextProblem extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** An expression naming a key that is not there, in a file that keeps it as written (`legacy`). */
class KeptAsWritten extends TextProblem {}

/** An expression reading a variable nothing declares: one to pass with `--var` when the action runs. */
class UndeclaredVariable extends TextProblem {
  constructor(
    message: string,
    offset: number,
    readonly variable: string,
  ) {
    super(message, offset);
  }
}

const keptNote =
  'kept as written: Garden 0.13 keeps what names no key in the `files` of an apiVersion v0/v1 project';

/** A file's text with its template expressions resolved. Throws TEND_TEMPLATE at the file's line. */
export function resolveTemplateText(
  text: string,
  context: TemplateContext,
  options: TemplateTextOptions,
): string {
  if (!text.includes('${')) return text;
  try {
    return resolveParts(
      parse(text, context.templateSyntax),
      templateScope(context),
      true,
      keeps(context, options),
    );
  } catch (error) {
    if (!(error instanceof TextProblem)) throw error;
    const problem = located(text, error, options);
    throw new TendError('TEND_TEMPLATE', problem.message, { location: problem.location });
  }
}

/** A templated file's read of a variable nothing declares, at its line. */
export interface UndeclaredRead {
  variable: string;
  location: SourceLocation;
}

/**
 * What `tend validate` finds in a templated file before anything runs: syntax, keys that name no
 * template context, and the values of every expression that does not read an action's outputs
 * or a secret (those are known only when the action runs). A variable nothing declares is not a
 * problem but `undeclared`: as for the action's spec, one passed with `--var` when it runs.
 */
export function checkTemplateText(
  text: string,
  context: TemplateContext,
  options: TemplateTextOptions,
): { problems: ConfigProblem[]; kept: ConfigProblem[]; undeclared: UndeclaredRead[] } {
  const kept: ConfigProblem[] = [];
  const undeclared: UndeclaredRead[] = [];
  if (!text.includes('${')) return { problems: [], kept, undeclared };
  const { template, problems } = parseReportingAll(text, context.templateSyntax, options);
  const scope = templateScope(context);
  const keep = keeps(context, options);
  for (const part of template.parts) {
    if (part.type === 'text') continue;
    const waits = readsAtRuntime(part, context, options.dependencies);
    if (waits.problem) {
      problems.push(located(text, new TextProblem(waits.problem, offsetOf(part)), options));
      continue;
    }
    if (waits.runtime) continue;
    try {
      if (template.parts.length === 1) resolveParts(template, scope);
      else evaluatePart(part, scope, false, keep);
    } catch (error) {
      // A variable that reads an action's outputs: known when the action runs.
      if (error instanceof NotYetKnownError) continue;
      if (!(error instanceof TextProblem)) throw error;
      if (error instanceof UndeclaredVariable) {
        undeclared.push({ variable: error.variable, location: located(text, error, options).location });
      } else (error instanceof KeptAsWritten ? kept : problems).push(located(text, error, options));
    }
  }
  return { problems, kept, undeclared };
}

function keeps(context: TemplateContext, options: TemplateTextOptions): boolean {
  return options.legacy === true && keepsUnknownKeysInLegacyFiles(context.templateSyntax);
}

/** Syntax errors are reported at most this many per file (each ends one parse). */
const syntaxErrorLimit = 20;

/**
 * The template of a text, and its syntax errors: each `${` at fault is read as a literal (as if
 * written `$${`) and the text parsed again, so that one mistake does not hide the next.
 */
function parseReportingAll(
  text: string,
  syntax: SyntaxOptions | undefined,
  options: TemplateTextOptions,
): { template: Template; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  // Where a `$` was added, in the current text's offsets.
  let added: number[] = [];
  let current = text;
  for (;;) {
    try {
      return { template: parse(current, syntax), problems };
    } catch (error) {
      if (!(error instanceof TextProblem)) throw error;
      const at = error.offset;
      const original = at - added.filter((offset) => offset < at).length;
      problems.push(located(text, new TextProblem(error.message, original), options));
      if (problems.length >= syntaxErrorLimit || !current.startsWith('${', at)) {
        return { template: { parts: [] }, problems };
      }
      added = [...added.map((offset) => (offset >= at ? offset + 1 : offset)), at];
      current = `${current.slice(0, at)}$${current.slice(at)}`;
    }
  }
}

function parse(text: string, syntax: SyntaxOptions | undefined): Template {
  try {
    return parseTemplateString(text, syntax);
  } catch (error) {
    if (error instanceof TemplateSyntaxError) throw new TextProblem(error.message, error.offset ?? 0);
    throw error;
  }
}

function offsetOf(part: TemplatePart): number {
  return partOffset(part) ?? 0;
}

/**
 * The text of the parts, each expression's value written where it stands. `final`: when the action
 * runs, what is not known then (another action's outputs) is a problem of its line too.
 */
function resolveParts(template: Template, scope: Scope, final = false, keep = false): string {
  const [only] = template.parts;
  if (template.parts.length === 1 && only && only.type !== 'text') {
    const value = evaluatePart(only, scope, final);
    if (typeof value !== 'string') {
      throw new TextProblem(
        `the file is one expression, "${only.source}", which gives ${describe(value)}; a templated file must give text`,
        offsetOf(only),
      );
    }
    return value;
  }
  let out = '';
  for (const part of template.parts) {
    if (part.type === 'text') out += part.text;
    else {
      try {
        const value = evaluatePart(part, scope, final, keep);
        if (value !== undefined) out += stringify(value);
      } catch (error) {
        if (!(error instanceof KeptAsWritten)) throw error;
        out += part.source;
      }
    }
  }
  return out;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'no value';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
}

/**
 * One expression's (or `${if}` block's) value; its errors as a TextProblem at its offset. What is
 * known only later is a NotYetKnownError, unless `final`; a key that is not there, with `keep`, a
 * KeptAsWritten.
 */
function evaluatePart(part: ExpressionPart, scope: Scope, final = false, keep = false): unknown {
  let value: unknown;
  try {
    value = evaluateTemplate({ parts: [part] }, scope);
  } catch (error) {
    if (error instanceof NotYetKnownError && !final) throw error;
    if (
      error instanceof TemplateEvaluationError ||
      error instanceof TemplateFunctionError ||
      error instanceof TemplateSyntaxError
    ) {
      const undeclared = error instanceof TemplateEvaluationError ? error.undeclared : undefined;
      throw problemOf(part, error.message, final ? undefined : undeclared);
    }
    throw error;
  }
  if (value instanceof Missing && value.later && !final) throw new NotYetKnownError(value.reason);
  if (value instanceof Missing && keep && !value.later) {
    throw new KeptAsWritten(`"${part.source}" ${keptNote} (${value.reason})`, offsetOf(part));
  }
  if (value instanceof Missing) throw problemOf(part, value.reason, final ? undefined : value.undeclared);
  return value;
}

/** A part's problem at its offset; reading `undeclared`, a variable to pass when the action runs. */
function problemOf(part: ExpressionPart, reason: string, undeclared: string | undefined): TextProblem {
  const message = `"${part.source}": ${reason}`;
  return undeclared !== undefined
    ? new UndeclaredVariable(message, offsetOf(part), undeclared)
    : new TextProblem(message, offsetOf(part));
}

/**
 * Whether a part reads what is known only when the action runs (an action's outputs or version, a
 * secret), and what is wrong with an action reference it makes (`actions.build.api.outputz`,
 * `modules.api.path`). What the configuration says of an action (`actions.build.api.buildPath`)
 * and its variables are known before: resolved like the rest.
 */
function readsAtRuntime(
  part: ExpressionPart,
  context: TemplateContext,
  dependencies: TemplateTextOptions['dependencies'],
): { runtime: boolean; problem?: string } {
  const { actionFields: actions, buildlessModules } = context;
  let runtime = false;
  let problem: string | undefined;
  eachLookup({ parts: [part] }, (lookup) => {
    if (lookup.root === 'secrets') runtime = true;
    // A buildless module's outputs are known now (template-context.ts reads them).
    if (lookup.root === 'modules' && buildlessModules?.(String(lookup.path[0])) !== undefined) return;
    const path = actionsPathOf(lookup.root, lookup.path);
    if (!path || path[2] === 'var' || isActionField(path[2])) return;
    runtime = true;
    if (lookup.path.every((segment) => typeof segment === 'string')) {
      problem ??= actionLookupProblem(lookup.root, lookup.path as string[], lookup.text);
      const ref = `${String(path[0])}.${String(path[1])}`;
      if (actions && !actions.has(ref))
        problem ??= unknownActionReference(ref, lookup.text, refsOfKind(actions.keys(), ref));
      if (dependencies && !dependencies.refs.has(ref))
        problem ??= notADependency(dependencies.of, ref, lookup.root);
    }
  });
  return problem !== undefined ? { runtime, problem: `"${part.source}": ${problem}` } : { runtime };
}

/** A file reading the outputs of an action its own does not depend on. */
function notADependency(of: string, ref: string, root: string): string {
  const add =
    root === 'modules'
      ? `add ${ref.slice(ref.indexOf('.') + 1)} to the module's build.dependencies`
      : `add ${ref} to its dependencies`;
  return `${of} does not depend on ${ref}, so its outputs are not known when ${of} runs; ${add}`;
}

/** A problem at its line and column, with the object it is in and the way out. */
function located(text: string, problem: TextProblem, options: TemplateTextOptions): ConfigProblem {
  const before = text.slice(0, problem.offset);
  const line = before.split('\n').length;
  const location: SourceLocation = {
    file: options.file,
    line,
    column: problem.offset - before.lastIndexOf('\n'),
  };
  const object = objectAt(text, problem.offset);
  return {
    code: 'TEND_TEMPLATE',
    message: `${object ? `${object}: ` : ''}${problem.message}\n  (${options.hint})`,
    location,
  };
}

/** `Deployment api`: the kind and name of the YAML document around an offset, when it has them. */
function objectAt(text: string, offset: number): string | undefined {
  const separator = /^---.*$/gm;
  let start = 0;
  let end = text.length;
  for (const match of text.matchAll(separator)) {
    if (match.index < offset) start = match.index + match[0].length;
    else {
      end = match.index;
      break;
    }
  }
  const document = parseDocument(text.slice(start, end));
  if (document.errors.length > 0) return undefined;
  const value = document.toJS() as { kind?: unknown; metadata?: { name?: unknown } } | null;
  if (!value || typeof value !== 'object' || typeof value.kind !== 'string') return undefined;
  const name = value.metadata?.name;
  if (typeof name !== 'string') return value.kind;
  // A templated name is not known yet (it may be what is wrong): named as written, said so.
  return name.includes('${') ? `${value.kind} "${name}" (its name as written)` : `${value.kind} ${name}`;
}
