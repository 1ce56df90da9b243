/**
 * `tend status`: the environment and every action's status, read-only. Providers report the
 * environment with `getEnvironmentStatus` (never creating it); actions with getStatus/getResult.
 */
import path from 'node:path';
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { toTendError } from '../errors.js';
import { ActionGraph } from '../graph/graph.js';
import { statusHandler } from '../graph/solver.js';
import { plannedCleanup } from '../remote/cleanup-plan.js';
import type { PlanItemView } from '../api/cleanup.js';
import { actionVersions, openProject, resolveAction, startSession } from './context.js';

export interface StatusData {
  sessionId: string;
  project: string;
  environment: string;
  namespace: string;
  providers: { name: string; ready: boolean; detail?: Record<string, unknown> }[];
  actions: {
    ref: string;
    version: string;
    state: string;
    outputs?: Record<string, string>;
    /** Why it is not ready, when its handler says. */
    reason?: string;
    /** Its log file, relative to the project root, when it has one. */
    logFile?: string;
    error?: string;
  }[];
  /** The server's next cleanup decision for this environment (when a server is configured). */
  cleanup?: PlanItemView | null;
}

/** For each action that is not ready (or paused) and says why: the reason and where its log is. */
function notReadyLines(actions: StatusData['actions']): string[] {
  const lines = actions
    .filter((a) => a.reason || a.error)
    .map((a) => {
      const log = a.logFile ? `; log: ${a.logFile}` : '';
      return `  ${a.ref}: ${a.reason ?? a.error}${log}`;
    });
  if (lines.length === 0) return [];
  return ['', actions.every((a) => a.state === 'paused') ? 'paused:' : 'not ready:', ...lines];
}

export async function statusCommand(options: GlobalOptions): Promise<CommandResult<StatusData>> {
  const opened = await openProject(options);
  const { session, router, close } = startSession(opened, 'status', [], { cleanupWarning: false });
  try {
    const providers: StatusData['providers'] = [];
    await router.initProviders();
    for (const provider of router.providers) {
      const status = await router.callProvider(provider, 'getEnvironmentStatus');
      providers.push({
        name: provider.name,
        ready: status.ready,
        ...(status.detail ? { detail: status.detail } : {}),
      });
    }
    const graph = new ActionGraph(opened.actions);
    const order = graph.topologicalOrder();
    const versions = await actionVersions(opened, graph, order);
    const outputs = new Map<string, Record<string, string>>();
    const actions: StatusData['actions'] = [];
    for (const ref of order) {
      const node = graph.get(ref);
      const version = versions.get(ref)!.version;
      try {
        const deps = Object.fromEntries(node.dependencies.map((d) => [d, outputs.get(d) ?? {}]));
        const action = resolveAction(opened, graph, versions, ref, deps);
        const status = await router.callAction(action, statusHandler[node.config.kind], { force: false });
        outputs.set(ref, status.outputs ?? {});
        actions.push({
          ref,
          version,
          state: status.state,
          ...(status.outputs ? { outputs: status.outputs } : {}),
          ...(status.state !== 'ready' && status.reason ? { reason: status.reason } : {}),
          ...(status.logFile ? { logFile: path.relative(opened.project.root, status.logFile) } : {}),
        });
      } catch (error) {
        // A dependency's output that does not exist yet makes the status unknown, not an error.
        actions.push({ ref, version, state: 'unknown', error: toTendError(error).message });
      }
    }
    const streamed = await close({});
    // A server that just refused the connection is down: asking it about cleanup would only wait.
    const cleanup = streamed?.gaveUpRefused
      ? undefined
      : await plannedCleanup({
          server: opened.project.server,
          project: opened.project.name,
          environment: opened.environment.name,
          namespace: opened.environment.namespace,
        });
    const human = [
      `project ${opened.project.name}, environment ${opened.environment.name}, ${opened.configuration.namespaceHeader(opened.providers)}`,
      ...providers.map((p) => `provider ${p.name}: ${p.ready ? 'ready' : 'not ready'}`),
      ...(cleanup ? [cleanup.line] : []),
      '',
      formatTable(
        ['ACTION', 'VERSION', 'STATE'],
        actions.map((a) => [a.ref, a.version, a.state]),
      ),
      ...notReadyLines(actions),
    ].join('\n');
    return {
      exitCode: 0,
      human,
      data: {
        sessionId: session.id,
        project: opened.project.name,
        environment: opened.environment.name,
        namespace: opened.environment.namespace,
        providers,
        actions,
        ...(cleanup ? { cleanup: cleanup.decision } : {}),
      },
    };
  } catch (error) {
    await close({ error });
    throw error;
  }
}
