/**
 * An action's `dependencies:` written as a template (`dependencies: ${var.deps}`), or holding one
 * (`- deploy.${var.db}`): kept when the configuration is read (their syntax checked), and
 * resolved once the environment is chosen (resolve-templates.ts), with the action's own context —
 * the project's, the environment's and the action's variables, `this`, a rendered action's
 * `inputs` —, as Garden resolves them. The references they give are checked as written ones are.
 */
import { TendError } from '../errors.js';
import { actionContext } from './action-variables.js';
import { dependencyRef } from './garden/translation.js';
import type { ConfigProblem } from './diagnostics.js';
import type { ActionConfig, ConfigPath, DependencyTemplate, Locate } from './project.js';
import { actionRefPattern } from './schema.js';
import { checkTemplateSyntax, resolveTemplates, type TemplateContext } from './template.js';
import type { SyntaxOptions } from '../expressions/syntax.js';

/**
 * A converted Garden 0.12 module's templated dependency: the names it gives are modules' services
 * and tasks, or their builds, made references by `ref` (as written names are); `at` is where the
 * module has it. Made by the module conversion only (src/config/garden/modules.ts), never read
 * from a file.
 */
export class ModuleNamesTemplate {
  constructor(
    readonly template: string,
    readonly ref: (name: string) => string,
    readonly at: ConfigPath,
  ) {}
}

/** A written reference that passes the schema, standing for a template while the document is checked. */
const placeholder = 'build.templated-dependency';

/**
 * `dependencies:` split: the value to check against the schema (each template replaced by a
 * valid reference, so a written one's problem keeps its place), the written references, and the
 * templates.
 */
export function splitDependencies(dependencies: unknown): {
  checked: unknown;
  written: string[];
  templates: DependencyTemplate[];
} {
  const templateOf = (value: unknown, at: ConfigPath): DependencyTemplate | undefined => {
    if (value instanceof ModuleNamesTemplate) {
      return { template: value.template, at: value.at, moduleName: value.ref };
    }
    return typeof value === 'string' && value.includes('${') ? { template: value, at } : undefined;
  };
  const whole = templateOf(dependencies, ['dependencies']);
  if (whole) return { checked: [], written: [], templates: [whole] };
  if (!Array.isArray(dependencies)) return { checked: dependencies, written: [], templates: [] };
  const templates: DependencyTemplate[] = [];
  const written = new Set<string>();
  const checked = dependencies.map((entry, i) => {
    const template = templateOf(entry, ['dependencies', i]);
    if (!template) {
      written.add(entry as string);
      return entry;
    }
    templates.push(template);
    return placeholder;
  });
  return { checked: templates.length > 0 ? checked : dependencies, written: [...written], templates };
}

/** The syntax problems of the templates, at their lines. */
export function dependencyTemplateProblems(
  templates: readonly DependencyTemplate[],
  locate: Locate,
  options: { syntax: SyntaxOptions; extraRoots: readonly string[] },
): ConfigProblem[] {
  return templates.flatMap((t) => checkTemplateSyntax(t.template, t.at, (p) => locate(p), options).problems);
}

/**
 * The action with its templated dependencies resolved in the context of the chosen environment
 * and added to the written ones; throws the first problem at its line: a value that is not a
 * reference (or a list of them), an unknown action, the action itself.
 */
export function withEnvironmentDependencies(
  action: ActionConfig,
  context: TemplateContext,
  known: ReadonlySet<string>,
): ActionConfig {
  const { dependencyTemplates, ...rest } = action;
  if (!dependencyTemplates) return action;
  const own = actionContext(action, context);
  const dependencies = new Set(action.dependencies);
  for (const t of dependencyTemplates) {
    const at = () => action.locate(t.at);
    const value = resolveTemplates(t.template, own, at);
    for (const ref of referencesOf(value, t, at)) {
      const fail = (why: string): never => {
        throw new TendError('TEND_CONFIG_INVALID', `dependency "${t.template}" of ${action.ref} ${why}`, {
          location: at(),
        });
      };
      if (ref === action.ref) fail(`resolves to ${ref}: an action cannot depend on itself`);
      if (!known.has(ref)) fail(`resolves to ${ref}, which is not an action of this project`);
      dependencies.add(ref);
    }
  }
  return { ...rest, dependencies: [...dependencies] };
}

/** A resolved value as JSON, with the numbers JSON has no word for (YAML's .inf) named, not null. */
export const valueText = (value: unknown) =>
  JSON.stringify(value, (_key, item: unknown) =>
    typeof item === 'number' && !Number.isFinite(item) ? String(item) : item,
  ) ?? String(value);

/** The references a resolved template gives: none for null (an optional `${…}?` not there). */
function referencesOf(value: unknown, t: DependencyTemplate, at: () => ReturnType<Locate>): string[] {
  const items = value === null || value === undefined ? [] : Array.isArray(value) ? value : [value];
  return items.map((item) => {
    const ref = referenceOf(item, t);
    if (ref === undefined || !new RegExp(actionRefPattern).test(ref)) {
      const expected = t.moduleName
        ? 'a module name or a list of them'
        : 'an action reference (deploy.db) or a list of them';
      throw new TendError(
        'TEND_CONFIG_INVALID',
        `dependency "${t.template}" resolves to ${valueText(value).slice(0, 200)}; expected ${expected}`,
        { location: at() },
      );
    }
    return ref;
  });
}

function referenceOf(item: unknown, t: DependencyTemplate): string | undefined {
  if (t.moduleName) return typeof item === 'string' ? t.moduleName(item) : undefined;
  const ref = dependencyRef(item);
  return typeof ref === 'string' ? ref : undefined;
}
