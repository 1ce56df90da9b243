/**
 * `tend validate`: loads the project, selects the environment (--env, --var), resolves every
 * template expression that does not wait for an action's outputs, builds the graph (cycles), and
 * prints every action. Any configuration error exits 2.
 */
import { configureEnvironment } from './environment-config.js';
import { formatTable } from '../cli/output.js';
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { ExitCode } from '../errors.js';
import { ActionGraph } from '../graph/graph.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition } from '../plugin/types.js';

export interface ValidateData {
  valid: true;
  project: string;
  root: string;
  environment: string;
  namespace: string;
  providers: string[];
  actions: {
    ref: string;
    type: string;
    file: string;
    line: number;
    column: number;
    /** Explicit and template dependencies. */
    dependencies: string[];
  }[];
  /** What tend read and does not do: Garden settings it ignores, Workflows and Commands it does not run. */
  notes?: { message: string; file: string; line: number; column: number }[];
}

export async function validateCommand(
  options: GlobalOptions,
  builtins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<ValidateData>> {
  const configuration = await configureEnvironment(options, builtins);
  const { project, providers, actions, disabled, environment } = configuration;
  const notes = [
    ...configuration.notes,
    ...disabled.map((action) => ({
      message: `${action.ref} is disabled in environment ${environment.name}; not run`,
      location: action.locate(action.disabled !== undefined ? ['disabled'] : ['environments']),
    })),
  ];
  const resolvedProviders = providers.map((entry) => ({
    name: entry.name,
    config: configuration.providerConfig(entry),
  }));
  await configuration.check();
  const graph = new ActionGraph(actions);

  const data: ValidateData = {
    valid: true,
    project: project.name,
    root: project.root,
    environment: environment.name,
    namespace: environment.namespace,
    providers: providers.map((p) => p.name),
    actions: actions.map((action) => ({
      ref: action.ref,
      type: action.type,
      file: action.file,
      line: action.location.line,
      column: action.location.column,
      dependencies: graph.get(action.ref).dependencies,
    })),
    ...(notes.length > 0 ? { notes: notes.map(({ message, location }) => ({ message, ...location })) } : {}),
  };
  const table = formatTable(
    ['ACTION', 'TYPE', 'FILE', 'DEPENDENCIES'],
    data.actions.map((a) => [a.ref, a.type, `${a.file}:${a.line}`, a.dependencies.join(', ') || '-']),
  );
  const count = data.actions.length;
  const human = [
    `project ${data.project}: environment ${data.environment}, ${configuration.namespaceHeader(resolvedProviders)}, ` +
      `providers ${data.providers.join(', ') || '(none)'}`,
    '',
    count > 0 ? table : '(no actions)',
    '',
    ...(data.notes ?? []).map((note) => `note: ${note.file}:${note.line}:${note.column}: ${note.message}`),
    ...(data.notes ? [''] : []),
    `configuration valid: ${count} action${count === 1 ? '' : 's'}`,
  ].join('\n');
  return { data, human, exitCode: ExitCode.ok };
}
