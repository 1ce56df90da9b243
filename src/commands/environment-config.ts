/**
 * A command's configuration in one environment, in the order its steps depend on one another:
 * the project loaded (files, documents, modules, plugin modules), the environment selected
 * (--env, --var, --var-file), each action's copy for it, the --var flags checked against what
 * reads them, the template context (with the actions' variables), the actions enabled in it, the
 * secrets the configuration reads, and the provider entries it uses. `tend validate` and every
 * command that opens a project step into the configuration here, once.
 */
import path from 'node:path';
import type { GlobalOptions } from '../cli/output.js';
import { actionVariablesOf, enabledActions, selectActionCopies } from '../config/action-variables.js';
import {
  createTemplateContext,
  parseVarFlags,
  providersOf,
  selectEnvironment,
  type SelectedEnvironment,
} from '../config/environment.js';
import { loadProjectConfig } from '../config/load.js';
import type { ActionConfig, ProviderEntry } from '../config/project.js';
import type { TemplateContext } from '../config/template-context.js';
import { checkVarFlagsRead } from '../config/variables.js';
import type { PluginDefinition } from '../plugin/types.js';
import { configurationReadsSecrets, loadSecrets } from '../remote/secrets.js';

export async function configureEnvironment(
  options: GlobalOptions,
  builtins: PluginDefinition[],
  /** The namespace instead of the environment's own (`tend restore`: the archived one, or `--into`). */
  namespace?: string,
) {
  const loaded = await loadProjectConfig({
    root: options.root ? path.resolve(options.root) : undefined,
    cwd: process.cwd(),
    plugins: builtins,
  });
  const { project } = loaded;
  const vars = parseVarFlags(options.var ?? []);
  const selected: SelectedEnvironment = selectEnvironment(project, {
    env: options.env,
    vars,
    varFiles: options.varFile,
    ...(options.commandInfo ? { command: options.commandInfo } : {}),
  });
  // Before the templates are resolved: the providers' `${environment.namespace}` names it too.
  if (namespace !== undefined) selected.namespace = namespace;
  const copies = selectActionCopies(loaded.actions, selected.name);
  checkVarFlagsRead(project, copies, vars, selected.varfileVariables);
  const templateContext: TemplateContext = {
    ...createTemplateContext(project, selected),
    actionVariables: actionVariablesOf(copies),
  };
  const { enabled, disabled } = enabledActions(copies, templateContext);
  // A missing secret is found here too; its value is never in any output.
  const reads = configurationReadsSecrets(project, enabled, selected.variables);
  const secrets = await loadSecrets(project, selected.name, reads);
  if (secrets) templateContext.secrets = secrets;
  const providers: ProviderEntry[] = providersOf(project, selected.name);
  return {
    project,
    /** The built-in plugins, then the ones tend.yml names, checked. */
    plugins: loaded.plugins,
    /** What tend read and does not do (Garden settings it ignores). */
    notes: loaded.notes,
    /** Garden's Workflows and custom Commands (commands/workflow.ts, commands/custom-command.ts run them). */
    runnables: loaded.runnables,
    selected,
    templateContext,
    actions: enabled as ActionConfig[],
    disabled,
    providers,
  };
}
