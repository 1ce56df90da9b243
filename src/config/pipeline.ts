/**
 * The configuration pipeline (docs/ARCHITECTURE.md#configuration-one-pipeline): every command
 * steps into the configuration here, and the steps run in this order, each in a module of its own.
 *
 *  1. findFiles        find-files.ts       the project root and its configuration files, read
 *  2. loadPlugins      plugin-modules.ts   the third-party plugins tend.yml names (their schemas check the rest)
 *  3. readDocuments    read-documents.ts   each file's YAML documents
 *  4. convertModules   convert-modules.ts  Garden's documents (0.12 modules, RenderTemplates) as tend's
 *  5. readConfig       read-config.ts      the project and its actions, checked against the schemas and across documents
 *  6. resolveVariables resolve-variables.ts the environment, its namespace and variables, each action's copy for it
 *  7. resolveTemplates resolve-templates.ts the template context (secrets included), the enabled actions, the providers
 *  8. check            check-spec.ts       per action, as a command asks (configuration.ts): its spec resolved and checked
 *
 * `configure` runs them all and returns the Configuration; `loadProjectConfig` runs 1 to 5, for the
 * commands that need only the project (`tend secrets`, `tend events`).
 */
import type { PluginDefinition } from '../plugin/types.js';
import type { GardenRunnable } from './garden/workflows.js';
import { Configuration } from './configuration.js';
import { ModuleConverter } from './convert-modules.js';
import { configError, type ConfigProblem } from './diagnostics.js';
import { contextProblems } from './environment.js';
import { findFiles } from './find-files.js';
import { loadProjectPlugins } from './plugin-modules.js';
import type { ActionConfig, ProjectConfig } from './project.js';
import { ConfigReader } from './read-config.js';
import { readDocuments, type ConfigNote } from './read-documents.js';
import { resolveTemplateContext, type SecretSource } from './resolve-templates.js';
import type { BuildlessModules } from './template-context.js';
import { environmentProblems, resolveVariables, type EnvironmentChoice } from './resolve-variables.js';

export interface LoadOptions {
  /** The project root (absolute, or relative to cwd); default: the nearest directory with a tend.yml. */
  root?: string;
  cwd: string;
  plugins: readonly PluginDefinition[];
  /** Problems of a valid project a later step would find, listed with the load's own when it has some. */
  checkProject?: (project: ProjectConfig) => ConfigProblem[];
}

export interface LoadedConfig {
  project: ProjectConfig;
  actions: ActionConfig[];
  /** What tend read and accepts without doing it (Garden settings it ignores, Workflows it does not run). */
  notes: ConfigNote[];
  /** Garden's Workflows and custom Commands (commands/workflow.ts, commands/custom-command.ts run them). */
  runnables: GardenRunnable[];
  /** The given plugins, then the third-party plugins tend.yml names (`providers[].plugin`). */
  plugins: PluginDefinition[];
  /** The 0.12 modules that became no Build (image-only container, helm), with the outputs Garden gives them. */
  buildlessModules: BuildlessModules;
}

/** Loads and checks the project (steps 1 to 5); throws one TendError listing every problem. */
export async function loadProjectConfig(options: LoadOptions): Promise<LoadedConfig> {
  const found = await findFiles(options);
  const { root, files } = found;
  try {
    const projectPlugins = await loadProjectPlugins(found.projectFile, root, options.plugins);
    if (projectPlugins.problems.length > 0) throw configError(projectPlugins.problems);
    const plugins = [...options.plugins, ...projectPlugins.plugins];
    const problems: ConfigProblem[] = [];
    const notes: ConfigNote[] = [];
    const converter = new ModuleConverter(root, files, problems, notes, found.templateSyntax);
    const projectFiles = found.projectFiles.map((file) => file.file);
    const reader = new ConfigReader(root, plugins, projectFiles, problems, found.templateSyntax);
    for (const file of files) {
      for (const document of readDocuments(file, problems)) {
        for (const converted of converter.convert(document)) reader.read(converted);
      }
      // Positions found later (errors only) parse the file again; holding every AST costs memory and GC.
      file.release();
    }
    const { project, actions } = reader.finish(files, converter.unloaded, options.checkProject);
    if (found.ignoreFiles.length > 0) project.ignoreFiles = found.ignoreFiles;
    // Only a load without problems is remembered: a file with an error is parsed again next time.
    found.remember();
    return {
      project,
      actions,
      notes,
      runnables: converter.runnables,
      plugins,
      buildlessModules: converter.buildlessModules,
    };
  } finally {
    for (const file of files) file.release();
  }
}

export interface ConfigureOptions extends LoadOptions, EnvironmentChoice {
  /** Where the secrets come from, when the configuration reads `${secrets.…}`. */
  secrets: SecretSource;
  /** Disabled actions to enable anyway, by ref (`tend run <name> --force`, as Garden runs them). */
  forceEnabled?: readonly string[];
}

/** A command's configuration in one environment: every step, once. */
export async function configure(options: ConfigureOptions): Promise<Configuration> {
  const { project, actions, notes, runnables, plugins, buildlessModules } = await loadProjectConfig({
    ...options,
    checkProject: (project) => environmentProblems(project, options),
  });
  const { environment, copies } = resolveVariables(project, actions, options);
  // Before anything reaches a cluster: the kubeconfig's current context may be another one.
  const noContext = contextProblems(project, environment.name, options.context);
  if (noContext.length > 0) throw configError(noContext);
  const resolved = await resolveTemplateContext(
    project,
    environment,
    copies,
    options.secrets,
    buildlessModules,
    new Set(options.forceEnabled),
  );
  return new Configuration({ project, plugins, notes, runnables, environment, ...resolved });
}
