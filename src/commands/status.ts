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
import type { VersionedAction } from '../graph/version.js';
import type { Router } from '../router/router.js';
import {
  actionVersions,
  openProject,
  resolveAction,
  startSession,
  whileHashing,
  type OpenedProject,
} from './context.js';

export interface StatusData {
  sessionId: string;
  project: string;
  environment: string;
  /** The environment's namespace (`${environment.namespace}`). */
  namespace: string;
  /** The namespace objects go to: a provider's own, else `namespace`. */
  appNamespace: string;
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

interface ActionStatus {
  entry: StatusData['actions'][number];
  /** What its dependents resolve with: none when its status could not be read. */
  outputs: Record<string, string>;
}

/** One action's status, once its dependencies' are in; never rejects (a failure is its `error`). */
async function actionStatus(
  opened: OpenedProject,
  graph: ActionGraph,
  versions: Map<string, VersionedAction>,
  router: Router,
  ref: string,
  dependencies: Promise<ActionStatus>[],
): Promise<ActionStatus> {
  const node = graph.get(ref);
  const version = versions.get(ref)!.version;
  try {
    const deps = Object.fromEntries(
      (await Promise.all(dependencies)).map((d, i) => [node.dependencies[i]!, d.outputs]),
    );
    const action = resolveAction(opened, graph, versions, ref, deps);
    const status = await router.callAction(action, statusHandler[node.config.kind], { force: false });
    return {
      outputs: status.outputs ?? {},
      entry: {
        ref,
        version,
        state: status.state,
        ...(status.outputs ? { outputs: status.outputs } : {}),
        ...(status.state !== 'ready' && status.reason ? { reason: status.reason } : {}),
        ...(status.logFile ? { logFile: path.relative(opened.project.root, status.logFile) } : {}),
      },
    };
  } catch (error) {
    // A dependency's output that does not exist yet makes the status unknown, not an error.
    return { outputs: {}, entry: { ref, version, state: 'unknown', error: toTendError(error).message } };
  }
}

export async function statusCommand(options: GlobalOptions): Promise<CommandResult<StatusData>> {
  const opened = await openProject(options);
  const { session, router, close } = startSession(opened, 'status', [], { cleanupWarning: false });
  try {
    // The providers connect and are asked while the versions are computed.
    const graph = new ActionGraph(opened.actions);
    const order = graph.topologicalOrder();
    const [providers, versions] = await whileHashing(
      router.initProviders().then(() =>
        Promise.all(
          router.providers.map(async (provider) => {
            const status = await router.callProvider(provider, 'getEnvironmentStatus');
            return {
              name: provider.name,
              ready: status.ready,
              ...(status.detail ? { detail: status.detail } : {}),
            };
          }),
        ),
      ),
      () => actionVersions(opened, graph, order),
    );
    // Each action's status as soon as its dependencies' are in (their outputs resolve it): the
    // cluster is asked about independent actions at once. Listed in the graph's order.
    const statuses = new Map<string, Promise<ActionStatus>>();
    for (const ref of order) {
      const dependencies = graph.get(ref).dependencies.map((d) => statuses.get(d)!);
      statuses.set(ref, actionStatus(opened, graph, versions, router, ref, dependencies));
    }
    const actions = (await Promise.all(statuses.values())).map((s) => s.entry);
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
        appNamespace: opened.configuration.targetNamespace(opened.providers),
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
