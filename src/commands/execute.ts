/**
 * `tend build|deploy|test|run [names…]`: prepares the environment, then solves the graph for the
 * named actions of that kind (all of them when none are named) and their dependencies.
 */
import { ProgressReporter, summarize } from '../cli/progress.js';
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { actionRef } from '../config/project.js';
import { ExitCode, TendError, toTendError } from '../errors.js';
import { ActionGraph } from '../graph/graph.js';
import { solve, type ActionOutcome } from '../graph/solver.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { ActionKind, PluginDefinition } from '../plugin/types.js';
import { resumeProviders } from './resume.js';
import {
  actionVersions,
  checkActionTemplates,
  openProject,
  resolveAction,
  startSession,
  type OpenedProject,
} from './context.js';

export type ExecuteVerb = 'build' | 'deploy' | 'test' | 'run';
const kindOf: Record<ExecuteVerb, ActionKind> = {
  build: 'Build',
  deploy: 'Deploy',
  test: 'Test',
  run: 'Run',
};

export interface ExecuteOptions extends GlobalOptions {
  force?: boolean;
  concurrency?: number;
}

export interface ExecuteData {
  sessionId: string;
  project: string;
  environment: string;
  namespace: string;
  durationMs: number;
  /** What was resumed at the start (the environment was paused), one line per provider. */
  resumed?: string[];
  actions: {
    ref: string;
    version: string;
    state: ActionOutcome['state'];
    durationMs: number;
    outputs: Record<string, string>;
    error?: { code: string; message: string };
  }[];
}

function requestedRefs(opened: OpenedProject, kind: ActionKind, names: string[]): string[] {
  const ofKind = opened.actions.filter((a) => a.kind === kind);
  if (names.length === 0) return ofKind.map((a) => a.ref).sort();
  return names.map((name) => {
    const ref = actionRef(kind, name);
    if (!ofKind.some((a) => a.ref === ref)) {
      throw new TendError(
        'TEND_ACTION_NOT_FOUND',
        `no ${kind} action named "${name}"; defined: ${ofKind.map((a) => a.name).join(', ') || '(none)'}`,
      );
    }
    return ref;
  });
}

export async function executeCommand(
  verb: ExecuteVerb,
  names: string[],
  options: ExecuteOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<ExecuteData>> {
  const started = performance.now();
  const opened = await openProject(options, plugins);
  const kind = kindOf[verb];
  const refs = requestedRefs(opened, kind, names);
  // Before the session: a template error runs nothing.
  checkActionTemplates(opened, refs);
  const { session, router, signal, close } = startSession(opened, verb, names);
  const progress = new ProgressReporter(session.bus);
  try {
    // Providers first: the environment's namespace is recorded even if resolving actions fails below.
    await router.initProviders();
    for (const provider of router.providers) await router.callProvider(provider, 'prepareEnvironment');
    // A paused environment is resumed before anything runs in it: nobody meets one by surprise.
    const resumed = verb === 'build' ? [] : await resumeProviders(router);
    for (const line of resumed)
      progress.note(`resumed the paused environment ${opened.environment.name}: ${line}`);
    const graph = new ActionGraph(opened.actions);
    const versions = actionVersions(opened, graph, refs);
    const outcomes = await solve({
      graph,
      versions,
      requested: refs,
      router,
      bus: session.bus,
      force: Boolean(options.force),
      concurrency: options.concurrency ?? 8,
      signal,
      resolve: (ref, deps) => resolveAction(opened, graph, versions, ref, deps),
    });
    progress.finish();
    const list = [...outcomes.values()];
    const count = (s: ActionOutcome['state']) => list.filter((o) => o.state === s).length;
    await close({
      counts: {
        succeeded: count('ready'),
        cached: count('cached'),
        failed: count('failed'),
        aborted: count('aborted'),
      },
    });
    const durationMs = Math.round(performance.now() - started);
    const failed = count('failed') + count('aborted') > 0;
    return {
      // Ctrl-C: 130, as shells report a command stopped by SIGINT.
      exitCode: signal.aborted ? ExitCode.interrupted : failed ? ExitCode.actionFailed : ExitCode.ok,
      human: summarize(list, durationMs),
      data: {
        sessionId: session.id,
        project: opened.project.name,
        environment: opened.environment.name,
        namespace: opened.environment.namespace,
        durationMs,
        ...(resumed.length > 0 ? { resumed } : {}),
        actions: list.map((o) => ({
          ref: o.ref,
          version: o.version,
          state: o.state,
          durationMs: o.durationMs,
          outputs: o.outputs,
          ...(o.error ? { error: { code: o.error.code, message: o.error.message } } : {}),
        })),
      },
    };
  } catch (caught) {
    progress.finish();
    // Whatever failed after Ctrl-C failed because of it (exit code 130).
    const error = signal.aborted ? toTendError(signal.reason) : caught;
    await close({ error });
    throw error;
  }
}
