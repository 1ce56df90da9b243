/**
 * The steps of a Garden Workflow or custom Command, run in order as Garden runs them
 * (docs/garden.md#workflows-and-custom-commands): `when` (onSuccess, onError, always, never),
 * `skip`, `continueOnError`; each step's templates resolved just before it runs, with the steps
 * before it as `${steps.<name>.log}` and `${steps.<name>.outputs.*}`. A Garden command runs as a
 * child `tend` process with the command's global flags; a script with `sh -c`; a program as it
 * is. Each in its own process group, in the project root: Ctrl-C stops the running step (the
 * child tend stops what it started) and the rest are not run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatDuration } from '../cli/progress.js';
import type { GlobalOptions } from '../cli/output.js';
import { tendCommandLine } from '../config/garden/step-commands.js';
import {
  isCondition,
  type GardenRunnable,
  type StepCondition,
  type StepSpec,
} from '../config/garden/workflows.js';
import type { ConfigPath } from '../config/project.js';
import { resolveTemplates, type TemplateContext } from '../config/template.js';
import { TendError, toTendError } from '../errors.js';
import { runCommand } from '../plugins/exec/process.js';
import { monotonicMs } from '../monotonic.js';

export type StepState = 'succeeded' | 'failed' | 'skipped' | 'not run' | 'interrupted';

export interface StepOutcome {
  name: string;
  description?: string;
  state: StepState;
  /** The exit code of its process (a failed step that ran one). */
  exitCode?: number;
  durationMs?: number;
  /** Why it failed, or why it was not run. */
  reason?: string;
  /** It failed and `continueOnError` let the steps after it run as if it had not. */
  continued?: boolean;
}

export interface StepsRun {
  steps: StepOutcome[];
  /** A step failed (without continueOnError), or Ctrl-C. */
  failed: boolean;
  interrupted: boolean;
}

export interface StepsContext {
  root: string;
  source: GardenRunnable;
  /** What the steps' templates read (var, environment, …; a Command's args and opts). */
  templateContext: TemplateContext;
  /** The Workflow's `envVars`, for every step. */
  env: Record<string, string>;
  /** The global flags of this command, for each child `tend`. */
  options: GlobalOptions;
  customCommands: readonly string[];
  signal: AbortSignal;
}

interface StepResult {
  number: number;
  log: string;
  outputs: Record<string, unknown>;
}

/** At most this much of a step's output is kept for `${steps.<name>.log}`. */
const maxLogChars = 1024 * 1024;
/**
 * How deep Workflows and Commands may run one another through their steps (`TEND_STEP_DEPTH`
 * counts it): a Command whose step runs itself would otherwise start tend processes forever.
 */
const maxStepDepth = 8;

/** Runs the steps; prints each one's name as it starts and its outcome on stderr. */
export async function runSteps(steps: readonly StepSpec[], context: StepsContext): Promise<StepsRun> {
  const modifiers = steps.map((step) => stepModifiers(step, context));
  const errors = new Set<number>();
  const results: Record<string, StepResult> = {};
  const outcomes: StepOutcome[] = [];
  let interrupted = false;
  for (const [index, step] of steps.entries()) {
    const base = { name: step.name, ...(step.description ? { description: step.description } : {}) };
    const when = modifiers[index]!.when;
    if (interrupted) {
      outcomes.push({ ...base, state: 'not run', reason: 'interrupted' });
      continue;
    }
    if (isDropped(index, modifiers, errors)) {
      const reason =
        when === 'never'
          ? 'when: never'
          : when === 'onError'
            ? 'when: onError, and no step before it failed'
            : 'a step before it failed';
      outcomes.push({ ...base, state: 'not run', reason });
      continue;
    }
    const header = `step ${index + 1}/${steps.length} ${step.name}${step.description ? ` — ${step.description}` : ''}`;
    if (modifiers[index]!.skip) {
      process.stderr.write(`${header}: skipped\n`);
      results[step.name] = { number: index + 1, log: '', outputs: {} };
      outcomes.push({ ...base, state: 'skipped' });
      continue;
    }
    process.stderr.write(`${header}\n`);
    const started = monotonicMs();
    const ran = await runStep(step, { ...context.templateContext, steps: stepsContext(results) }, context);
    const durationMs = Math.round(monotonicMs() - started);
    results[step.name] = { number: index + 1, log: ran.log, outputs: ran.outputs };
    if (context.signal.aborted) {
      interrupted = true;
      outcomes.push({ ...base, state: 'interrupted', durationMs, reason: 'stopped by Ctrl-C' });
      process.stderr.write(`${header}: interrupted after ${formatDuration(durationMs)}\n`);
      continue;
    }
    if (ran.error === undefined) {
      outcomes.push({ ...base, state: 'succeeded', durationMs, ...exitCodeOf(ran) });
      process.stderr.write(`${header}: succeeded in ${formatDuration(durationMs)}\n`);
      continue;
    }
    const continued = modifiers[index]!.continueOnError;
    if (!continued) errors.add(index);
    outcomes.push({
      ...base,
      state: 'failed',
      durationMs,
      ...exitCodeOf(ran),
      reason: ran.error,
      ...(continued ? { continued: true } : {}),
    });
    process.stderr.write(
      `${header}: failed in ${formatDuration(durationMs)}: ${ran.error}` +
        (continued ? ' (continueOnError: the steps after it run as if it had succeeded)' : '') +
        '\n',
    );
  }
  return { steps: outcomes, failed: errors.size > 0 || interrupted, interrupted };
}

function exitCodeOf(ran: { exitCode?: number }): { exitCode?: number } {
  return ran.exitCode !== undefined ? { exitCode: ran.exitCode } : {};
}

/** `steps.<name>.log` and `.outputs` of the steps that ran (or were skipped) before. */
function stepsContext(results: Record<string, StepResult>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(results).map(([name, r]) => [name, { number: r.number, log: r.log, outputs: r.outputs }]),
  );
}

interface Modifiers {
  when: StepCondition;
  skip: boolean;
  continueOnError: boolean;
}

/** A step's `when`, `skip` and `continueOnError`, resolved before any step runs (as Garden resolves them). */
function stepModifiers(step: StepSpec, context: StepsContext): Modifiers {
  const resolve = (key: 'when' | 'skip' | 'continueOnError') =>
    resolveTemplates(step[key], context.templateContext, () => context.source.locate([...step.path, key]));
  const when = resolve('when') ?? 'onSuccess';
  if (!isCondition(when)) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `when must be one of onSuccess, onError, always, never (got ${JSON.stringify(when)})`,
      {
        location: context.source.locate([...step.path, 'when']),
      },
    );
  }
  const flag = (key: 'skip' | 'continueOnError') => {
    const value = resolve(key) ?? false;
    if (typeof value !== 'boolean') {
      throw new TendError(
        'TEND_CONFIG_INVALID',
        `${key} must be true or false (got ${JSON.stringify(value)})`,
        {
          location: context.source.locate([...step.path, key]),
        },
      );
    }
    return value;
  };
  return { when, skip: flag('skip'), continueOnError: flag('continueOnError') };
}

/**
 * Whether a step is left out, as Garden decides (its shouldBeDropped): `always` runs, `never`
 * does not; `onError` runs after a failure of a step that is not itself onError, unless a
 * step other than onError/never came between the failure's onError steps and this one;
 * `onSuccess` runs while nothing has failed.
 */
export function isDropped(
  index: number,
  steps: readonly { when: StepCondition }[],
  errors: ReadonlySet<number>,
): boolean {
  const { when } = steps[index]!;
  if (when === 'always') return false;
  if (when === 'never') return true;
  const failures = [...errors].filter((i) => steps[i]!.when !== 'onError' && i < index);
  const lastError = failures.length > 0 ? Math.max(...failures) : undefined;
  if (when !== 'onError') return lastError !== undefined;
  if (lastError === undefined) return true;
  const earlierOnError = steps
    .map((s, i) => i)
    .filter((i) => steps[i]!.when === 'onError' && lastError < i && i < index);
  return earlierOnError.some((onError) =>
    steps.some((s, i) => onError < i && i < index && s.when !== 'never' && s.when !== 'onError'),
  );
}

interface RanStep {
  log: string;
  outputs: Record<string, unknown>;
  exitCode?: number;
  /** Why it failed. */
  error?: string;
}

/** A step's templates resolved, then the step run; its failure is its result, never thrown. */
async function runStep(
  step: StepSpec,
  templateContext: TemplateContext,
  context: StepsContext,
): Promise<RanStep> {
  const log = new StepLog(Boolean(context.options.json));
  const resolve = <T>(value: T, at: ConfigPath) =>
    resolveTemplates(value, templateContext, (p) => context.source.locate([...step.path, ...at, ...p]));
  try {
    if (step.script !== undefined) {
      const script = resolve(step.script, ['script']);
      const env = { ...context.env, ...envVars(resolve(step.envVars, ['envVars'])) };
      const ran = await run(['sh', '-c', String(script)], env, context, log);
      const outputs = { exitCode: ran.exitCode, stdout: log.stdout(), stderr: log.stderr() };
      return finished(log, outputs, ran.exitCode, `the script exited with code ${ran.exitCode}`);
    }
    if (step.exec !== undefined) {
      const exec = resolve(step.exec, ['exec']) as { command: unknown[]; env?: unknown };
      const command = exec.command.map(String);
      const ran = await run(command, { ...context.env, ...envVars(exec.env) }, context, log);
      const outputs = { command, exitCode: ran.exitCode };
      return finished(log, outputs, ran.exitCode, `${command.join(' ')} exited with code ${ran.exitCode}`);
    }
    const words = resolve(step.command, [step.key]);
    return await runTendCommand(words, step, context, log);
  } catch (error) {
    const tendError = toTendError(error);
    if (tendError.code !== 'TEND_INTERRUPTED') log.line('stderr', `error: ${tendError.toString()}`, true);
    return { log: log.text(), outputs: {}, error: tendError.toString() };
  }
}

function finished(
  log: StepLog,
  outputs: Record<string, unknown>,
  exitCode: number,
  failure: string,
): RanStep {
  return { log: log.text(), outputs, exitCode, ...(exitCode !== 0 ? { error: failure } : {}) };
}

/** A Garden command as a child `tend`; its `--json` data (through TEND_RESULT_FILE) is the step's outputs. */
async function runTendCommand(
  words: unknown,
  step: StepSpec,
  context: StepsContext,
  log: StepLog,
): Promise<RanStep> {
  const at = context.source.locate([...step.path, step.key]);
  if (!Array.isArray(words)) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `a step's command must be a list of words (got ${typeof words})`,
      {
        location: at,
      },
    );
  }
  // Garden leaves out empty words (a template that resolved to nothing).
  const given = words.filter((w) => w !== '' && w !== null && w !== undefined).map(String);
  const line = tendCommandLine(given, context.customCommands);
  if ('problem' in line) throw new TendError('TEND_CONFIG_UNSUPPORTED', line.problem, { location: at });
  const depth = Number(process.env.TEND_STEP_DEPTH ?? 0) + 1;
  if (depth > maxStepDepth) {
    throw new TendError(
      'TEND_CONFIG_INVALID',
      `tend ${line.argv.join(' ')}: Workflows and Commands run one another ${maxStepDepth} deep; is one running itself?`,
      { location: at },
    );
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-step-'));
  const resultFile = path.join(dir, 'result.json');
  try {
    log.line('stderr', `tend ${line.argv.join(' ')}`, true);
    const ran = await run(
      [process.execPath, tendEntry(), ...globalFlags(context), ...line.argv],
      { ...context.env, TEND_RESULT_FILE: resultFile, TEND_STEP_DEPTH: String(depth) },
      context,
      log,
    );
    const result = readResult(resultFile);
    const outputs = { ...commandOutputs(result?.data), success: ran.exitCode === 0 };
    const message = result?.error?.message ?? `tend ${line.argv.join(' ')} exited with code ${ran.exitCode}`;
    return finished(log, outputs, ran.exitCode, message);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function readResult(file: string): { data?: unknown; error?: { message: string } } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { data?: unknown; error?: { message: string } };
  } catch {
    return undefined;
  }
}

/**
 * A tend command's data as a step's outputs, with Garden's maps of the actions it ran by kind
 * and name (`outputs.build.api.version`, `outputs.deploy.web.outputs.url`).
 */
function commandOutputs(data: unknown): Record<string, unknown> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return {};
  const out: Record<string, unknown> = { ...data };
  const actions = (data as { actions?: unknown }).actions;
  if (!Array.isArray(actions)) return out;
  for (const action of actions as {
    ref?: unknown;
    state?: unknown;
    version?: unknown;
    outputs?: unknown;
  }[]) {
    if (typeof action.ref !== 'string') continue;
    const [kind, name] = action.ref.split('.', 2) as [string, string];
    const byName = (out[kind] ??= {}) as Record<string, unknown>;
    byName[name] = { state: action.state, version: action.version, outputs: action.outputs ?? {} };
  }
  return out;
}

/** This command's global flags for a child tend: the same project, environment, variables and cluster. */
function globalFlags(context: StepsContext): string[] {
  const { options } = context;
  return [
    '--root',
    context.root,
    ...(context.templateContext.environment.name ? ['--env', context.templateContext.environment.name] : []),
    ...(options.var ?? []).flatMap((v) => ['--var', v]),
    ...(options.varFile ?? []).flatMap((f) => ['--var-file', path.resolve(f)]),
    ...(options.kubeconfig ? ['--kubeconfig', path.resolve(options.kubeconfig)] : []),
    ...(options.context ?? []).flatMap((c) => ['--context', c]),
    ...(options.debug ? ['--debug'] : []),
  ];
}

/** bin/tend.js: beside the sources (src/commands/), the bundle (dist/cli/) or tsc's output (dist/src/commands/). */
function tendEntry(): string {
  const candidates = ['../../bin/tend.js', '../../../bin/tend.js'].map((p) =>
    fileURLToPath(new URL(p, import.meta.url)),
  );
  const found = candidates.find((file) => existsSync(file));
  if (!found)
    throw new TendError('TEND_INTERNAL', `bin/tend.js not found (looked at ${candidates.join(', ')})`);
  return found;
}

function envVars(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
}

/** A process in the project root; its output printed as it comes (stdout kept off stdout with --json) and kept. */
async function run(
  command: string[],
  env: Record<string, string>,
  context: StepsContext,
  log: StepLog,
): Promise<{ exitCode: number }> {
  // A script that runs tend must not write into this command's result file.
  const result = await runCommand(
    { command, cwd: context.root, env: { TEND_RESULT_FILE: '', ...env } },
    { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, output: (s, l) => log.line(s, l) },
    context.signal,
    // A child tend given Ctrl-C stops what it started first.
    30_000,
  );
  return { exitCode: result.exitCode };
}

/** A step's output: printed as it comes, and kept (up to maxLogChars) for `${steps.<name>.log}`. */
class StepLog {
  private readonly lines: { stream: 'stdout' | 'stderr'; line: string }[] = [];
  private chars = 0;

  constructor(private readonly json: boolean) {}

  line(stream: 'stdout' | 'stderr', line: string, own = false): void {
    if (stream === 'stderr' || !this.json)
      (stream === 'stdout' ? process.stdout : process.stderr).write(`${line}\n`);
    if (own || this.chars > maxLogChars) return;
    this.chars += line.length + 1;
    this.lines.push({ stream, line });
  }

  text(): string {
    return this.lines.map((l) => l.line).join('\n');
  }

  stdout(): string {
    return this.of('stdout');
  }

  stderr(): string {
    return this.of('stderr');
  }

  private of(stream: 'stdout' | 'stderr'): string {
    return this.lines
      .filter((l) => l.stream === stream)
      .map((l) => l.line)
      .join('\n');
  }
}
