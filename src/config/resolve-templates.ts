/**
 * A step of the configuration pipeline (pipeline.ts): what the environment's templates resolve
 * in — the template context (project, environment, variables, `local.*`, `git.*`, the actions'
 * own variables, the secrets when the configuration reads them, the providers' configuration) —, the actions enabled in the
 * environment (`disabled:` may be a template) with their templated dependencies resolved, and the
 * provider entries it uses.
 */
import {
  actionFieldsOf,
  actionVariablesOf,
  enabledActions,
  refuseReadsOfDisabled,
  withEnvironmentVarfiles,
} from './action-variables.js';
import { withEnvironmentDependencies } from './action-dependencies.js';
import { inRenderedStep } from './diagnostics.js';
import { withEnvironmentPatterns, withEnvironmentSource } from './action-source.js';
import { withEnvironmentTimeout } from './action-timeout.js';
import { withEnvironmentReferences } from './environment-references.js';
import {
  createTemplateContext,
  providerConfigsOf,
  providersOf,
  type SelectedEnvironment,
} from './environment.js';
import type { ActionConfig, ProjectConfig, ProviderEntry, VariableValue } from './project.js';
import { readsSecrets, type TemplateContext } from './template.js';

type SecretsContext = NonNullable<TemplateContext['secrets']>;

/**
 * Where the project's secrets come from (the local secrets file or the tend server:
 * src/remote/secrets.ts), asked only when the configuration reads `${secrets.…}`.
 */
export type SecretSource = (
  project: ProjectConfig,
  environment: string,
) => Promise<SecretsContext | undefined>;

export interface ResolvedTemplates {
  templateContext: TemplateContext;
  /** The actions enabled in the environment. */
  actions: ActionConfig[];
  /** The actions disabled in it (`disabled:`, or `environments:` that leaves it out). */
  disabled: ActionConfig[];
  /** The enabled actions whose `dependencies:` named each disabled one (by ref): dropped, as Garden does. */
  dependantsOfDisabled: ReadonlyMap<string, string[]>;
  /** The provider entries the environment uses, their templates unresolved. */
  providers: ProviderEntry[];
}

export async function resolveTemplateContext(
  project: ProjectConfig,
  environment: SelectedEnvironment,
  copies: ActionConfig[],
  secretSource: SecretSource,
  buildlessModules: NonNullable<TemplateContext['buildlessModules']>,
  /** Disabled actions the command runs anyway (`tend run <name> --force`), by ref. */
  forced: ReadonlySet<string> = new Set(),
): Promise<ResolvedTemplates> {
  const environmentContext = createTemplateContext(project, environment);
  const known = new Set(copies.map((action) => action.ref));
  const actions = copies.map((action) =>
    inRenderedStep(action.rendered, () => {
      const withVarfiles = withEnvironmentVarfiles(action, environmentContext, project.root);
      return withEnvironmentDependencies(
        withEnvironmentTimeout(
          withEnvironmentPatterns(
            withEnvironmentSource(withVarfiles, environmentContext, project.root),
            environmentContext,
          ),
          environmentContext,
        ),
        environmentContext,
        known,
      );
    }),
  );
  const templateContext: TemplateContext = {
    ...environmentContext,
    actionVariables: actionVariablesOf(actions),
    buildlessModules,
  };
  const { enabled, disabled, switchedOff, dependantsOfDisabled, reads } = enabledActions(
    actions,
    templateContext,
    forced,
  );
  refuseReadsOfDisabled(enabled, disabled, reads, environment.name, project.templateSyntax);
  // `actions.<kind>.<name>.buildPath` and the like: known before anything runs, of every action.
  templateContext.actionFields = actionFieldsOf(actions, switchedOff, project.root);
  // A missing secret is found here too; its value is never in any output.
  if (configurationReadsSecrets(project, enabled, environment.variables)) {
    const secrets = await secretSource(project, environment.name);
    if (secrets) templateContext.secrets = secrets;
  }
  const providers = providersOf(project, environment.name);
  templateContext.providerConfigs = providerConfigsOf(providers, () => templateContext);
  const actionsReferencing = enabled.map((action) =>
    inRenderedStep(action.rendered, () => withEnvironmentReferences(action, templateContext, known)),
  );
  return { templateContext, actions: actionsReferencing, disabled, dependantsOfDisabled, providers };
}

/** Whether the configuration a command resolves reads `${secrets.…}`. */
function configurationReadsSecrets(
  project: ProjectConfig,
  actions: readonly ActionConfig[],
  variables: Record<string, VariableValue>,
): boolean {
  return (
    readsSecrets(variables) ||
    project.providers.some((entry) => readsSecrets(entry.config)) ||
    actions.some((action) => readsSecrets(action.spec))
  );
}
