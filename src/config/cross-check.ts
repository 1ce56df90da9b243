/**
 * The last part of the configuration pipeline's reading of documents (read-config.ts): what is
 * checked across documents once all are read — one action per name and environment, dependencies
 * and template references that name actions, environments that exist, providers listed.
 */
import type { SourceLocation } from '../errors.js';
import { copiesMayCoexist, environmentsProblems } from './action-variables.js';
import { buildReferenceProblems } from './build-keys.js';
import type { ConfigProblem } from './diagnostics.js';
import { isGardenFile } from './files.js';
import {
  describeRenderer,
  formatLocation,
  inRenderedProblems,
  type ActionConfig,
  type ProjectConfig,
  type ProviderEntry,
} from './project.js';
import type { PendingAction } from './read-action.js';
import { everyAction } from './garden/translation.js';
import type { TemplateActionReference } from './template.js';
import { unknownActionReference } from './action-references.js';

/** Checks across documents: duplicate actions, dependencies, template references, providers. */
export function crossCheck(
  actions: readonly PendingAction[],
  project: ProjectConfig | undefined,
  /** Garden actions tend cannot run (each a problem already): no second error where they are used. */
  unloaded: ReadonlySet<string>,
  /** Every problem of the load, which this adds to. */
  problems: ConfigProblem[],
): void {
  const problem = (code: ConfigProblem['code'], message: string, location: SourceLocation) =>
    problems.push({ code, message, location });
  const byRef = new Map<string, ActionConfig>();
  const copies = new Map<string, ActionConfig[]>();
  for (const { action } of actions) {
    const earlier = copies.get(action.ref) ?? [];
    copies.set(action.ref, [...earlier, action]);
    // One name per environment, as in Garden (selectActionCopies keeps the one in use).
    if (earlier.length === 0) byRef.set(action.ref, action);
    else if (!earlier.every((other) => copiesMayCoexist(other, action))) {
      problem('TEND_CONFIG_DUPLICATE_ACTION', duplicateMessage(earlier[0]!, action), action.locate(['name']));
    }
  }
  const defined = (ref: string) => byRef.has(ref) || unloaded.has(ref) || unloaded.has(everyAction);
  const refsOfKind = (kind: string) => {
    const refs = [...byRef.keys()].filter((r) => r.startsWith(`${kind}.`));
    return refs.length === 0 ? '(none)' : `${refs.slice(0, 20).join(', ')}${refs.length > 20 ? ', …' : ''}`;
  };
  const configured = new Set(project?.providers.map((p) => p.name));
  // With a provider tend refuses where it is used, whether an action lacks its provider depends on
  // the environment chosen: Configuration says so there (providerlessActions).
  const refusedSomewhere = project?.providers.some(isRefusedProvider);
  const saidOfModules = new Set<string>();
  for (const { action, plugin, templateReferences } of actions) {
    const before = problems.length;
    action.dependencies.forEach((dependency, i) => {
      const where = () => action.locate(['dependencies', i]);
      if (dependency === action.ref) {
        problem('TEND_CONFIG_INVALID', `${action.ref} cannot depend on itself`, where());
      } else if (!defined(dependency)) {
        const kind = dependency.slice(0, dependency.indexOf('.'));
        problem(
          'TEND_CONFIG_INVALID',
          `unknown dependency "${dependency}" of ${action.ref}; ${kind} actions: ${refsOfKind(kind)}`,
          where(),
        );
      }
    });
    problems.push(...buildReferenceProblems(action, defined, () => refsOfKind('build')));
    for (const reference of templateReferences) {
      if (unloaded.has(reference.ref) || unloaded.has(everyAction)) continue;
      if (reference.problem !== undefined) {
        problem('TEND_TEMPLATE', reference.problem, action.locate(reference.path));
      } else if (reference.ref === action.ref) {
        problem('TEND_TEMPLATE', selfReference(action.ref, reference), action.locate(reference.path));
      } else if (!defined(reference.ref) && !reference.branched) {
        // One in a branch is an error only in an environment that uses it (environment-references.ts).
        problem(
          'TEND_TEMPLATE',
          unknownActionReference(
            reference.ref,
            reference.text,
            refsOfKind(reference.ref.slice(0, reference.ref.indexOf('.'))),
          ),
          action.locate(reference.path),
        );
      }
    }
    // Garden reads an action's `environments:` as a filter only: a name it does not know is no error there.
    if (project && !isGardenFile(action.location.file)) {
      problems.push(...environmentsProblems(action, new Set(project.environments.map((e) => e.name))));
    }
    if (
      project &&
      plugin &&
      !configured.has(plugin) &&
      !refusedSomewhere &&
      firstOfModule(saidOfModules, action, plugin)
    ) {
      problems.push(unlistedProvider(action, plugin, project.file));
    }
    // Its lines are the template's, shared by each rendering: which one it is is said.
    inRenderedProblems(problems, before, action.rendered);
  }
}

/**
 * A Garden provider tend cannot run (ephemeral-kubernetes, which Garden builds on kubernetes),
 * limited to some environments: refused in those, where the types it would provide are no second error.
 */
export function isRefusedProvider(entry: ProviderEntry): boolean {
  return entry.problems?.some((found) => found.code === 'TEND_CONFIG_UNSUPPORTED') ?? false;
}

/**
 * What an error of a missing provider is about: the action's type as written, or the 0.12 module
 * it was converted from, whose `type:` its actions share (and whose error is said once: `firstOfModule`).
 */
export function providerUser(action: ActionConfig): string {
  const type = action.writtenType ?? action.type;
  return action.fromModule === undefined
    ? `action type "${type}"`
    : `module ${action.fromModule} (type "${type}")`;
}

/**
 * False for the second and later actions of one 0.12 module lacking one provider: the module's
 * error is said once (`seen` holds those said), not once per action it becomes.
 */
export function firstOfModule(seen: Set<string>, action: ActionConfig, plugin: string): boolean {
  if (action.fromModule === undefined) return true;
  const key = `${action.fromModule}\0${plugin}`;
  if (seen.has(key)) return false;
  seen.add(key);
  return true;
}

/** An action whose type's provider no entry of the project lists: the error at its type, as written. */
export function unlistedProvider(action: ActionConfig, plugin: string, projectFile: string): ConfigProblem {
  return {
    code: 'TEND_PROVIDER_NOT_FOUND',
    message:
      `${providerUser(action)} comes from provider "${plugin}", which is not listed under providers in ${projectFile}` +
      (plugin === 'kubernetes'
        ? '; list local-kubernetes (a cluster on this machine) or kubernetes (with its context:) there'
        : ''),
    location: action.locate(['type']),
  };
}

/** An action's template reading itself: Garden refuses it too; `this` has what it may read of itself. */
function selfReference(ref: string, reference: TemplateActionReference): string {
  const { field } = reference;
  if (field === undefined || field === 'outputs' || field === 'version')
    return `${ref} cannot use its own outputs`;
  const own = field === 'var' ? '${var.<name>}' : `\${this.${field}}`;
  return `${ref} cannot reference itself ("${reference.text}"); write ${own}`;
}

/**
 * Why `second` is a duplicate of `first`: where the first is defined, or, for configs a template
 * rendered (both at the template's line), the RenderTemplates that render it.
 */
function duplicateMessage(first: ActionConfig, second: ActionConfig): string {
  const at = (action: ActionConfig) => formatLocation(action.locate(['name']));
  const [one, two] = [first.rendered, second.rendered];
  if (!one || !two) return `duplicate action ${second.ref}; first defined at ${at(first)}`;
  if (describeRenderer(one) === describeRenderer(two)) {
    return `duplicate action ${second.ref}: ${describeRenderer(two)} renders it twice, from ${at(first)} and ${at(second)}`;
  }
  return (
    `duplicate action ${second.ref}: ${describeRenderer(two)} renders it from ${at(second)}, as ${describeRenderer(one)} does` +
    (at(first) === at(second) ? '; put ${parent.name} in the name of the config' : ` from ${at(first)}`)
  );
}
