/**
 * What `tend workflow` and `tend command` share: the project's configuration with its Workflows
 * and custom Commands read, the secrets their templates read, the table of steps run.
 */
import { formatTable, type GlobalOptions } from '../cli/output.js';
import { formatDuration } from '../cli/progress.js';
import { configError } from '../config/diagnostics.js';
import { readRunnables, type GardenRunnables } from '../config/garden/workflows.js';
import { readsSecrets, type TemplateContext } from '../config/template.js';
import type { PluginDefinition } from '../plugin/types.js';
import { loadSecrets } from '../remote/secrets.js';
import { configureEnvironment } from './environment-config.js';
import { ExitCode } from '../errors.js';
import type { StepOutcome, StepsRun } from './steps.js';
import { monotonicMs } from '../monotonic.js';

/**
 * tend's own top-level commands (and aliases): a custom Command of one of these names runs as
 * `tend command <name>` only. test/cli checks this list against the argument table.
 */
export const tendCommandNames: readonly string[] = [
  'build',
  'deploy',
  'test',
  'run',
  'status',
  'logs',
  'cleanup',
  'keep-alive',
  'resume',
  'restore',
  'validate',
  'init',
  'completion',
  'schema',
  'events',
  'agent',
  'server',
  'login',
  'environments',
  'envs',
  'secrets',
  'protect',
  'unprotect',
  'workflow',
  'command',
  'help',
];

/** The project's configuration in its environment, with its Workflows and Commands read (problems thrown). */
export async function configureRunnables(options: GlobalOptions, plugins: PluginDefinition[]) {
  const configured = await configureEnvironment(options, plugins);
  const runnables: GardenRunnables = readRunnables(configured.runnables, tendCommandNames);
  if (runnables.problems.length > 0) throw configError(runnables.problems);
  return { configured, runnables };
}

/** The template context with the secrets, when what runs reads them and the configuration did not. */
export async function withSecrets(
  configured: Awaited<ReturnType<typeof configureEnvironment>>,
  value: unknown,
): Promise<TemplateContext> {
  const context = configured.templateContext;
  if (context.secrets || !readsSecrets(value)) return context;
  const secrets = await loadSecrets(configured.project, configured.environment.name);
  return secrets ? { ...context, secrets } : context;
}

/** The steps and how each went, for people. */
export function stepsTable(steps: readonly StepOutcome[]): string {
  return formatTable(
    ['STEP', 'OUTCOME', 'DURATION', 'DETAIL'],
    steps.map((s) => [
      s.name,
      s.state,
      s.durationMs !== undefined ? formatDuration(s.durationMs) : '-',
      [s.reason, s.continued ? '(continueOnError)' : undefined].filter(Boolean).join(' ') || '-',
    ]),
  );
}

/** How a Workflow's or a Command's run went: its data, the steps' table with a last line, its exit code. */
export function stepsOutcome(what: string, run: StepsRun, started: number) {
  const durationMs = Math.round(monotonicMs() - started);
  const verdict = run.interrupted ? 'interrupted' : run.failed ? 'failed' : 'completed';
  return {
    summary: { succeeded: !run.failed, interrupted: run.interrupted, durationMs, steps: run.steps },
    human: [stepsTable(run.steps), `${what} ${verdict} in ${formatDuration(durationMs)}`].join('\n'),
    exitCode: run.interrupted ? ExitCode.interrupted : run.failed ? ExitCode.actionFailed : ExitCode.ok,
  };
}
