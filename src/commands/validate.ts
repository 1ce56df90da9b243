/**
 * `tend validate`: loads the project, selects the environment (--env, --var), resolves every
 * template expression that does not wait for an action's outputs, builds the graph (cycles), and
 * prints every action. Any configuration error exits 2.
 */
import { configureEnvironment } from './environment-config.js';
import { formatTable } from '../cli/output.js';
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { ExitCode } from '../errors.js';
import { readRunnables } from '../config/garden/workflows.js';
import { whereDisabled } from '../config/action-variables.js';
import { ActionGraph } from '../graph/graph.js';
import { tendCommandNames } from './runnables.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition } from '../plugin/types.js';

export interface ValidateData {
  valid: true;
  project: string;
  root: string;
  environment: string;
  /** The environment's namespace (`${environment.namespace}`). */
  namespace: string;
  /** The namespace objects go to: a provider's own (Garden's `<project>-<namespace>`), else `namespace`. */
  appNamespace: string;
  providers: string[];
  actions: {
    ref: string;
    /** The type tend runs it as. */
    type: string;
    /** The type its Garden file names, where that is another (a container Run is tend's kubernetes-pod). */
    writtenType?: string;
    file: string;
    line: number;
    column: number;
    /** Explicit and template dependencies. */
    dependencies: string[];
  }[];
  /** Garden's Workflows (`tend workflow <name>`) and custom Commands (`tend command <name>`, or `tend <name>`). */
  workflows?: { name: string; steps: number; file: string; line: number; notRun?: string }[];
  commands?: { name: string; runAs: string; file: string; line: number; notRun?: string }[];
  /** What tend read and does not do: Garden settings it ignores. */
  notes?: { message: string; file: string; line: number; column: number }[];
}

export async function validateCommand(
  options: GlobalOptions,
  builtins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<ValidateData>> {
  const configuration = await configureEnvironment(options, builtins);
  const { project, providers, actions, disabled, dependantsOfDisabled, environment } = configuration;
  const runnables = readRunnables(configuration.runnables, tendCommandNames);
  const warnings = await configuration.check(runnables.problems);
  const notes = [
    ...configuration.notes,
    ...warnings,
    ...runnables.notes,
    ...disabled.map((action) => ({
      message: `${action.ref} is disabled in environment ${environment.name}; not run${withoutIt(dependantsOfDisabled.get(action.ref))}`,
      location: whereDisabled(action, environment.name),
    })),
  ];
  const resolvedProviders = providers.map((entry) => ({
    name: entry.name,
    config: configuration.providerConfig(entry),
  }));
  const graph = new ActionGraph(actions);

  const data: ValidateData = {
    valid: true,
    project: project.name,
    root: project.root,
    environment: environment.name,
    namespace: environment.namespace,
    appNamespace: configuration.targetNamespace(resolvedProviders),
    providers: providers.map((p) => p.name),
    actions: actions.map((action) => ({
      ref: action.ref,
      type: action.type,
      ...(action.writtenType ? { writtenType: action.writtenType } : {}),
      file: action.file,
      line: action.location.line,
      column: action.location.column,
      dependencies: graph.get(action.ref).dependencies,
    })),
    ...(runnables.workflows.length > 0
      ? {
          workflows: runnables.workflows.map((w) => {
            const { file, line } = w.source.locate([]);
            return { name: w.name, steps: w.steps.length, file, line, ...notRun(w) };
          }),
        }
      : {}),
    ...(runnables.commands.length > 0
      ? {
          commands: runnables.commands.map((c) => {
            const { file, line } = c.source.locate([]);
            const runAs = `tend ${c.topLevel ? '' : 'command '}${c.name}`;
            return { name: c.name, runAs, file, line, ...notRun(c) };
          }),
        }
      : {}),
    ...(notes.length > 0 ? { notes: notes.map(({ message, location }) => ({ message, ...location })) } : {}),
  };
  const table = formatTable(
    ['ACTION', 'TYPE', 'FILE', 'DEPENDENCIES'],
    // The type as the project's file says it; tend's own beside it where that is another.
    data.actions.map((a) => [
      a.ref,
      a.writtenType ? `${a.writtenType} (${a.type})` : a.type,
      `${a.file}:${a.line}`,
      a.dependencies.join(', ') || '-',
    ]),
  );
  const count = data.actions.length;
  const human = [
    `project ${data.project}: environment ${data.environment}, ${configuration.namespaceHeader(resolvedProviders)}, ` +
      `providers ${data.providers.join(', ') || '(none)'}`,
    '',
    count > 0 ? table : '(no actions)',
    '',
    ...(data.workflows ?? []).map(
      (w) =>
        `workflow ${w.name}: ${w.steps} step(s), ${w.file}:${w.line} (${w.notRun ? 'not run: see its note' : `tend workflow ${w.name}`})`,
    ),
    ...(data.commands ?? []).map(
      (c) => `command ${c.name}: ${c.file}:${c.line} (${c.notRun ? 'not run: see its note' : c.runAs})`,
    ),
    ...(data.workflows || data.commands ? [''] : []),
    ...(data.notes ?? []).map((note) => `note: ${note.file}:${note.line}:${note.column}: ${note.message}`),
    ...(data.notes ? [''] : []),
    `configuration valid: ${count} action${count === 1 ? '' : 's'}`,
  ].join('\n');
  return { data, human, exitCode: ExitCode.ok };
}

/** Why tend does not run a Workflow or Command, for `--json`. */
function notRun(runnable: { notRun?: { message: string } }): { notRun?: string } {
  return runnable.notRun ? { notRun: runnable.notRun.message } : {};
}

/** The enabled actions a disabled one was a `dependencies:` entry of, which run without it (as in Garden). */
function withoutIt(dependants: readonly string[] | undefined): string {
  if (!dependants || dependants.length === 0) return '';
  return ` (${dependants.join(', ')} ${dependants.length === 1 ? 'runs' : 'run'} without it)`;
}
