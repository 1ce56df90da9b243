/**
 * `tend workflow [name]`: runs a Garden Workflow's steps in order (commands/steps.ts), after
 * writing its `files`, with its `envVars` in every step; without a name, lists the workflows.
 */
import { mkdirSync } from 'node:fs';
import { writeFileAtomic } from '../state/files.js';
import path from 'node:path';
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { configError } from '../config/diagnostics.js';
import { escapesRoot, type WorkflowSpec } from '../config/garden/workflows.js';
import { renderRoots } from '../config/project.js';
import { resolveTemplates, type TemplateContext } from '../config/template.js';
import { ExitCode, TendError } from '../errors.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition } from '../plugin/types.js';
import { handleInterrupts } from './context.js';
import { configureRunnables, stepsOutcome, withSecrets } from './runnables.js';
import { runSteps, type StepOutcome } from './steps.js';
import { monotonicMs } from '../monotonic.js';

export interface WorkflowListData {
  project: string;
  workflows: { name: string; description?: string; steps: number; file: string; line: number }[];
}

export interface WorkflowRunData {
  project: string;
  environment: string;
  workflow: string;
  succeeded: boolean;
  interrupted: boolean;
  durationMs: number;
  steps: StepOutcome[];
}

export async function workflowCommand(
  name: string | undefined,
  options: GlobalOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<WorkflowListData | WorkflowRunData>> {
  const { configured, runnables } = await configureRunnables(options, plugins);
  const { workflows } = runnables;
  if (name === undefined) return listWorkflows(configured.project.name, workflows);
  const workflow = workflows.find((w) => w.name === name);
  if (!workflow) {
    throw new TendError(
      'TEND_WORKFLOW_NOT_FOUND',
      `no Workflow named "${name}"; defined: ${workflows.map((w) => w.name).join(', ') || '(none)'}`,
    );
  }
  if (workflow.notRun) throw configError([workflow.notRun]);
  const started = monotonicMs();
  // A file's `secretName` reads that secret too.
  const secretFiles = (Array.isArray(workflow.files) ? (workflow.files as { secretName?: unknown }[]) : [])
    .filter((file) => typeof file?.secretName === 'string')
    .map((file) => `\${secrets.${String(file.secretName)}}`);
  const rendered = workflow.source.rendered;
  const context = {
    ...(await withSecrets(configured, [workflow.source.value, secretFiles])),
    ...(rendered ? renderRoots(rendered) : {}),
  };
  const root = configured.project.root;
  const env = resolveTemplates(workflow.envVars ?? {}, context, (p) =>
    workflow.source.locate(['envVars', ...p]),
  ) as Record<string, unknown>;
  writeWorkflowFiles(root, workflow, context);
  const interrupts = handleInterrupts();
  try {
    process.stderr.write(`workflow ${workflow.name}: ${workflow.steps.length} step(s)\n`);
    const run = await runSteps(workflow.steps, {
      root,
      source: workflow.source,
      templateContext: context,
      env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])),
      options,
      customCommands: runnables.commands.map((c) => c.name),
      signal: interrupts.signal,
    });
    const outcome = stepsOutcome(`workflow ${workflow.name}`, run, started);
    const data: WorkflowRunData = {
      project: configured.project.name,
      environment: configured.environment.name,
      workflow: workflow.name,
      ...outcome.summary,
    };
    return { data, human: outcome.human, exitCode: outcome.exitCode };
  } finally {
    interrupts.dispose();
  }
}

function listWorkflows(project: string, workflows: readonly WorkflowSpec[]): CommandResult<WorkflowListData> {
  const data: WorkflowListData = {
    project,
    workflows: workflows.map((w) => {
      const at = w.source.locate([]);
      return {
        name: w.name,
        ...(w.description ? { description: w.description } : {}),
        steps: w.steps.length,
        file: at.file,
        line: at.line,
      };
    }),
  };
  const human =
    data.workflows.length === 0
      ? `project ${project} has no Workflows (kind: Workflow in a garden.yml file)`
      : formatTable(
          ['WORKFLOW', 'STEPS', 'FILE', 'DESCRIPTION'],
          data.workflows.map((w) => [w.name, String(w.steps), `${w.file}:${w.line}`, w.description ?? '-']),
        );
  return { data, human, exitCode: ExitCode.ok };
}

/** The Workflow's `files`, written before its first step: inside the project root only. */
function writeWorkflowFiles(root: string, workflow: WorkflowSpec, context: TemplateContext): void {
  if (workflow.files === undefined) return;
  const files = resolveTemplates(workflow.files, context, (p) => workflow.source.locate(['files', ...p])) as {
    path: string;
    data?: unknown;
    secretName?: string;
  }[];
  files.forEach((file, i) => {
    const location = workflow.source.locate(['files', i, 'path']);
    // A NUL would reach the file system as an exception of its own, not as this error.
    if (String(file.path).includes('\0') || escapesRoot(String(file.path))) {
      throw new TendError('TEND_CONFIG_INVALID', `files: ${file.path} is not inside the project root`, {
        location,
      });
    }
    let data = file.data;
    if (file.secretName !== undefined) {
      data = resolveTemplates(`\${secrets.${file.secretName}}`, context, () => location);
    }
    const target = path.join(root, file.path);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileAtomic(target, String(data ?? ''));
  });
}
