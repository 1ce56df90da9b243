/**
 * `tend validate`: loads the project, selects the environment (--env, --var), resolves every
 * template expression that does not wait for an action's outputs, builds the graph (cycles), and
 * prints every action. Any configuration error exits 2.
 */
import { configureEnvironment } from './environment-config.js';
import { formatTable } from '../cli/output.js';
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  actionTemplateContext,
  namespaceHeader,
  resolveActionSpec,
  resolveProviderConfig,
} from '../config/environment.js';
import type { TemplateContext } from '../config/template-context.js';
import { checkResolvedSpec } from '../config/load.js';
import { configError, sortProblems, type ConfigProblem } from '../config/diagnostics.js';
import type { ActionConfig } from '../config/project.js';
import { checkTemplateText } from '../config/template-text.js';
import { ExitCode } from '../errors.js';
import { readRunnables } from '../config/garden/workflows.js';
import { ActionGraph } from '../graph/graph.js';
import { tendCommandNames } from './runnables.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition, TemplateFiles } from '../plugin/types.js';

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
  /** Garden's Workflows (`tend workflow <name>`) and custom Commands (`tend command <name>`, or `tend <name>`). */
  workflows?: { name: string; steps: number; file: string; line: number }[];
  commands?: { name: string; runAs: string; file: string; line: number }[];
  /** What tend read and does not do: Garden settings it ignores. */
  notes?: { message: string; file: string; line: number; column: number }[];
}

/**
 * The problems of the files an action's handlers resolve as templated text (manifest templates),
 * found before anything runs. A file its type cannot list (missing, say) is left to the handler,
 * which reports it when the action runs.
 */
async function templateFileProblems(
  root: string,
  action: ActionConfig,
  spec: unknown,
  context: TemplateContext,
  plugins: readonly PluginDefinition[],
): Promise<ConfigProblem[]> {
  const type = plugins.flatMap((p) => p.actionTypes).find((t) => t.name === action.type);
  const templateFiles = type?.kinds[action.kind]?.templateFiles;
  if (!templateFiles) return [];
  let listed: TemplateFiles;
  try {
    listed = await templateFiles({
      sourceDir: action.sourceDir,
      projectRoot: root,
      spec: structuredClone(spec),
    });
  } catch {
    return [];
  }
  const own = actionTemplateContext(action, context);
  return listed.files.flatMap((file) =>
    checkTemplateText(readFileSync(file, 'utf8'), own, {
      file: path.relative(root, file),
      hint: listed.hint,
    }),
  );
}

export async function validateCommand(
  options: GlobalOptions,
  builtins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<ValidateData>> {
  const configured = await configureEnvironment(options, builtins);
  const { project, plugins, providers, actions, disabled, templateContext: context } = configured;
  const environment = configured.selected;
  const runnables = readRunnables(configured.runnables, tendCommandNames);
  const notes = [
    ...configured.notes,
    ...runnables.notes,
    ...disabled.map((action) => ({
      message: `${action.ref} is disabled in environment ${environment.name}; not run`,
      location: action.locate(action.disabled !== undefined ? ['disabled'] : ['environments']),
    })),
  ];
  const resolvedProviders = providers.map((entry) => ({
    name: entry.name,
    config: resolveProviderConfig(entry, context),
  }));
  const specs = actions.map((action) =>
    checkResolvedSpec(action, resolveActionSpec(action, context, { keepActionOutputs: true }), plugins),
  );
  const problems = (
    await Promise.all(
      actions.map((action, i) => templateFileProblems(project.root, action, specs[i], context, plugins)),
    )
  ).flat();
  problems.push(...runnables.problems);
  if (problems.length > 0) throw configError(sortProblems(problems));
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
    ...(runnables.workflows.length > 0
      ? {
          workflows: runnables.workflows.map((w) => {
            const { file, line } = w.source.locate([]);
            return { name: w.name, steps: w.steps.length, file, line };
          }),
        }
      : {}),
    ...(runnables.commands.length > 0
      ? {
          commands: runnables.commands.map((c) => {
            const { file, line } = c.source.locate([]);
            return { name: c.name, runAs: `tend ${c.topLevel ? '' : 'command '}${c.name}`, file, line };
          }),
        }
      : {}),
    ...(notes.length > 0 ? { notes: notes.map(({ message, location }) => ({ message, ...location })) } : {}),
  };
  const table = formatTable(
    ['ACTION', 'TYPE', 'FILE', 'DEPENDENCIES'],
    data.actions.map((a) => [a.ref, a.type, `${a.file}:${a.line}`, a.dependencies.join(', ') || '-']),
  );
  const count = data.actions.length;
  const human = [
    `project ${data.project}: environment ${data.environment}, ${namespaceHeader(data.namespace, resolvedProviders)}, ` +
      `providers ${data.providers.join(', ') || '(none)'}`,
    '',
    count > 0 ? table : '(no actions)',
    '',
    ...(data.workflows ?? []).map(
      (w) => `workflow ${w.name}: ${w.steps} step(s), ${w.file}:${w.line} (tend workflow ${w.name})`,
    ),
    ...(data.commands ?? []).map((c) => `command ${c.name}: ${c.file}:${c.line} (${c.runAs})`),
    ...(data.workflows || data.commands ? [''] : []),
    ...(data.notes ?? []).map((note) => `note: ${note.file}:${note.line}:${note.column}: ${note.message}`),
    ...(data.notes ? [''] : []),
    `configuration valid: ${count} action${count === 1 ? '' : 's'}`,
  ].join('\n');
  return { data, human, exitCode: ExitCode.ok };
}
