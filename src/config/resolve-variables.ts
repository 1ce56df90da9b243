/**
 * A step of the configuration pipeline (pipeline.ts): the environment a command works in
 * (--env, else the project's defaultEnvironment), its namespace, and its variables — the
 * project's, the environment's, its varfiles', --var-file's, then --var (environment.ts,
 * variables.ts) —, each action's copy for that environment, and every --var checked against what
 * reads it.
 */
import { selectActionCopies } from './action-variables.js';
import {
  createTemplateContext,
  contextProblems,
  providerProblems,
  selectEnvironment,
  type SelectedEnvironment,
} from './environment.js';
import type { ActionConfig, ProjectConfig } from './project.js';
import type { TemplateContext } from './template-context.js';
import { problemsOfError, type ConfigProblem } from './diagnostics.js';
import { TendError } from '../errors.js';
import { checkVarFlagsRead } from './variables.js';
import { parseVarFlags } from './var-overrides.js';

export interface EnvironmentChoice {
  /** --env; default: the project's defaultEnvironment. */
  env?: string;
  /** --var, as given (`name=value`). */
  vars?: readonly string[];
  /** --var-file, as given (relative to the current directory). */
  varFiles?: readonly string[];
  /** The command running (`command.name`, `command.params`), for every template it resolves. */
  command?: TemplateContext['command'];
  /** The namespace instead of the environment's own (`tend restore`: the archived one, or `--into`). */
  namespace?: string;
  /** --context: the kubeconfig context of the command, over the providers' `context:`. */
  context?: string;
}

export function resolveVariables(
  project: ProjectConfig,
  actions: readonly ActionConfig[],
  choice: EnvironmentChoice,
): { environment: SelectedEnvironment; copies: ActionConfig[] } {
  const vars = parseVarFlags(choice.vars ?? []);
  const environment = chooseEnvironment(project, choice, vars);
  // Before the templates are resolved: the providers' `${environment.namespace}` names it too.
  if (choice.namespace !== undefined) environment.namespace = choice.namespace;
  // Their `disabled:` templates resolve without the actions' variables, as Garden's do.
  const copies = selectActionCopies(actions, createTemplateContext(project, environment));
  checkVarFlagsRead(project, copies, vars, environment.varfileVariables);
  return { environment, copies };
}

function chooseEnvironment(
  project: ProjectConfig,
  choice: EnvironmentChoice,
  vars: ReturnType<typeof parseVarFlags>,
): SelectedEnvironment {
  return selectEnvironment(project, {
    env: choice.env,
    vars,
    varFiles: choice.varFiles,
    ...(choice.command ? { command: choice.command } : {}),
  });
}

/**
 * What choosing the environment would fail on (a varfile missing, an environment unknown), and
 * the problems of the provider entries it uses (a provider tend cannot run, limited to it), as
 * problems at their lines: with the actions' problems, one `tend validate` lists them all. An
 * error without a place in the files (a --var-file missing) is left to the step itself.
 */
export function environmentProblems(project: ProjectConfig, choice: EnvironmentChoice): ConfigProblem[] {
  try {
    const { name } = chooseEnvironment(project, choice, parseVarFlags(choice.vars ?? []));
    return [...providerProblems(project, name), ...contextProblems(project, name, choice.context)];
  } catch (error) {
    return error instanceof TendError ? problemsOfError(error) : [];
  }
}
