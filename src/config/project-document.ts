/**
 * The Project document of tend.yml, checked and read: variable names, environments (unique
 * names, `defaultNamespace` templates that use no action outputs, cleanup policies), the
 * default environment, and provider entries (a known plugin, known environments, each plugin
 * at most once per environment, configuration checked against the plugin's schema). Problems
 * are collected, not thrown, so one run reports them all.
 */
import type { SourceLocation } from '../errors.js';
import type { PluginDefinition } from '../plugin/types.js';
import type { Static } from 'typebox';
import type { CleanupConfigSchema } from '../cleanup/policy.js';
import { checkSchema, formatPath, type ConfigProblem } from './diagnostics.js';
import { formatLocation } from './project.js';
import type {
  ConfigPath,
  EnvironmentConfig,
  LocateTarget,
  ProjectConfig,
  ProviderEntry,
  VariableValue,
} from './project.js';
import { ProjectSchema, variableNamePattern } from './schema.js';

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

export interface ProjectDocumentInput {
  root: string;
  /** The file, relative to the root (tend.yml). */
  file: string;
  location: SourceLocation;
  value: Record<string, unknown>;
  locate: (p: ConfigPath, target?: LocateTarget) => SourceLocation;
  plugins: readonly PluginDefinition[];
}

/** The project, or undefined when the document has problems (added to `problems`). */
export function readProjectDocument(
  { root, file, location, value, locate, plugins }: ProjectDocumentInput,
  problems: ConfigProblem[],
): ProjectConfig | undefined {
  const problem = (code: ConfigProblem['code'], message: string, at: SourceLocation) =>
    problems.push({ code, message, location: at });
  const shape = checkSchema(ProjectSchema, value, {
    basePath: [],
    rootLabel: 'the Project document',
    locate,
  });
  if (shape.length > 0) {
    problems.push(...shape);
    return undefined;
  }
  const raw = value as {
    name: string;
    defaultEnvironment?: string;
    variables?: Record<string, VariableValue>;
    environments: {
      name: string;
      defaultNamespace?: string;
      variables?: Record<string, VariableValue>;
      varfiles?: (string | { path: string; optional?: boolean })[];
      cleanup?: Static<typeof CleanupConfigSchema>;
      pullRequest?: { repository: string; number: string | number };
    }[];
    providers?: ({ name: string; environments?: string[]; plugin?: string } & Record<string, unknown>)[];
    server?: string;
  };
  const before = problems.length;
  const variableName = new RegExp(variableNamePattern);
  const checkVariableNames = (variables: Record<string, VariableValue> | undefined, base: ConfigPath) => {
    for (const name of Object.keys(variables ?? {})) {
      if (!variableName.test(name)) {
        problem(
          'TEND_CONFIG_INVALID',
          `invalid variable name "${name}"; expected letters, digits, "_" and "-", starting with a letter or "_"`,
          locate([...base, name], 'key'),
        );
      }
    }
  };
  checkVariableNames(raw.variables, ['variables']);

  const environments: EnvironmentConfig[] = [];
  const environmentNames = new Map<string, number>();
  raw.environments.forEach((env, i) => {
    const first = environmentNames.get(env.name);
    if (first !== undefined) {
      problem(
        'TEND_CONFIG_INVALID',
        `duplicate environment "${env.name}"; first defined at ${formatLocation(locate(['environments', first, 'name']))}`,
        locate(['environments', i, 'name']),
      );
    }
    environmentNames.set(env.name, i);
    checkVariableNames(env.variables, ['environments', i, 'variables']);
    if (env.defaultNamespace !== undefined) {
      const base = ['environments', i, 'defaultNamespace'];
      const checked = checkTemplateSyntax(env.defaultNamespace, base, (p) => locate(p));
      problems.push(...checked.problems);
      if (checked.actionReferences.length > 0) {
        problem(
          'TEND_TEMPLATE',
          'action outputs cannot be used in defaultNamespace: the namespace is known before any action runs',
          locate(base),
        );
      }
    }
    if (typeof env.pullRequest?.number === 'string') {
      const base = ['environments', i, 'pullRequest', 'number'];
      const checked = checkTemplateSyntax(env.pullRequest.number, base, (p) => locate(p));
      problems.push(...checked.problems);
      if (checked.actionReferences.length > 0) {
        problem(
          'TEND_TEMPLATE',
          'action outputs cannot be used in pullRequest: the pull request is known before any action runs',
          locate(base),
        );
      }
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
    environments.push(
      withLocation(
        {
          name: env.name,
          ...(env.defaultNamespace !== undefined ? { defaultNamespace: env.defaultNamespace } : {}),
          variables: env.variables ?? {},
          varfiles: (env.varfiles ?? []).map((v) =>
            typeof v === 'string'
              ? { path: v, optional: false }
              : { path: v.path, optional: v.optional ?? false },
          ),
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
        },
        () => locate(['environments', i]),
      ),
    );
  });
  const envList = environments.map((e) => e.name).join(', ');
  const defaultEnvironment = raw.defaultEnvironment ?? environments[0]?.name ?? '';
  if (raw.defaultEnvironment !== undefined && !environmentNames.has(raw.defaultEnvironment)) {
    problem(
      'TEND_ENVIRONMENT_NOT_FOUND',
      `defaultEnvironment "${raw.defaultEnvironment}" is not one of the environments; expected one of: ${envList}`,
      locate(['defaultEnvironment']),
    );
  }

  const providers: ProviderEntry[] = [];
  const pluginNames = plugins.map((p) => p.name);
  (raw.providers ?? []).forEach((entry, i) => {
    const { name, environments: only, plugin: _module, ...config } = entry;
    const entryPath = ['providers', i];
    const plugin = plugins.find((p) => p.name === name);
    if (!plugin) {
      problem(
        'TEND_PROVIDER_NOT_FOUND',
        `unknown provider "${name}"; expected one of: ${pluginNames.join(', ') || '(no plugins)'}`,
        locate([...entryPath, 'name']),
      );
      return;
    }
    only?.forEach((envName, j) => {
      if (!environmentNames.has(envName)) {
        problem(
          'TEND_ENVIRONMENT_NOT_FOUND',
          `unknown environment "${envName}" in ${formatPath([...entryPath, 'environments'])}; expected one of: ${envList}`,
          locate([...entryPath, 'environments', j]),
        );
      }
    });
    const clash = providers.find(
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
    problems.push(
      ...checkSchema(plugin.configSchema, config, {
        basePath: entryPath,
        rootLabel: `${formatPath(entryPath)} (${name})`,
        extraRootKeys: ['name', 'environments', 'plugin'],
        skipTemplated: true,
        locate,
      }),
    );
    const checked = checkTemplateSyntax(config, entryPath, (p) => locate(p));
    problems.push(...checked.problems);
    for (const reference of checked.actionReferences) {
      problem(
        'TEND_TEMPLATE',
        'action outputs cannot be used in provider configuration: providers are set up before any action runs',
        locate(reference.path),
      );
    }
    providers.push(
      withLocation(
        {
          name,
          ...(only ? { environments: only } : {}),
          config,
          locate: (p: ConfigPath) => locate([...entryPath, ...p]),
        },
        () => locate(entryPath),
      ),
    );
  });

  if (problems.length > before) return undefined;
  return {
    name: raw.name,
    defaultEnvironment,
    variables: raw.variables ?? {},
    environments,
    providers,
    ...(raw.server !== undefined ? { server: raw.server } : {}),
    root: root,
    file,
    location,
    locate: (p) => locate(p),
  };
}
