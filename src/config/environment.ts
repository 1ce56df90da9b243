/**
 * The environment a command works in: chosen with --env (default: the project's
 * defaultEnvironment), its namespace resolved from `defaultNamespace`, and its variables (the
 * project's, the environment's, its varfiles, --var-file, then --var: src/config/variables.ts).
 * Also builds the template context and resolves provider entries and specs.
 */
import { localIdentity } from '../state/identity.js';
import { TendError, type SourceLocation } from '../errors.js';
import { configError, formatPath, inRenderedStep, type ConfigProblem } from './diagnostics.js';
import { nameMaxLength, nameRegExp } from './project.js';
import type { PullRequestRef } from '../events/catalog.js';
import type {
  ActionConfig,
  CleanupConfig,
  ConfigPath,
  ProjectConfig,
  ProviderEntry,
  VariableValue,
} from './project.js';
import { mergePatch } from './garden/translation.js';
import { Lazy } from '../expressions/evaluate.js';
import { gitContext } from './git-context.js';
import { actionContext } from './action-variables.js';
import { mergeVariableValues, placeVariableLayer } from './variable-layers.js';
import { resolveTemplates } from './template.js';
import { readVarfiles } from './variables.js';
import { varOverridesLayer } from './var-overrides.js';
import type { ResolveOptions, TemplateContext } from './template.js';
import type { ProviderConfigs } from './template-providers.js';

export const defaultNamespaceTemplate = '${project.name}-${local.username}';

export interface SelectedEnvironment {
  name: string;
  namespace: string;
  /** Where the namespace is set: the environment's `defaultNamespace`, else the environment. */
  locateNamespace: () => SourceLocation;
  cleanup?: CleanupConfig;
  /** `environments[].pullRequest` resolved; absent when not set or its number resolves empty. */
  pullRequest?: PullRequestRef;
  /**
   * Project variables, overridden by the environment's, its varfiles', --var-file's, then --var
   * (mappings merged as Garden merges them; templates unresolved): what plugins read.
   */
  variables: Record<string, VariableValue>;
  /** The varfiles read (the environment's, then --var-file's), absolute paths. */
  varfiles: string[];
  /** The variables the varfiles set, merged. */
  varfileVariables: Record<string, VariableValue>;
  /** `command.*` of the command's templates, when the command passes it. */
  command?: CommandContext;
}

type CommandContext = NonNullable<TemplateContext['command']>;

/**
 * The variables of a selected environment as layers, lowest first (project, environment, each
 * varfile), and --var typed as the variable it overrides: for its template context.
 */
interface VariableSources {
  layers: Record<string, VariableValue>[];
  overrides: Record<string, VariableValue>;
}
const variableSources = new WeakMap<SelectedEnvironment, VariableSources>();

export interface SelectOptions {
  /** --env; default: the project's defaultEnvironment. */
  env?: string;
  /** --var, parsed by parseVarFlags. */
  vars: Record<string, string>;
  /** --var-file, as given (relative to the current directory). */
  varFiles?: readonly string[];
  /** For tests: the OS user and environment variables (default: os.userInfo(), process.env). */
  local?: TemplateContext['local'];
  /** The command running (`command.name`, `command.params`), for every template it resolves. */
  command?: CommandContext;
}

/**
 * `--env`: an environment's name, or Garden's `<namespace>.<environment>`, which works in that
 * environment with `namespace` as its `${environment.namespace}` (a pull request's namespace, say).
 */
export function parseEnvFlag(flag: string | undefined): { env?: string; namespace?: string } {
  const dot = flag?.indexOf('.') ?? -1;
  // Without a namespace, the name is the environment's: an unknown one is said as such later.
  if (flag === undefined || dot < 0) return flag === undefined ? {} : { env: flag };
  const namespace = flag.slice(0, dot);
  const env = flag.slice(dot + 1);
  if (env.includes('.') || namespace.length > nameMaxLength || !nameRegExp.test(namespace)) {
    throw new TendError(
      'TEND_USAGE',
      `invalid --env ${JSON.stringify(flag.slice(0, 140))}; expected an environment's name, or <namespace>.<environment> ` +
        `with one "." and a namespace of lower-case letters, digits and "-", starting and ending with a ` +
        `letter or digit, at most ${nameMaxLength} characters`,
      { detail: { hint: 'e.g. --env dev, or --env pr-42.preview to work in namespace pr-42' } },
    );
  }
  return { env, namespace };
}

/** The user running tend and the process environment, for `local.*` expressions. */
export function localContext(): TemplateContext['local'] {
  return { username: localIdentity().user, env: process.env };
}

/**
 * `local.*` with Garden's keys derived from what is given (`usernameLowerCase`, `platform`,
 * `arch`, `projectPath`); given keys win.
 */
function fullLocal(local: TemplateContext['local'], project: ProjectConfig): TemplateContext['local'] {
  return {
    usernameLowerCase: local.username.toLowerCase(),
    platform: process.platform,
    arch: process.arch,
    projectPath: project.root,
    ...local,
  };
}

/** `datetime.*`: the time of the first use, the same for every template of the command. */
function datetimeContext(): NonNullable<TemplateContext['datetime']> {
  const now = new Lazy(() => new Date());
  const iso = () => (now.get() as Date).toISOString();
  return {
    now: new Lazy(iso),
    today: new Lazy(() => iso().slice(0, 10)),
    timestamp: new Lazy(() => Math.floor((now.get() as Date).getTime() / 1000)),
  };
}

/** How the project's templates read, for its template contexts. */
function templateSyntaxOf(project: ProjectConfig): Pick<TemplateContext, 'templateSyntax'> {
  return project.templateSyntax ? { templateSyntax: project.templateSyntax } : {};
}

/**
 * The environment of `defaultEnvironment`, a template too (Garden resolves it with `local.*`,
 * `project.*`, `git.*` and `datetime.*`: `${local.env.CI ? "ci" : "dev"}`).
 */
function defaultEnvironmentName(
  project: ProjectConfig,
  local: TemplateContext['local'],
  command: CommandContext | undefined,
): string {
  if (!project.defaultEnvironment.includes('${')) return project.defaultEnvironment;
  const context = {
    ...templateSyntaxOf(project),
    project: { name: project.name },
    var: {},
    local: fullLocal(local, project),
    git: gitContext(project.root),
    datetime: datetimeContext(),
    ...(command ? { command } : {}),
  } as unknown as TemplateContext;
  const at = project.locate(['defaultEnvironment']);
  const name = String(resolveTemplates(project.defaultEnvironment, context, () => at));
  if (!project.environments.some((e) => e.name === name)) {
    throw new TendError(
      'TEND_ENVIRONMENT_NOT_FOUND',
      `defaultEnvironment "${project.defaultEnvironment}" chose "${name}", which is not one of the environments; ` +
        `expected one of: ${project.environments.map((e) => e.name).join(', ')}`,
      { location: at, detail: { hint: 'choose one with --env <name>' } },
    );
  }
  return name;
}

/**
 * What a varfile path's `${…}` reads, as Garden resolves it: the project, the environment's name,
 * the project's variables, and `local.*`, `git.*`, `datetime.*`, `command.*`.
 */
function varfilePathContext(
  project: ProjectConfig,
  environmentName: string,
  local: TemplateContext['local'],
  options: SelectOptions,
): TemplateContext {
  return {
    ...templateSyntaxOf(project),
    project: { name: project.name },
    environment: { name: environmentName },
    var: project.variables,
    local: fullLocal(local, project),
    git: gitContext(project.root),
    datetime: datetimeContext(),
    ...(options.command ? { command: options.command } : {}),
  } as unknown as TemplateContext;
}

export function selectEnvironment(project: ProjectConfig, options: SelectOptions): SelectedEnvironment {
  const local = options.local ?? localContext();
  const name = options.env ?? defaultEnvironmentName(project, local, options.command);
  const environment = project.environments.find((e) => e.name === name);
  if (!environment) {
    throw new TendError(
      'TEND_ENVIRONMENT_NOT_FOUND',
      `unknown environment "${name}"; available: ${project.environments.map((e) => e.name).join(', ')}`,
      { detail: { hint: `choose one with --env <name>, or add it under environments: in ${project.file}` } },
    );
  }
  const index = project.environments.indexOf(environment);
  // Project variables, its varfiles, the environment's variables, its varfiles, --var-file, then --var.
  const varfiles = readVarfiles(project, index, options.varFiles ?? [], (template, at) =>
    String(
      resolveTemplates(template, varfilePathContext(project, environment.name, local, options), () =>
        project.locate(at),
      ),
    ),
  );
  placeVariableLayer(project.variables, `project ${project.name}`, (p) =>
    project.locate(['variables', ...p]),
  );
  placeVariableLayer(environment.variables, `environment ${environment.name}`, (p) =>
    project.locate(['environments', index, 'variables', ...p]),
  );
  const variableLayers = [
    project.variables,
    ...varfiles.projectLayers,
    environment.variables,
    ...varfiles.layers,
  ];
  const merged = variableLayers.reduce<VariableValue>(
    (lower, higher) => mergeVariableValues(lower, higher) as VariableValue,
    {},
  ) as Record<string, VariableValue>;
  const varOverrides = varOverridesLayer(merged, options.vars);
  const variables = mergeVariableValues(merged, varOverrides) as Record<string, VariableValue>;
  const templatePath = ['environments', index, 'defaultNamespace'];
  // environment.namespace is what is being computed: it is absent from this context on purpose.
  const context = {
    ...templateSyntaxOf(project),
    project: { name: project.name },
    environment: { name: environment.name },
    var: project.variables,
    varLayers: variableLayers.slice(1),
    varOverrides,
    local: fullLocal(local, project),
    git: gitContext(project.root),
    datetime: datetimeContext(),
    ...(options.command ? { command: options.command } : {}),
  } as unknown as TemplateContext;
  const locateNamespace = () =>
    project.locate(environment.defaultNamespace === undefined ? ['environments', index] : templatePath);
  const namespace = String(
    resolveTemplates(environment.defaultNamespace ?? defaultNamespaceTemplate, context, locateNamespace),
  );
  if (namespace.length > nameMaxLength || !nameRegExp.test(namespace)) {
    const template = environment.defaultNamespace ?? defaultNamespaceTemplate;
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `namespace "${namespace}" of environment ${environment.name} (from "${template}") is not a valid ` +
        `Kubernetes namespace name; expected lower-case letters, digits and "-", starting and ending with a ` +
        `letter or digit, at most ${nameMaxLength} characters`,
      {
        location: locateNamespace(),
        detail: { hint: `set ${formatPath(templatePath)} in ${project.file}` },
      },
    );
  }
  const pullRequest = resolvePullRequest(project, index, {
    ...context,
    environment: { name: environment.name, namespace },
  } as TemplateContext);
  const selected: SelectedEnvironment = {
    name: environment.name,
    namespace,
    locateNamespace,
    ...(environment.cleanup ? { cleanup: environment.cleanup } : {}),
    ...(pullRequest ? { pullRequest } : {}),
    variables,
    varfiles: varfiles.files,
    varfileVariables: varfiles.variables,
    ...(options.command ? { command: options.command } : {}),
  };
  variableSources.set(selected, { layers: variableLayers, overrides: varOverrides });
  return selected;
}

/**
 * `environments[].pullRequest` with its number resolved (`${var.pr}`): undefined when absent or
 * empty (the environment is used outside a pull request); a positive integer, else exit 2 with
 * its file:line:col.
 */
function resolvePullRequest(
  project: ProjectConfig,
  index: number,
  context: TemplateContext,
): PullRequestRef | undefined {
  const config = project.environments[index]!.pullRequest;
  if (!config) return undefined;
  const path = ['environments', index, 'pullRequest', 'number'];
  const value =
    typeof config.number === 'number'
      ? config.number
      : String(resolveTemplates(config.number, context, () => project.locate(path))).trim();
  if (value === '') return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1 || number > 2_147_483_647) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `pullRequest.number of environment ${project.environments[index]!.name} is "${String(value).slice(0, 64)}"; expected a pull request number (a whole number from 1), or empty for none`,
      { location: project.locate(path), detail: { hint: 'pass it with --var pr=<number>' } },
    );
  }
  return { repository: config.repository, number };
}

/** `var` and the layers above it; an environment not from selectEnvironment is one layer. */
function variablesContext(
  environment: SelectedEnvironment,
): Pick<TemplateContext, 'var' | 'varLayers' | 'varOverrides'> {
  const sources = variableSources.get(environment);
  if (!sources) return { var: environment.variables };
  return {
    var: sources.layers[0] ?? {},
    varLayers: sources.layers.slice(1),
    varOverrides: sources.overrides,
  };
}

/** The context of template expressions in this environment; `actions` is added as actions run. */
export function createTemplateContext(
  project: ProjectConfig,
  environment: SelectedEnvironment,
  local: TemplateContext['local'] = localContext(),
): TemplateContext {
  return {
    ...templateSyntaxOf(project),
    project: { name: project.name },
    environment: {
      name: environment.name,
      namespace: environment.namespace,
      fullName: `${environment.namespace}.${environment.name}`,
    },
    ...variablesContext(environment),
    local: fullLocal(local, project),
    git: gitContext(project.root),
    datetime: datetimeContext(),
    ...(environment.command ? { command: environment.command } : {}),
  };
}

/**
 * The namespace the environment's objects go to, for headers: a provider's own `namespace`
 * (Garden's, after `namespace: {name}`) when one sets it, else the environment's, and why.
 */
export function namespaceHeader(
  environmentNamespace: string,
  providers: readonly { name: string; config: Record<string, unknown> }[],
): string {
  const own = namespacingProvider(providers);
  if (!own || own.config.namespace === environmentNamespace) return `namespace ${environmentNamespace}`;
  return `namespace ${String(own.config.namespace)} (provider ${own.name}'s namespace; the environment's is ${environmentNamespace})`;
}

/** The namespace objects go to (`--json`'s `appNamespace`): a provider's own, else the environment's. */
export function targetNamespace(
  environmentNamespace: string,
  providers: readonly { name: string; config: Record<string, unknown> }[],
): string {
  const own = namespacingProvider(providers);
  return own ? String(own.config.namespace) : environmentNamespace;
}

/** The provider entry that names a namespace of its own, if one does. */
function namespacingProvider<P extends { config: Record<string, unknown> }>(
  providers: readonly P[],
): P | undefined {
  return providers.find((p) => typeof p.config.namespace === 'string' && p.config.namespace !== '');
}

/** A provider entry's configuration with its template expressions resolved. */
export function resolveProviderConfig(
  entry: ProviderEntry,
  context: TemplateContext,
): Record<string, unknown> {
  return resolveTemplates(entry.config, context, (p) => entry.locate(p));
}

/**
 * `providers.<name>.config`: each entry the environment uses as its file says it (a Garden entry
 * in Garden's shape), its templates resolved as the provider's are, in `context`, when first read.
 */
export function providerConfigsOf(
  entries: readonly ProviderEntry[],
  context: () => TemplateContext,
): ProviderConfigs {
  const resolved = new Map<string, Record<string, unknown>>();
  const resolving = new Set<string>();
  return {
    names: entries.map((entry) => entry.name),
    config(name) {
      const entry = entries.find((e) => e.name === name);
      if (!entry) return undefined;
      let config = resolved.get(name);
      if (config) return config;
      if (resolving.has(name)) {
        throw new TendError(
          'TEND_TEMPLATE',
          `the configuration of provider ${name} reads providers.${name}.config: a provider's configuration cannot read itself; write the value in both places`,
          { location: entry.location },
        );
      }
      resolving.add(name);
      try {
        config = resolveTemplates(entry.written ?? entry.config, context(), (p) => entry.locate(p));
      } finally {
        resolving.delete(name);
      }
      resolved.set(name, config);
      return config;
    },
  };
}

/** An action's spec with its template expressions resolved (errors point into the action's file). */
export function resolveActionSpec(
  action: ActionConfig,
  context: TemplateContext,
  options?: ResolveOptions,
): unknown {
  const own = actionContext(action, context);
  return inRenderedStep(action.rendered, () =>
    resolveTemplates(action.spec, own, (p) => action.locate(['spec', ...p]), options),
  );
}

/**
 * The provider entries an environment uses. The problems of an entry limited to some
 * environments are raised only when one of them is used: Garden checks a provider only where it
 * is used, and projects leave placeholders in the entries of environments nobody selected.
 */
export function providersOf(project: ProjectConfig, environment: string): ProviderEntry[] {
  const problems = providerProblems(project, environment);
  if (problems.length > 0) throw configError(problems);
  return providerEntriesOf(project, environment);
}

/** The problems of the provider entries an environment uses that are checked only where used. */
export function providerProblems(project: ProjectConfig, environment: string): ConfigProblem[] {
  return providerEntriesOf(project, environment).flatMap((e) => e.problems ?? []);
}

/**
 * A provider entry the environment uses that must name a kubeconfig context (Garden's
 * `kubernetes`) and names none, once merged: without one it would reach the kubeconfig's current
 * context, perhaps another cluster. None when the command line names the context (`--context`).
 */
export function contextProblems(
  project: ProjectConfig,
  environment: string,
  commandLineContext: string | undefined,
): ConfigProblem[] {
  if (commandLineContext) return [];
  return providerEntriesOf(project, environment).flatMap((entry) => {
    const { context } = entry.config;
    if (!entry.requiresContext || (typeof context === 'string' && context.trim() !== '')) return [];
    return [
      {
        code: 'TEND_CONFIG_INVALID' as const,
        message:
          `provider ${entry.name} of environment ${environment} names no kubeconfig context: Garden's kubernetes provider ` +
          "requires one, and without it tend would deploy to the kubeconfig's current context, which may be another " +
          "cluster; set `context:` to the cluster's kubeconfig context (`kubectl config get-contexts`), or give `--context`",
        location: hasPath(entry.config, ['context']) ? entry.locate(['context']) : entry.location,
      },
    ];
  });
}

/** The entries the environment uses; several of one provider (Garden's) merged, in order, as Garden merges them. */
function providerEntriesOf(project: ProjectConfig, environment: string): ProviderEntry[] {
  const byName = new Map<string, ProviderEntry[]>();
  for (const entry of project.providers) {
    if (entry.environments && !entry.environments.includes(environment)) continue;
    byName.set(entry.name, [...(byName.get(entry.name) ?? []), entry]);
  }
  return [...byName.values()].map((entries) =>
    entries.length === 1 ? entries[0]! : mergedProviderEntry(entries, environment),
  );
}

/**
 * One provider's entries as one (Garden's LazyMergePatch: a JSON merge patch, later keys win,
 * mappings merged, a null removes the key); a key's position is in the last entry that has it.
 */
function mergedProviderEntry(entries: readonly ProviderEntry[], environment: string): ProviderEntry {
  const [first, ...rest] = entries as [ProviderEntry, ...ProviderEntry[]];
  const config = rest.reduce<Record<string, unknown>>(
    (sum, entry) => mergePatch(sum, entry.config) as Record<string, unknown>,
    first.config,
  );
  const problems = entries.flatMap((entry) => entry.problems ?? []);
  const written = entries.some((entry) => entry.written)
    ? entries.reduce<unknown>((sum, entry) => mergePatch(sum, entry.written ?? entry.config), {})
    : undefined;
  return {
    ...(entries.some((entry) => entry.requiresContext) ? { requiresContext: true as const } : {}),
    name: first.name,
    environments: [environment],
    config,
    ...(written ? { written: written as Record<string, unknown> } : {}),
    get location() {
      return first.location;
    },
    locate: (path) =>
      (
        entries.findLast(
          (entry) => hasPath(entry.written ?? entry.config, path) || hasPath(entry.config, path),
        ) ?? first
      ).locate(path),
    ...(problems.length > 0 ? { problems } : {}),
  };
}

function hasPath(value: unknown, path: ConfigPath): boolean {
  let at = value;
  for (const key of path) {
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, key)) return false;
    at = (at as Record<string | number, unknown>)[key];
  }
  return true;
}
