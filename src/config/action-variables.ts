/**
 * What an action brings to its own templates and to the environments it runs in, as Garden has
 * it: its `variables:` and `varfiles:` (layers above the environment's, below `--var`), and
 * `disabled:` / `environments:`, which leave it out of an environment. A disabled Build another
 * enabled action depends on is kept (that action needs it); the dependencies of enabled actions
 * on the others are dropped.
 */
import path from 'node:path';
import { branchTestOf } from './branch-test.js';
import { TendError, type SourceLocation } from '../errors.js';
import type { SyntaxOptions } from '../expressions/syntax.js';
import type { ConfigProblem } from './diagnostics.js';
import {
  formatLocation,
  renderRoots,
  type ActionConfig,
  type ActionVarfile,
  type ConfigPath,
  type Locate,
  type VariableValue,
} from './project.js';
import {
  checkTemplateSyntax,
  findActionReferences,
  resolvePathTemplate,
  resolveTemplates,
  type TemplateContext,
} from './template.js';
import type { ActionVariablesContext } from './template-context.js';
import { readVarfile } from './variables.js';
import type { ActionFields } from './action-references.js';
import { actionBuildPath, buildDependencies } from './build-keys.js';

/** An action document's keys this module reads, as the schema lets them be. */
export interface RawActionVariables {
  variables?: Record<string, VariableValue>;
  varfiles?: (string | { path: string; optional?: boolean })[];
  disabled?: boolean | string;
  environments?: string[];
}

/**
 * The action's own variable layers (`variables:`, then each varfile, relative to the action's
 * file), or undefined when it has none; problems (a missing varfile, a bad template) are added.
 * When a varfile path holds `${…}`, the varfiles are read once the environment is chosen
 * (`varfileTemplates`, read by `withEnvironmentVarfiles`), all of them, in order.
 * @param templates the project's syntax, and the roots a rendered action's templates read beside the others
 */
export function readActionVariableLayers(
  raw: RawActionVariables,
  fileDir: string,
  root: string,
  locate: Locate,
  problems: ConfigProblem[],
  templates: { syntax: SyntaxOptions; extraRoots: readonly string[] },
): { variableLayers?: Record<string, VariableValue>[]; varfileTemplates?: ActionVarfile[] } {
  const layers: Record<string, VariableValue>[] = [];
  if (raw.variables !== undefined) {
    problems.push(...checkTemplateSyntax(raw.variables, ['variables'], locate, templates).problems);
    layers.push(raw.variables);
  }
  const varfiles: ActionVarfile[] = (raw.varfiles ?? []).map((varfile, i) => {
    const { path: given, optional = false } = typeof varfile === 'string' ? { path: varfile } : varfile;
    return { path: given, optional, dir: fileDir, at: ['varfiles', i] };
  });
  if (varfiles.some((varfile) => varfile.path.includes('${'))) {
    for (const varfile of varfiles) {
      problems.push(...checkTemplateSyntax(varfile.path, varfile.at, locate, templates).problems);
    }
    return { ...(layers.length > 0 ? { variableLayers: layers } : {}), varfileTemplates: varfiles };
  }
  for (const varfile of varfiles) {
    try {
      const read = readActionVarfile(varfile, varfile.path, root, locate);
      if (read !== undefined) layers.push(read);
    } catch (error) {
      if (!(error instanceof TendError)) throw error;
      problems.push({
        code: error.code,
        message: error.message,
        location: error.location ?? locate(varfile.at),
      });
    }
  }
  return layers.length > 0 ? { variableLayers: layers } : {};
}

/** One varfile of an action, its path resolved: undefined when it is optional and missing. */
function readActionVarfile(
  varfile: ActionVarfile,
  given: string,
  root: string,
  locate: Locate,
): Record<string, VariableValue> | undefined {
  const file = path.resolve(varfile.dir, given);
  const shown = path.relative(root, file) || given;
  const read = readVarfile(file, shown);
  if (read === undefined && !varfile.optional) {
    throw new TendError(
      'TEND_CONFIG_NOT_FOUND',
      `varfile ${given} does not exist (${shown} in the project)`,
      {
        location: locate(varfile.at),
      },
    );
  }
  return read;
}

/**
 * The action with its varfiles read when a path holds `${…}`: each path resolved in the action's
 * context (project, environment, variables, `local.*`, `git.*`…, and a rendered action's
 * `inputs.*`, `parent.name`, `template.name`, as Garden resolves an action's varfile paths), read
 * above its `variables:`. Throws the first problem at its line.
 */
export function withEnvironmentVarfiles(
  action: ActionConfig,
  context: TemplateContext,
  root: string,
): ActionConfig {
  if (!action.varfileTemplates) return action;
  const layers = [...(action.variableLayers ?? [])];
  const own = actionContext(action, context);
  for (const varfile of action.varfileTemplates) {
    const at = () => action.locate(varfile.at);
    const given = resolvePathTemplate(varfile.path, own, at, 'varfile path', 'a file name');
    try {
      const read = readActionVarfile(varfile, given, root, (p) => action.locate(p));
      if (read !== undefined) layers.push(read);
    } catch (error) {
      if (!(error instanceof TendError) || error.location) throw error;
      throw new TendError(error.code, error.message, { location: at() });
    }
  }
  const { varfileTemplates: _read, ...rest } = action;
  return { ...rest, ...(layers.length > 0 ? { variableLayers: layers } : {}) };
}

/** `disabled:` and `environments:` as ActionConfig keeps them; a malformed template is a problem. */
export function readActionEnablement(
  raw: RawActionVariables,
  locate: Locate,
  problems: ConfigProblem[],
  syntax: SyntaxOptions,
): Pick<ActionConfig, 'disabled' | 'environments'> {
  const out: Pick<ActionConfig, 'disabled' | 'environments'> = {};
  if (typeof raw.disabled === 'string') {
    problems.push(...checkTemplateSyntax(raw.disabled, ['disabled'], locate, { syntax }).problems);
    out.disabled = raw.disabled;
  } else if (raw.disabled === true) {
    out.disabled = true;
  }
  if (raw.environments !== undefined) out.environments = raw.environments;
  return out;
}

/** An unknown name in an action's `environments:` (a typo would disable it everywhere). */
export function environmentsProblems(
  action: ActionConfig,
  environmentNames: ReadonlySet<string>,
): ConfigProblem[] {
  return (action.environments ?? []).flatMap((name, i) =>
    environmentNames.has(name)
      ? []
      : [
          {
            code: 'TEND_ENVIRONMENT_NOT_FOUND' as const,
            message: `unknown environment "${name}" in environments of ${action.ref}; expected one of: ${[...environmentNames].join(', ')}`,
            location: action.locate(['environments', i]),
          },
        ],
  );
}

/**
 * What an action's variables are resolved with beside the environment's context: its own layers
 * and, for an action a Garden ConfigTemplate rendered, its `parent`, `template` and `inputs`
 * (Garden resolves every key of a rendered action with them: its spec, variables, varfile paths).
 */
function ownVariablesContext(action: ActionConfig): ActionVariablesContext {
  const rendered = action.rendered;
  return {
    ...(action.variableLayers ? { actionVarLayers: action.variableLayers } : {}),
    ...(rendered ? renderRoots(rendered) : {}),
  };
}

/**
 * The context an action's own templates resolve in (its spec, `disabled:`, varfile paths, the
 * manifest templates it names): its `this` (with `disabled`, `buildPath` and `sourcePath` once the
 * environment's actions are known, as Garden has them in a spec), its variable layers, and
 * `parent`, `template` and `inputs` when a ConfigTemplate rendered it.
 */
export function actionContext(action: ActionConfig, context: TemplateContext): TemplateContext {
  const fields = context.actionFields?.get(action.ref);
  return {
    ...context,
    this: { ...fields, name: action.name, kind: action.kind, mode: 'default' },
    ...ownVariablesContext(action),
  };
}

/** What every action's variables are resolved with, by reference, for `actions.<kind>.<name>.var`. */
export function actionVariablesOf(
  actions: readonly ActionConfig[],
): ReadonlyMap<string, ActionVariablesContext> {
  return new Map(actions.map((action) => [action.ref, ownVariablesContext(action)]));
}

/**
 * What the configuration says of every action in the environment, by reference, for
 * `actions.<kind>.<name>.name`, `.disabled`, `.mode`, `.buildPath`, `.sourcePath` (and `this.*`).
 * `disabled` is what its `disabled:` / `environments:` say (Garden's), even for a disabled Build
 * kept because an enabled action depends on it.
 */
export function actionFieldsOf(
  actions: readonly ActionConfig[],
  switchedOff: ReadonlySet<string>,
  projectRoot: string,
): ReadonlyMap<string, ActionFields> {
  const builds = new Map(actions.filter((a) => a.kind === 'Build').map((a) => [a.name, a]));
  return new Map(
    actions.map((action) => [
      action.ref,
      {
        name: action.name,
        disabled: switchedOff.has(action.ref),
        mode: 'default',
        buildPath: actionBuildPath(action, projectRoot, (name) => builds.get(name)),
        sourcePath: action.sourceDir,
      },
    ]),
  );
}

/** Whether `disabled:` or `environments:` leaves the action out of the context's environment. */
function isDisabled(action: ActionConfig, context: TemplateContext): boolean {
  if (action.environments && !action.environments.includes(context.environment.name)) return true;
  if (action.disabled === undefined) return false;
  if (action.disabled === true) return true;
  const at: ConfigPath = ['disabled'];
  const value = resolveTemplates(action.disabled, actionContext(action, context), () => action.locate(at));
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new TendError(
    'TEND_CONFIG_INVALID',
    `disabled of ${action.ref} is ${JSON.stringify(value)?.slice(0, 64) ?? String(value)} once resolved; expected true or false`,
    {
      location: action.locate(at),
      detail: { hint: 'write a comparison, e.g. ${environment.name == "local"}' },
    },
  );
}

/**
 * Whether two copies of one action can never both be enabled: their `environments:` lists do not
 * overlap, or one has a `disabled:` (checked once the environment is chosen, by selectActionCopies).
 */
export function copiesMayCoexist(a: ActionConfig, b: ActionConfig): boolean {
  if (a.disabled !== undefined || b.disabled !== undefined) return true;
  return (
    a.environments !== undefined &&
    b.environments !== undefined &&
    !a.environments.some((e) => b.environments!.includes(e))
  );
}

/**
 * The actions of the context's environment when one name is used by several copies, as Garden's
 * addRawActionConfig has it: a later copy disabled here is skipped, an enabled one replaces an
 * earlier copy disabled here, and two enabled here are an error (at the later one).
 */
export function selectActionCopies(
  actions: readonly ActionConfig[],
  context: TemplateContext,
): ActionConfig[] {
  const chosen = new Map<string, ActionConfig>();
  for (const action of actions) {
    const current = chosen.get(action.ref);
    if (!current) chosen.set(action.ref, action);
    else if (isDisabled(action, context)) continue;
    else if (isDisabled(current, context)) chosen.set(action.ref, action);
    else {
      throw new TendError(
        'TEND_CONFIG_DUPLICATE_ACTION',
        `duplicate action ${action.ref}: both copies are enabled in environment ${context.environment.name}; first defined at ${formatLocation(current.locate(['name']))}`,
        {
          location: action.locate(['name']),
          detail: { hint: 'disable one of them there (disabled: or environments:), or rename one' },
        },
      );
    }
  }
  return chosen.size === actions.length ? [...actions] : actions.filter((a) => chosen.get(a.ref) === a);
}

/**
 * The actions enabled in the context's environment, with dependencies on the others dropped,
 * and the ones left out. A disabled Build that an enabled action depends on stays (as in Garden);
 * `switchedOff` is every action its `disabled:` or `environments:` disables, those Builds too.
 * `forced` are disabled actions a command runs anyway (Garden's `run <name> --force`): each is
 * kept with what it needs, as an enabled one is, and stays disabled to the actions depending on it.
 */
export function enabledActions(
  actions: readonly ActionConfig[],
  context: TemplateContext,
  forced: ReadonlySet<string> = new Set(),
): {
  enabled: ActionConfig[];
  disabled: ActionConfig[];
  switchedOff: ReadonlySet<string>;
  dependantsOfDisabled: ReadonlyMap<string, string[]>;
  /** What each action's spec and variables read in this environment, by ref (none without a disabled action). */
  reads: ReadonlyMap<string, readonly string[]>;
} {
  if (!actions.some((a) => a.disabled !== undefined || a.environments !== undefined)) {
    return {
      enabled: [...actions],
      disabled: [],
      switchedOff: new Set(),
      dependantsOfDisabled: new Map(),
      reads: new Map(),
    };
  }
  const switchedOff = new Set(actions.filter((a) => isDisabled(a, context)).map((a) => a.ref));
  const off = new Set([...switchedOff].filter((ref) => !forced.has(ref)));
  // What each action reads and needs in this environment (not what a branch it does not use reads).
  const reads = new Map(
    actions.map((action) => [
      action.ref,
      findActionReferences(
        [action.spec, action.variableLayers ?? []],
        branchTestOf(actionContext(action, context)),
      ),
    ]),
  );
  const neededBy = new Map(
    actions.map((action) => [
      action.ref,
      [...action.dependencies, ...reads.get(action.ref)!, ...buildDependencies(action)],
    ]),
  );
  // Builds needed by enabled actions come back, and so do the Builds those need.
  let changed = true;
  while (changed) {
    changed = false;
    for (const action of actions) {
      if (off.has(action.ref)) continue;
      for (const dependency of neededBy.get(action.ref)!) {
        if (off.has(dependency) && dependency.startsWith('build.')) {
          off.delete(dependency);
          changed = true;
        }
      }
    }
  }
  const dropped = (ref: string) => off.has(ref) || (forced.has(ref) && switchedOff.has(ref));
  // Garden's tasks skip a `dependencies:` entry naming a disabled action; who loses one is said.
  const dependantsOfDisabled = new Map<string, string[]>();
  const enabled = actions
    .filter((a) => !off.has(a.ref))
    .map((a) => {
      if (!a.dependencies.some(dropped)) return a;
      for (const ref of a.dependencies.filter(dropped)) {
        dependantsOfDisabled.set(ref, [...(dependantsOfDisabled.get(ref) ?? []), a.ref]);
      }
      return { ...a, dependencies: a.dependencies.filter((d) => !dropped(d)) };
    });
  return {
    enabled,
    disabled: actions.filter((a) => off.has(a.ref)),
    switchedOff,
    dependantsOfDisabled,
    reads,
  };
}

/**
 * Refuses an enabled action that reads the outputs (or version) of one the environment disables:
 * Garden fails when it runs the reader ("depends on one or more runtime outputs from action …,
 * which is disabled"), tend when it reads the configuration, at the expression. `reads` are what
 * each action reads in the environment (enabledActions': a branch it does not use reads nothing).
 */
export function refuseReadsOfDisabled(
  enabled: readonly ActionConfig[],
  disabled: readonly ActionConfig[],
  reads: ReadonlyMap<string, readonly string[]>,
  environment: string,
  syntax: SyntaxOptions | undefined,
): void {
  const disabledByRef = new Map(disabled.map((action) => [action.ref, action]));
  if (disabledByRef.size === 0) return;
  for (const action of enabled) {
    const read = reads.get(action.ref)?.find((ref) => disabledByRef.has(ref));
    if (read === undefined) continue;
    // Where it is written, looked for only now, on the way to the error: its spec, or its first
    // variables layer, which is its `variables:` when it has one.
    const places: [unknown, string][] = [
      [action.spec, 'spec'],
      [action.variableLayers?.[0], 'variables'],
    ];
    const written = places
      .flatMap(
        ([value, key]) =>
          checkTemplateSyntax(value, [key], action.locate, { syntax, deferActionProblems: true })
            .actionReferences,
      )
      .find((reference) => reference.ref === read);
    const where = formatLocation(whereDisabled(disabledByRef.get(read)!, environment));
    throw new TendError(
      'TEND_ACTION_DISABLED',
      `${action.ref} reads the ${written?.field === 'version' ? 'version' : 'outputs'} of ${read}, which is ` +
        `disabled in environment ${environment} (${where}); enable it there or remove the reference`,
      { location: written ? action.locate(written.path) : action.location, actionRef: action.ref },
    );
  }
}

/** Where an action disabled in the environment is disabled: its `environments:` or its `disabled:`. */
export function whereDisabled(action: ActionConfig, environment: string): SourceLocation {
  const excluded = action.environments !== undefined && !action.environments.includes(environment);
  return action.locate(excluded ? ['environments'] : ['disabled']);
}
