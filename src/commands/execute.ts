/**
 * `tend build|deploy|test|run [names…]`: prepares the environment, then solves the graph for the
 * named actions of that kind (all of them when none are named) and their dependencies.
 */
import { OutputCollector, type ActionOutput } from '../cli/action-output.js';
import { ProgressReporter, summarize } from '../cli/progress.js';
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { isGardenFile } from '../config/files.js';
import { whereDisabled } from '../config/action-variables.js';
import { actionRef, formatLocation, type ActionConfig } from '../config/project.js';
import type { TemplateContext } from '../config/template-context.js';
import { ExitCode, TendError, toTendError } from '../errors.js';
import { ActionGraph } from '../graph/graph.js';
import type { VersionedAction } from '../graph/version.js';
import { solve, type ActionOutcome } from '../graph/solver.js';
import { builtinPlugins } from '../plugins/builtin.js';
import { forgetResults } from '../plugin/results.js';
import type { ActionKind, PluginDefinition } from '../plugin/types.js';
import { resumeProviders } from './resume.js';
import {
  actionVersions,
  checkActionTemplates,
  openProject,
  resolveAction,
  startSession,
  whileHashing,
  type CommandSession,
  type OpenedProject,
} from './context.js';
import { monotonicMs } from '../monotonic.js';

export type ExecuteVerb = 'build' | 'deploy' | 'test' | 'run';
export const kindOf: Record<ExecuteVerb, ActionKind> = {
  build: 'Build',
  deploy: 'Deploy',
  test: 'Test',
  run: 'Run',
};

export interface ExecuteOptions extends GlobalOptions {
  /** Keep running: rebuild, redeploy and re-test what each file change affects, until Ctrl-C. */
  watch?: boolean;
  force?: boolean;
  /** Build every Build the actions need again, even when ready for its version (Garden's `--force-build`). */
  forceBuild?: boolean;
  concurrency?: number;
  /** Print the output of every action that ran, passing ones too. */
  showOutput?: boolean;
}

export interface ExecuteData {
  sessionId: string;
  project: string;
  environment: string;
  namespace: string;
  durationMs: number;
  /** What was resumed at the start (the environment was paused), one line per provider. */
  resumed?: string[];
  /** When there was nothing to run (no action of the kind in the project): why, and how to declare one. */
  nothingToRun?: string[];
  /** The named actions disabled in the environment, not run: why, where, and how to run them. */
  notRun?: string[];
  actions: {
    ref: string;
    version: string;
    state: ActionOutcome['state'];
    durationMs: number;
    outputs: Record<string, string>;
    error?: { code: string; message: string };
    /** With --show-output: what the action printed in this session. */
    output?: ActionOutput;
  }[];
}

/**
 * The disabled Runs a command runs anyway: the ones `tend run <names> --force` names. Garden's
 * `run --force` runs a disabled Run; its `deploy`, `test` and `build` run no disabled action.
 */
export function forcedRefs(verb: ExecuteVerb, names: string[], options: ExecuteOptions): string[] {
  return verb === 'run' && options.force ? names.map((name) => actionRef('Run', name)) : [];
}

export interface RequestedActions {
  refs: string[];
  /** The named Runs and Deploys disabled in the environment, not run: one line each, saying why and where. */
  notRun: string[];
}

export function requestedRefs(opened: OpenedProject, kind: ActionKind, names: string[]): RequestedActions {
  const ofKind = opened.actions.filter((a) => a.kind === kind);
  if (names.length === 0) return { refs: ofKind.map((a) => a.ref).sort(), notRun: [] };
  const requested: RequestedActions = { refs: [], notRun: [] };
  for (const name of names) {
    const ref = actionRef(kind, name);
    if (ofKind.some((a) => a.ref === ref)) {
      requested.refs.push(ref);
      continue;
    }
    const disabled = opened.configuration.disabled.find((a) => a.ref === ref);
    if (!disabled) {
      throw new TendError(
        'TEND_ACTION_NOT_FOUND',
        `no ${kind} action named "${name}"; defined: ${ofKind.map((a) => a.name).join(', ') || '(none)'}`,
      );
    }
    requested.notRun.push(disabledNotRun(disabled, opened.environment.name));
  }
  return requested;
}

/**
 * Why a named action disabled in the environment is not run, as Garden's commands have it: a Run
 * is not run without --force, a Deploy not deployed (Garden says so and goes on); a Test or a
 * Build named is an error.
 */
function disabledNotRun(action: ActionConfig, environment: string): string {
  const location = whereDisabled(action, environment);
  const disabled = `${action.ref} is disabled in environment ${environment}`;
  if (action.kind === 'Run')
    return `${disabled} (${formatLocation(location)}); not run: pass --force to run it anyway`;
  if (action.kind === 'Deploy')
    return `${disabled} (${formatLocation(location)}); not deployed: enable it in this environment to deploy it`;
  throw new TendError(
    'TEND_ACTION_DISABLED',
    `${disabled}: a disabled ${action.kind} is not run, --force or not`,
    {
      location,
      detail: {
        hint: `enable it in environment ${environment} (its disabled: or environments:), or choose an environment that enables it with --env`,
      },
    },
  );
}

/**
 * What `tend run` (no names) says in a project without Run actions, rather than "0 action(s)":
 * there are none, and how to declare one, with the types its environment's providers offer. The
 * command still prepares the environment and records its session, and exits 0 (a pipeline's
 * `tend build && tend test` keeps working in a project without Builds).
 */
export function nothingToRun(opened: OpenedProject, kind: ActionKind): string[] {
  const types = new Set(
    opened.providers.flatMap((p) => p.plugin.actionTypes.filter((t) => t.kinds[kind]).map((t) => t.name)),
  );
  const declared = (['Build', 'Deploy', 'Test', 'Run'] as const)
    .map((k) => [k, opened.actions.filter((a) => a.kind === k).length] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k}`);
  // A Garden project's actions are declared in its own files, as Garden has them.
  const garden = isGardenFile(opened.project.file);
  return [
    `No ${kind} actions in project ${opened.project.name}: nothing to run` +
      (declared.length > 0 ? ` (it declares ${declared.join(', ')}).` : '.'),
    `Declare one in a ${garden ? '*.garden.yml' : '*.tend.yml'} file: kind: ${kind}, type: ` +
      (types.size > 0
        ? `${[...types].join(' | ')} (the ${kind} types of this environment's providers)`
        : `<type> (no provider of this environment offers ${kind} actions)`) +
      `, name, spec — see docs/${garden ? 'garden' : 'configuration'}.md.`,
  ];
}

/** One solve of the requested actions in an open session: what a command (or one watch round) runs. */
export interface ExecuteRun {
  outcomes: ActionOutcome[];
  human: string;
  actions: ExecuteData['actions'];
  counts: { succeeded: number; cached: number; failed: number; aborted: number };
}

/** The action graph and the versions of the requested actions, computed before a run. */
export interface PlannedRun {
  graph: ActionGraph;
  versions: Map<string, VersionedAction>;
}

/** The graph of the project's actions and the versions of `refs` and what they need. */
export async function planRun(opened: OpenedProject, refs: string[]): Promise<PlannedRun> {
  const graph = new ActionGraph(opened.actions);
  return { graph, versions: await actionVersions(opened, graph, refs) };
}

export async function runActions(
  opened: OpenedProject,
  session: CommandSession,
  refs: string[],
  options: {
    force: boolean;
    forceBuild?: boolean;
    concurrency: number;
    showOutput: boolean;
    planned?: PlannedRun;
  },
): Promise<ExecuteRun> {
  const started = monotonicMs();
  const output = options.showOutput ? new OutputCollector(session.session.bus) : undefined;
  // Results as they are now (another process may have added or removed some since a watch's last round).
  forgetResults();
  try {
    const { graph, versions } = options.planned ?? (await planRun(opened, refs));
    const outcomes = await solve({
      graph,
      versions,
      requested: refs,
      router: session.router,
      bus: session.session.bus,
      force: options.force,
      forceBuild: Boolean(options.forceBuild),
      concurrency: options.concurrency,
      signal: session.signal,
      projectRoot: opened.project.root,
      resolve: (ref, deps) => resolveAction(opened, graph, versions, ref, deps),
    });
    const list = [...outcomes.values()];
    const count = (s: ActionOutcome['state']) => list.filter((o) => o.state === s).length;
    const durationMs = Math.round(monotonicMs() - started);
    return {
      outcomes: list,
      human: [...(output ? [output.render(list)] : []), summarize(list, durationMs)].join('\n'),
      actions: list.map((o) => ({
        ref: o.ref,
        version: o.version,
        state: o.state,
        durationMs: o.durationMs,
        outputs: o.outputs,
        ...(o.error ? { error: { code: o.error.code, message: o.error.message } } : {}),
        ...(output ? { output: output.of(o.ref) } : {}),
      })),
      counts: {
        succeeded: count('ready'),
        cached: count('cached'),
        failed: count('failed'),
        aborted: count('aborted'),
      },
    };
  } finally {
    output?.finish();
    forgetResults(); // closes this run's result journals: their one fsync
  }
}

/**
 * What `tend build|deploy|test|run` does before it runs anything: the project, the requested
 * actions (their templates checked before a session exists: a template error runs nothing), the
 * session and its progress output, and the providers initialised and their environments prepared
 * — before actions are resolved, so the namespace is recorded even if resolving fails.
 */
export async function openExecution(
  verb: ExecuteVerb,
  names: string[],
  options: ExecuteOptions,
  plugins: PluginDefinition[],
): Promise<{
  opened: OpenedProject;
  refs: string[];
  /** The named actions disabled in the environment, not run (RequestedActions). */
  notRun: string[];
  session: CommandSession;
  progress: ProgressReporter;
  /** What was resumed at the start (the environment was paused), one line per provider. */
  resumed: string[];
  /** The requested actions' graph and versions, computed while the environment was checked for a pause. */
  planned: PlannedRun;
}> {
  const opened = await openProject(options, plugins, { forceEnabled: forcedRefs(verb, names, options) });
  const { refs, notRun } = requestedRefs(opened, kindOf[verb], names);
  checkActionTemplates(opened, refs);
  const session = startSession(opened, verb, names);
  const progress = new ProgressReporter(session.session.bus);
  let resumed: string[];
  let planned: PlannedRun;
  try {
    await session.router.initProviders();
    // What each provider's preparation gives is `${providers.<name>.outputs.*}` for the actions.
    const providers: NonNullable<TemplateContext['providers']> = {};
    for (const provider of session.router.providers) {
      const prepared = await session.router.callProvider(provider, 'prepareEnvironment');
      providers[provider.name] = { outputs: prepared.outputs ?? {} };
    }
    opened.configuration.addProviderOutputs(providers);
    // A paused environment is resumed before anything runs in it: nobody meets one by surprise.
    // The versions are computed meanwhile.
    [resumed, planned] = await whileHashing(
      verb === 'build' ? Promise.resolve([]) : resumeProviders(session.router),
      () => planRun(opened, refs),
    );
    for (const line of resumed)
      progress.note(`resumed the paused environment ${opened.environment.name}: ${line}`);
  } catch (caught) {
    progress.finish();
    const error = session.signal.aborted ? toTendError(session.signal.reason) : caught;
    await session.close({ error });
    throw error;
  }
  return { opened, refs, notRun, session, progress, resumed, planned };
}

/**
 * 0 when everything is ready or cached; 2 when an action failed because of the project's
 * configuration (an error whose code means exit 2 in docs/errors.md: a manifest that is not
 * valid, a template key that does not exist, …) — fixing the files is what helps; else 1.
 */
export function exitCodeOf(outcomes: readonly ActionOutcome[]): number {
  const failures = outcomes.filter((o) => o.state === 'failed' || o.state === 'aborted');
  if (failures.length === 0) return ExitCode.ok;
  return failures.some((o) => o.error?.exitCode === ExitCode.usage) ? ExitCode.usage : ExitCode.actionFailed;
}

export async function executeCommand(
  verb: ExecuteVerb,
  names: string[],
  options: ExecuteOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<ExecuteData>> {
  const started = monotonicMs();
  const { opened, refs, notRun, session, progress, resumed, planned } = await openExecution(
    verb,
    names,
    options,
    plugins,
  );
  try {
    const run = await runActions(opened, session, refs, {
      force: Boolean(options.force),
      forceBuild: Boolean(options.forceBuild),
      concurrency: options.concurrency ?? 8,
      showOutput: Boolean(options.showOutput),
      planned,
    });
    progress.finish();
    await session.close({ counts: run.counts });
    const durationMs = Math.round(monotonicMs() - started);
    const nothing = names.length === 0 && refs.length === 0 ? nothingToRun(opened, kindOf[verb]) : undefined;
    return {
      // Ctrl-C: 130, as shells report a command stopped by SIGINT.
      exitCode: session.signal.aborted ? ExitCode.interrupted : exitCodeOf(run.outcomes),
      human: [...notRun, ...(nothing ?? [run.human])].join('\n'),
      data: {
        sessionId: session.session.id,
        project: opened.project.name,
        environment: opened.environment.name,
        namespace: opened.environment.namespace,
        durationMs,
        ...(resumed.length > 0 ? { resumed } : {}),
        ...(nothing ? { nothingToRun: nothing } : {}),
        ...(notRun.length > 0 ? { notRun } : {}),
        actions: run.actions,
      },
    };
  } catch (caught) {
    progress.finish();
    // Whatever failed after Ctrl-C failed because of it (exit code 130).
    const error = session.signal.aborted ? toTendError(session.signal.reason) : caught;
    await session.close({ error });
    throw error;
  }
}
