/**
 * The Project document of tend.yml, checked and read: variable names, environments (unique
 * names, `defaultNamespace` templates that use no action outputs, cleanup policies), the
 * default environment, and provider entries (a known plugin, known environments, each plugin
 * at most once per environment, configuration checked against the plugin's schema). Problems
 * are collected, not thrown, so one run reports them all.
 */
import type { SourceLocation } from '../errors.js';
import type { SyntaxOptions } from '../expressions/syntax.js';
import type { PluginDefinition } from '../plugin/types.js';
import type { Static } from 'typebox';
import type { CleanupConfigSchema } from '../cleanup/policy.js';
import { checkSchema, formatPath, type ConfigProblem } from './diagnostics.js';
import { isGardenFile } from './files.js';
import { formatLocation } from './project.js';
import type {
  ConfigPath,
  EnvironmentConfig,
  LocateTarget,
  ProjectConfig,
  ProviderEntry,
  VariableValue,
} from './project.js';
import { ProjectSchema, variableKeyPattern } from './schema.js';

/**
 * Gives `value` a `location` found when first read: finding a position parses the file again
 * when its documents came from the parse cache, and most loads never need one.
 */
function withLocation<T extends object>(
  value: T,
  find: () => SourceLocation,
): T & { location: SourceLocation } {
  let found: SourceLocation | undefined;
  return Object.defineProperty(value, 'location', {
    enumerable: true,
    get: () => (found ??= find()),
  }) as T & { location: SourceLocation };
}
import { checkTemplateSyntax } from './template.js';
import { gardenProviderConfig, refusedWhereUsed, requiresContext } from './garden/project.js';
import { mergePatch, type GardenProblem } from './garden/translation.js';

export interface ProjectDocumentInput {
  root: string;
  /** The file, relative to the root (tend.yml). */
  file: string;
  location: SourceLocation;
  value: Record<string, unknown>;
  locate: (p: ConfigPath, target?: LocateTarget) => SourceLocation;
  plugins: readonly PluginDefinition[];
  /** The project's template syntax (template-syntax.ts). */
  templateSyntax: SyntaxOptions;
}

/** The project, or undefined when the document has problems (added to `problems`). */
export function readProjectDocument(
  { root, file, location, value, locate, plugins, templateSyntax }: ProjectDocumentInput,
  problems: ConfigProblem[],
): ProjectConfig | undefined {
  // A templated defaultEnvironment is chosen when the environment is (config/environment.ts).
  const { defaultEnvironment: chosen, ...rest } = value;
  const templatedDefault = typeof chosen === 'string' && chosen.includes('${') ? chosen : undefined;
  const shape = checkSchema(ProjectSchema, templatedDefault === undefined ? value : rest, {
    basePath: [],
    rootLabel: 'the Project document',
    locate,
  });
  if (shape.length > 0) {
    problems.push(...shape);
    return undefined;
  }
  const raw = value as RawProject;
  const before = problems.length;
  const reading: Reading = {
    locate,
    syntax: templateSyntax,
    problems,
    problem: (code, message, at) => problems.push({ code, message, location: at }),
  };
  checkVariableNames(reading, raw.variables, ['variables']);
  const { environments, environmentNames } = readEnvironments(reading, raw.environments);
  const envList = environments.map((e) => e.name).join(', ');
  const defaultEnvironment = templatedDefault ?? raw.defaultEnvironment ?? environments[0]?.name ?? '';
  if (templatedDefault !== undefined) {
    problems.push(
      ...checkTemplateSyntax(templatedDefault, ['defaultEnvironment'], (p) => locate(p), {
        syntax: templateSyntax,
      }).problems,
    );
  } else if (raw.defaultEnvironment !== undefined && !environmentNames.has(raw.defaultEnvironment)) {
    reading.problem(
      'TEND_ENVIRONMENT_NOT_FOUND',
      `defaultEnvironment "${raw.defaultEnvironment}" is not one of the environments; expected one of: ${envList}`,
      locate(['defaultEnvironment']),
    );
  }
  // Garden reads a provider's `environments:` as a filter only, names it does not know included.
  const filterOnly = isGardenFile(file);
  const providers = readProviders(
    reading,
    raw.providers ?? [],
    plugins,
    environmentNames,
    envList,
    filterOnly,
  );
  if (problems.length > before) return undefined;
  return {
    name: raw.name,
    defaultEnvironment,
    variables: raw.variables ?? {},
    varfiles: (raw.varfiles ?? []).map(varfileConfig),
    environments,
    providers,
    ...(raw.server !== undefined ? { server: raw.server } : {}),
    root: root,
    file,
    templateSyntax,
    location,
    locate: (p) => locate(p),
  };
}

/** The Project document as its schema lets it be (checked before it is read as this). */
type RawProject = {
  name: string;
  defaultEnvironment?: string;
  variables?: Record<string, VariableValue>;
  varfiles?: RawVarfile[];
  environments: RawEnvironment[];
  providers?: RawProvider[];
  server?: string;
};

type RawVarfile = string | { path: string; optional?: boolean };

const varfileConfig = (v: RawVarfile) =>
  typeof v === 'string' ? { path: v, optional: false } : { path: v.path, optional: v.optional ?? false };

interface RawEnvironment {
  name: string;
  defaultNamespace?: string;
  variables?: Record<string, VariableValue>;
  varfiles?: RawVarfile[];
  cleanup?: Static<typeof CleanupConfigSchema>;
  pullRequest?: { repository: string; number: string | number };
}

type RawProvider = { name: string; environments?: string[]; plugin?: string } & Record<string, unknown>;

/** Where the steps of reading a document find positions and put problems. */
interface Reading {
  locate: (p: ConfigPath, target?: LocateTarget) => SourceLocation;
  syntax: SyntaxOptions;
  problems: ConfigProblem[];
  problem: (code: ConfigProblem['code'], message: string, at: SourceLocation) => void;
}

const variableKey = new RegExp(variableKeyPattern);

function checkVariableNames(
  { problem, locate }: Reading,
  variables: Record<string, VariableValue> | undefined,
  base: ConfigPath,
): void {
  for (const name of Object.keys(variables ?? {})) {
    if (!variableKey.test(name)) {
      problem(
        'TEND_CONFIG_INVALID',
        `invalid variable name "${name}"; expected letters, digits, "_" and "-", starting with a letter or "_" (or $merge, a mapping merged in)`,
        locate([...base, name], 'key'),
      );
    }
  }
}

/** The environments, each checked (a name used once, its templates, its schedule). */
function readEnvironments(
  reading: Reading,
  raw: readonly RawEnvironment[],
): { environments: EnvironmentConfig[]; environmentNames: Map<string, number> } {
  const { locate, problem } = reading;
  const environments: EnvironmentConfig[] = [];
  const environmentNames = new Map<string, number>();
  raw.forEach((env, i) => {
    const first = environmentNames.get(env.name);
    if (first !== undefined) {
      problem(
        'TEND_CONFIG_INVALID',
        `duplicate environment "${env.name}"; first defined at ${formatLocation(locate(['environments', first, 'name']))}`,
        locate(['environments', i, 'name']),
      );
    }
    environmentNames.set(env.name, i);
    checkEnvironment(reading, env, i);
    environments.push(withLocation(environmentConfig(env), () => locate(['environments', i])));
  });
  return { environments, environmentNames };
}

/** An environment's variable names, the templates known before any action runs, its schedule. */
function checkEnvironment(reading: Reading, env: RawEnvironment, i: number): void {
  const { locate, problem } = reading;
  checkVariableNames(reading, env.variables, ['environments', i, 'variables']);
  if (env.defaultNamespace !== undefined) {
    checkNoActionOutputs(
      reading,
      env.defaultNamespace,
      ['environments', i, 'defaultNamespace'],
      'action outputs cannot be used in defaultNamespace: the namespace is known before any action runs',
    );
  }
  if (typeof env.pullRequest?.number === 'string') {
    checkNoActionOutputs(
      reading,
      env.pullRequest.number,
      ['environments', i, 'pullRequest', 'number'],
      'action outputs cannot be used in pullRequest: the pull request is known before any action runs',
    );
  }
  if (env.cleanup?.schedule) {
    const base = ['environments', i, 'cleanup', 'schedule'];
    const { sleepAt, wakeAt } = env.cleanup.schedule;
    if (sleepAt === wakeAt) {
      problem(
        'TEND_CONFIG_INVALID',
        `sleepAt and wakeAt are both ${sleepAt}; expected two different times (awake from wakeAt until sleepAt)`,
        locate([...base, 'sleepAt']),
      );
    }
  }
}

/** A template's syntax, and (said once, at the template) that it uses no action outputs. */
function checkNoActionOutputs(
  { locate, syntax, problems, problem }: Reading,
  template: string,
  base: ConfigPath,
  message: string,
): void {
  const checked = checkTemplateSyntax(template, base, (p) => locate(p), { syntax });
  problems.push(...checked.problems);
  if (checked.actionReferences.length > 0) problem('TEND_TEMPLATE', message, locate(base));
}

function environmentConfig(env: RawEnvironment): Omit<EnvironmentConfig, 'location'> {
  return {
    name: env.name,
    ...(env.defaultNamespace !== undefined ? { defaultNamespace: env.defaultNamespace } : {}),
    variables: env.variables ?? {},
    varfiles: (env.varfiles ?? []).map(varfileConfig),
    ...(env.cleanup
      ? {
          cleanup: {
            afterInactivity: env.cleanup.afterInactivity,
            action: env.cleanup.action ?? 'delete',
            ...(env.cleanup.warnBefore !== undefined ? { warnBefore: env.cleanup.warnBefore } : {}),
            ...(env.cleanup.afterClose !== undefined ? { afterClose: env.cleanup.afterClose } : {}),
            ...(env.cleanup.schedule ? { schedule: env.cleanup.schedule } : {}),
            ...(env.cleanup.archive === false ? { archive: false } : {}),
          },
        }
      : {}),
    ...(env.pullRequest ? { pullRequest: env.pullRequest } : {}),
  };
}

/**
 * The provider entries: a known plugin, known environments, each plugin at most once per
 * environment (in tend's files; Garden's are merged where used), configuration checked against
 * the plugin's schema and using no action outputs.
 */
function readProviders(
  reading: Reading,
  raw: readonly RawProvider[],
  plugins: readonly PluginDefinition[],
  environmentNames: ReadonlyMap<string, number>,
  envList: string,
  filterOnly: boolean,
): ProviderEntry[] {
  const { locate, problems, problem } = reading;
  const providers: ProviderEntry[] = [];
  const pluginNames = plugins.map((p) => p.name);
  raw.forEach((entry, i) => {
    const {
      name,
      environments: only,
      plugin: _module,
      [gardenProviderConfig]: written,
      [requiresContext]: contextRequired,
      [refusedWhereUsed]: refusedThere = [],
      ...config
    } = entry as RawProvider & {
      [gardenProviderConfig]?: Record<string, unknown>;
      [requiresContext]?: true;
      [refusedWhereUsed]?: GardenProblem[];
    };
    const entryPath = ['providers', i];
    const plugin = plugins.find((p) => p.name === name);
    // A Garden entry limited to some environments: its problems, raised there (a provider tend cannot run).
    const refusals: ConfigProblem[] = refusedThere.map(({ code, message, path }) => ({
      code,
      message,
      location: locate([...entryPath, ...path]),
    }));
    const unsupported = refusedThere.some((found) => found.code === 'TEND_CONFIG_UNSUPPORTED');
    if (!plugin && !unsupported) {
      problem(
        'TEND_PROVIDER_NOT_FOUND',
        `unknown provider "${name}"; expected one of: ${pluginNames.join(', ') || '(no plugins)'}`,
        locate([...entryPath, 'name']),
      );
      return;
    }
    only?.forEach((envName, j) => {
      if (!filterOnly && !environmentNames.has(envName)) {
        problem(
          'TEND_ENVIRONMENT_NOT_FOUND',
          `unknown environment "${envName}" in ${formatPath([...entryPath, 'environments'])}; expected one of: ${envList}`,
          locate([...entryPath, 'environments', j]),
        );
      }
    });
    // Garden merges the entries of one provider an environment uses (environment.ts providersOf).
    const clash =
      !filterOnly &&
      providers.find(
        (p) => p.name === name && (!p.environments || !only || p.environments.some((e) => only.includes(e))),
      );
    if (clash) {
      problem(
        'TEND_CONFIG_INVALID',
        `provider "${name}" is listed twice for the same environments; first at ${formatLocation(clash.location)}` +
          ' (list it twice only with separate environments:)',
        locate([...entryPath, 'name']),
      );
    }
    const add = (entryConfig: Record<string, unknown>, deferred: ConfigProblem[]) =>
      providers.push(
        withLocation(
          {
            name,
            ...(only ? { environments: only } : {}),
            config: entryConfig,
            ...(written ? { written } : {}),
            locate: (p: ConfigPath) => locate([...entryPath, ...p]),
            ...(only && deferred.length > 0 ? { problems: deferred } : {}),
            ...(contextRequired ? { requiresContext: true as const } : {}),
          },
          () => locate(entryPath),
        ),
      );
    // Past the check above, no plugin means a provider tend cannot run.
    if (unsupported || !plugin) {
      add({}, refusals);
      return;
    }
    // A null of a Garden entry removes the key from the entries before it (a JSON merge patch).
    const merged = filterOnly && raw.some((other) => other !== entry && other.name === name);
    const invalid = checkSchema(plugin.configSchema, merged ? mergePatch({}, config) : config, {
      basePath: entryPath,
      rootLabel: `${formatPath(entryPath)} (${name})`,
      extraRootKeys: ['name', 'environments', 'plugin'],
      skipTemplated: true,
      locate,
    });
    // An entry for some environments only is checked where it is used (providersOf).
    if (!only) problems.push(...invalid);
    const checked = checkTemplateSyntax(config, entryPath, (p) => locate(p), { syntax: reading.syntax });
    problems.push(...checked.problems);
    for (const reference of checked.actionReferences) {
      problem(
        'TEND_TEMPLATE',
        'action outputs cannot be used in provider configuration: providers are set up before any action runs',
        locate(reference.path),
      );
    }
    add(config, [...refusals, ...invalid]);
  });
  return providers;
}
