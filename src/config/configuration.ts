/**
 * What the configuration pipeline (pipeline.ts) gives a command: the project, its environment and
 * the actions enabled in it, the template context, the providers — and, for the last step, what
 * a command asks per action as it goes: an action's spec resolved (with its dependencies' outputs
 * once they ran) and checked, a provider entry's configuration, an expression's value.
 */
import { TendError } from '../errors.js';
import type { Outputs, PluginDefinition } from '../plugin/types.js';
import type { GardenRunnable } from './garden/workflows.js';
import {
  actionWarnings,
  checkResolvedSpec,
  environmentProblems,
  templateFileProblems,
  undeclaredVariableNote,
} from './check-spec.js';
import { configError, problemsOfError, sortProblems, type ConfigProblem } from './diagnostics.js';
import { actionContext } from './action-variables.js';
import { firstOfModule, isRefusedProvider, providerUser, unlistedProvider } from './cross-check.js';
import {
  namespaceHeader,
  targetNamespace,
  resolveActionSpec,
  resolveProviderConfig,
  type SelectedEnvironment,
} from './environment.js';
import {
  formatLocation,
  inRenderedConfig,
  type ActionConfig,
  type ProjectConfig,
  type ProviderEntry,
} from './project.js';
import type { ConfigNote } from './read-documents.js';
import { actionTypeIndex } from './schema.js';
import {
  actionOutputsContext,
  resolveTemplates,
  type ResolveOptions,
  type TemplateContext,
} from './template.js';

export interface SpecOptions extends ResolveOptions {
  /** The outputs of the action's dependencies that ran, by ref (`actions.<kind>.<name>.outputs`). */
  dependencyOutputs?: Record<string, Outputs>;
  /** The versions of its dependencies, by ref (`actions.<kind>.<name>.version`). */
  dependencyVersions?: Record<string, string>;
}

export class Configuration {
  readonly project: ProjectConfig;
  /** The built-in plugins, then the ones tend.yml names, checked. */
  readonly plugins: PluginDefinition[];
  /** What tend read and does not do (Garden settings it ignores). */
  readonly notes: ConfigNote[];
  /** Garden's Workflows and custom Commands (commands/workflow.ts, commands/custom-command.ts run them). */
  readonly runnables: GardenRunnable[];
  readonly environment: SelectedEnvironment;
  /** What templates resolve in; `providers.*` is added once the providers are prepared. */
  templateContext: TemplateContext;
  /** The actions enabled in the environment. */
  readonly actions: ActionConfig[];
  /** The actions disabled in it. */
  readonly disabled: ActionConfig[];
  /** The enabled actions whose `dependencies:` named each disabled one (by ref): dropped, as Garden does. */
  readonly dependantsOfDisabled: ReadonlyMap<string, string[]>;
  /** The provider entries the environment uses (their configuration: `providerConfig`). */
  readonly providers: ProviderEntry[];

  constructor(parts: {
    project: ProjectConfig;
    plugins: PluginDefinition[];
    notes: ConfigNote[];
    runnables: GardenRunnable[];
    environment: SelectedEnvironment;
    templateContext: TemplateContext;
    actions: ActionConfig[];
    disabled: ActionConfig[];
    dependantsOfDisabled: ReadonlyMap<string, string[]>;
    providers: ProviderEntry[];
  }) {
    this.project = parts.project;
    this.plugins = parts.plugins;
    this.notes = parts.notes.filter(
      (note) => !note.environments || note.environments.includes(parts.environment.name),
    );
    this.runnables = parts.runnables;
    this.environment = parts.environment;
    this.templateContext = parts.templateContext;
    this.actions = parts.actions;
    this.disabled = parts.disabled;
    this.dependantsOfDisabled = parts.dependantsOfDisabled;
    this.providers = parts.providers;
  }

  /** What each provider's preparation gave: `${providers.<name>.outputs.*}` for the actions' templates from now on. */
  addProviderOutputs(providers: NonNullable<TemplateContext['providers']>): void {
    this.templateContext = { ...this.templateContext, providers };
  }

  /** A provider entry's configuration with its template expressions resolved. */
  providerConfig(entry: ProviderEntry): Record<string, unknown> {
    return resolveProviderConfig(entry, this.templateContext);
  }

  /**
   * What an action's templates see: the environment's context with the action's own variables and
   * `this` (and a rendered action's `parent`, `template`, `inputs`).
   */
  actionContext(action: ActionConfig): TemplateContext {
    return actionContext(action, this.templateContext);
  }

  /** An action's spec with its template expressions resolved (errors point into the action's file). */
  resolveSpec(action: ActionConfig, options: SpecOptions = {}): unknown {
    const { dependencyOutputs, dependencyVersions, ...resolveOptions } = options;
    const context =
      dependencyOutputs === undefined
        ? this.templateContext
        : { ...this.templateContext, actions: actionOutputsContext(dependencyOutputs, dependencyVersions) };
    return resolveActionSpec(action, context, resolveOptions);
  }

  /**
   * A resolved spec made to fit the action type's schema (a template may turn a number into a
   * string or back) and checked; throws TEND_CONFIG_INVALID naming the value's file:line:column.
   */
  checkSpec(action: ActionConfig, spec: unknown): unknown {
    return checkResolvedSpec(action, spec, this.plugins);
  }

  /** The plugin of an action's type. */
  actionPlugin(action: ActionConfig): PluginDefinition | undefined {
    return actionTypeIndex(this.plugins).get(action.type)?.plugin;
  }

  /** A plugin's provider configuration in the environment, resolved; `{}` when it has no entry. */
  private pluginProviderConfig(plugin: PluginDefinition | undefined): Record<string, unknown> {
    const entry = plugin && this.providers.find((p) => p.name === plugin.name);
    return entry ? this.providerConfig(entry) : {};
  }

  /** What the providers' `init` would refuse for the environment (`checkEnvironment`). */
  private async providerProblems(environment: { name: string; namespace: string }): Promise<ConfigProblem[]> {
    const found = await Promise.all(
      this.providers.map((entry) => {
        const plugin = this.plugins.find((p) => p.name === entry.name);
        if (!plugin) return [];
        const params = { providerConfig: this.providerConfig(entry), environment };
        return environmentProblems(plugin, entry, params, this.environment.locateNamespace);
      }),
    );
    return found.flat();
  }

  /**
   * The enabled actions whose type's provider the environment does not use: its entries are all
   * limited to other environments, or, beside a provider tend refuses elsewhere (which leaves it
   * to the environment: cross-check.ts), there is none (one refused here is the environment's
   * error already: providersOf). Running such an action fails, so validate refuses it (Garden
   * loads its fixed plugins' types, `container` among them, in every environment, and fails at
   * the deploy). A 0.12 module's actions are one error, the module's.
   */
  private providerlessActions(): ConfigProblem[] {
    const used = new Set(this.providers.map((entry) => entry.name));
    const saidOfModules = new Set<string>();
    return this.actions.flatMap((action) => {
      const plugin = this.actionPlugin(action)?.name;
      if (plugin === undefined || used.has(plugin) || !firstOfModule(saidOfModules, action, plugin))
        return [];
      // A rendered action's type is the template's line, shared by each rendering: which one it is is said.
      return this.unusedProvider(action, plugin).map((found) => ({
        ...found,
        message: inRenderedConfig(found.message, action.rendered),
      }));
    });
  }

  /** The problem of an action whose type's provider `plugin` the environment does not use. */
  private unusedProvider(action: ActionConfig, plugin: string): ConfigProblem[] {
    const entries = this.project.providers.filter((entry) => entry.name === plugin);
    if (entries.length === 0) {
      // Without a refused entry, read-config said it for every environment.
      const refused = this.project.providers.some(isRefusedProvider);
      return refused ? [unlistedProvider(action, plugin, this.project.file)] : [];
    }
    const where = entries.map(
      (entry) => `${formatLocation(entry.location)} for ${entry.environments!.join(', ')}`,
    );
    const environment = this.environment.name;
    // A 0.12 module has no `environments:`; `disabled:` leaves out all of its actions.
    const limit =
      action.fromModule === undefined
        ? 'limit the action with environments:'
        : `disable the module in it: \`disabled: \${environment.name == "${environment}"}\``;
    return [
      {
        code: 'TEND_PROVIDER_NOT_FOUND' as const,
        message:
          `${providerUser(action)} comes from provider "${plugin}", which environment "${environment}" does not use: ` +
          `its entries are limited to other environments (${where.join('; ')}); add this environment to one, or ${limit}`,
        location: action.locate(['type']),
      },
    ];
  }

  /** The value of one template expression (`var.x`) in the environment's context. */
  resolveExpression(expression: string): unknown {
    return resolveTemplates(`\${${expression}}`, this.templateContext, () => this.project.location);
  }

  /** The namespace the environment's objects go to, for headers (a provider may set its own). */
  namespaceHeader(providers: readonly { name: string; config: Record<string, unknown> }[]): string {
    return namespaceHeader(this.environment.namespace, providers);
  }

  /** The namespace the environment's objects go to (a provider may set its own). */
  targetNamespace(providers: readonly { name: string; config: Record<string, unknown> }[]): string {
    return targetNamespace(this.environment.namespace, providers);
  }

  /**
   * Every enabled action checked before anything runs (`tend validate`): its spec resolved, but
   * for other actions' outputs, and checked, then the files its type resolves as templated text.
   * Throws the problems all at once; else resolves to what the action types warn of
   * (`checkAction`: what their handlers will refuse). A spec or templated file that reads a
   * variable nothing declares is a note, not a problem (`undeclaredVariableNote`).
   */
  async check(otherProblems: readonly ConfigProblem[] = []): Promise<ConfigNote[]> {
    const notes: ConfigNote[] = [];
    // Each action's first problem, all of them at once: one action's does not hide the next's.
    const specProblems: ConfigProblem[] = [];
    const checked = this.actions.flatMap((action) => {
      try {
        return [
          { action, spec: this.checkSpec(action, this.resolveSpec(action, { keepActionOutputs: true })) },
        ];
      } catch (error) {
        if (!(error instanceof TendError)) throw error;
        const variable = undeclaredVariable(error);
        if (variable !== undefined) {
          notes.push(undeclaredVariableNote(action, variable, error.location ?? action.location));
        } else {
          specProblems.push(...problemsOfError(error, action.location));
        }
        return [];
      }
    });
    const files = await Promise.all(
      checked.map(({ action, spec }) =>
        templateFileProblems(this.project.root, action, spec, this.templateContext, this.plugins),
      ),
    );
    const problems = [...specProblems, ...files.flatMap((f) => f.problems)];
    notes.push(...files.flatMap((f) => f.notes));
    const environment = { name: this.environment.name, namespace: this.environment.namespace };
    problems.push(
      ...(await this.providerProblems(environment)),
      ...this.providerlessActions(),
      ...otherProblems,
    );
    if (problems.length > 0) throw configError(sortProblems(problems));
    const warnings = await Promise.all(
      checked.map(({ action, spec }) =>
        actionWarnings(action, this.plugins, {
          sourceDir: action.sourceDir,
          projectRoot: this.project.root,
          spec,
          providerConfig: this.pluginProviderConfig(this.actionPlugin(action)),
          environment,
        }),
      ),
    );
    return [...notes, ...warnings.flat()];
  }
}

/** The variable a template error says nothing declares (`--var` would give it), if that was the error. */
function undeclaredVariable(error: TendError): string | undefined {
  const detail = error.detail as { undeclaredVariable?: unknown } | undefined;
  return error.code === 'TEND_TEMPLATE' && typeof detail?.undeclaredVariable === 'string'
    ? detail.undeclaredVariable
    : undefined;
}
