/**
 * `tend/testing`: the plugin contract harness, for tend's own plugins and third-party ones. It
 * runs every handler of a plugin through a real tend session and router against a cluster with a
 * request log (kube-sim), one session per handler call, and compares the namespaces the cluster
 * saw requests for with the namespaces the plugin reported in `namespaceStatus` events. A
 * namespace touched but not reported — a plugin calling the API with its own client, say — fails
 * the contract: the harness checks the wire, not the plugin's word (docs/plugin-api.md). Its
 * cleanup conformance kit (cleanup-conformance.ts) checks a plugin's cleanup primitives.
 */
import { openProject, resolveAction, startSession } from '../commands/context.js';
import type { TendEvent } from '../events/catalog.js';
import { ActionGraph } from '../graph/graph.js';
import { computeVersions } from '../graph/version.js';
import { actionHandlerNames, type ActionKind, type Outputs } from '../plugin/types.js';
import type { ActionResults, Router } from '../router/router.js';
import { withKubeconfig } from './kubeconfig.js';
import type { WireLog, WireRequest } from './wire.js';

export { kubeSimWire, type KubeSimAddress, type WireLog, type WireRequest } from './wire.js';
export {
  CleanupConformanceError,
  checkCleanupConformance,
  runCleanupConformance,
  type CleanupCheckName,
  type CleanupCheckResult,
  type CleanupConformanceOptions,
  type CleanupConformanceReport,
  type RecordedResource,
} from './cleanup-conformance.js';

export interface PluginContractOptions {
  /** A project (a directory with tend.yml) whose providers are the plugin under test. */
  root: string;
  /** The plugin's name (its provider entry's `name`). */
  plugin: string;
  /** The cluster's request log, e.g. `kubeSimWire({ url, token, caPem })`. */
  wire: WireLog;
  /** The kubeconfig that reaches the cluster (sets KUBECONFIG while the harness runs). */
  kubeconfig?: string;
  /** The environment (default: the project's default) and `--var` values. */
  env?: string;
  vars?: string[];
}

/** One handler call, in a session of its own, with what the wire and the events say about it. */
export interface ContractCall {
  /** `provider.<handler>` or `<Kind>.<type>.<handler>`. */
  handler: string;
  actionRef?: string;
  /** Namespaces the cluster received requests for during the session (the provider's init included). */
  touched: string[];
  /** Namespaces the plugin reported in `namespaceStatus` events in that session. */
  reported: string[];
  /** Touched and not reported: each one breaks the contract. */
  unreported: string[];
  /** The handler's error, if it threw. */
  error?: string;
}

export interface PluginContractReport {
  calls: ContractCall[];
  /** One line per broken promise; empty when the plugin keeps the contract. */
  failures: string[];
}

export class PluginContractError extends Error {
  constructor(readonly report: PluginContractReport) {
    super(`the plugin broke the event contract:\n${report.failures.map((f) => `  - ${f}`).join('\n')}`);
    this.name = 'PluginContractError';
  }
}

/**
 * The one request tend makes that names a namespace without reporting it: reading the
 * kube-system Namespace object for the cluster identity (the provider's `init`, and the first
 * `ctx.kubernetes()` of a process). It works in no namespace, and kube-system is never an environment.
 */
function isIdentityRead(request: WireRequest): boolean {
  return request.verb === 'get' && request.resource === 'namespaces' && request.namespace === 'kube-system';
}

interface PlannedCall {
  handler: string;
  actionRef?: string;
  invoke(router: Router, outputs: Record<string, Outputs>): Promise<unknown>;
}

/** Runs the contract and returns what it found; `checkPluginContract` throws on failures. */
export async function runPluginContract(options: PluginContractOptions): Promise<PluginContractReport> {
  return withKubeconfig(options.kubeconfig, async () => {
    const calls: ContractCall[] = [];
    const outputs: Record<string, Outputs> = {};
    for (const planned of await plan(options)) calls.push(await runCall(options, planned, outputs));
    const failures: string[] = [];
    for (const call of calls) {
      const at = `${call.handler}${call.actionRef ? ` (${call.actionRef})` : ''}`;
      for (const namespace of call.unreported) {
        failures.push(
          `${at} touched namespace "${namespace}" without reporting it in a namespaceStatus event`,
        );
      }
      if (call.error !== undefined) failures.push(`${at} failed: ${call.error}`);
    }
    return { calls, failures };
  });
}

/** Runs the contract and throws a PluginContractError listing every failure. */
export async function checkPluginContract(options: PluginContractOptions): Promise<PluginContractReport> {
  const report = await runPluginContract(options);
  if (report.failures.length > 0) throw new PluginContractError(report);
  return report;
}

/**
 * The calls, in the order a user's commands make them: status, prepare, each action of the
 * plugin's types (status, then its work, forced), Deploy logs (where the type has them), Deploy
 * deletes, and cleanup last.
 */
async function plan(options: PluginContractOptions): Promise<PlannedCall[]> {
  const opened = await openProject({ root: options.root, env: options.env, var: options.vars });
  const provider = opened.providers.find((p) => p.name === options.plugin);
  if (!provider) {
    throw new Error(
      `the project ${options.root} has no provider "${options.plugin}" for environment ${opened.environment.name}`,
    );
  }
  const ownTypes = new Set(provider.plugin.actionTypes.map((t) => t.name));
  const actions = opened.actions.filter((a) => ownTypes.has(a.type));
  const providerCall = (handler: 'getEnvironmentStatus' | 'prepareEnvironment' | 'cleanupEnvironment') => ({
    handler: `provider.${handler}`,
    invoke: (router: Router) =>
      router.callProvider(
        router.providers.find((p) => p.name === options.plugin)!,
        handler,
      ),
  });
  const actionCall = (ref: string, kind: ActionKind, type: string, handler: string): PlannedCall => ({
    handler: `${kind}.${type}.${handler}`,
    actionRef: ref,
    invoke: async (router, outputs) => {
      const again = await openProject({ root: options.root, env: options.env, var: options.vars });
      const graph = new ActionGraph(again.actions);
      const versions = computeVersions(graph, [ref]);
      const action = resolveAction(again, graph, versions, ref, outputs, { keepActionOutputs: true });
      if (handler === 'getLogs') {
        // "Nothing to show" is an answer, not a failure: what counts is what the call touched.
        await router.actionLogs(action, { follow: false, onLine: () => {} }).catch((error: unknown) => {
          const code = (error as { code?: unknown }).code;
          if (code !== 'TEND_LOGS_UNSUPPORTED' && code !== 'TEND_LOGS_UNAVAILABLE') throw error;
        });
        return;
      }
      const result = (await router.callAction(action, handler as keyof ActionResults, {
        force: true,
      })) as { outputs?: Outputs };
      if (result?.outputs) outputs[ref] = result.outputs;
    },
  });
  const calls: PlannedCall[] = [
    { handler: 'provider.init', invoke: async () => undefined },
    providerCall('getEnvironmentStatus'),
    providerCall('prepareEnvironment'),
  ];
  const ref = (a: (typeof actions)[number]) => `${a.kind.toLowerCase()}.${a.name}`;
  for (const action of actions) {
    for (const handler of actionHandlerNames[action.kind] as readonly string[]) {
      if (handler !== 'delete') calls.push(actionCall(ref(action), action.kind, action.type, handler));
    }
  }
  // The optional, read-only logs of each deploy (while it is deployed), then the deletes.
  const hasLogs = (type: string) =>
    provider.plugin.actionTypes.find((t) => t.name === type)?.kinds.Deploy?.handlers.getLogs !== undefined;
  for (const action of actions.filter((a) => a.kind === 'Deploy' && hasLogs(a.type))) {
    calls.push(actionCall(ref(action), action.kind, action.type, 'getLogs'));
  }
  for (const action of actions.filter((a) => a.kind === 'Deploy')) {
    calls.push(actionCall(ref(action), action.kind, action.type, 'delete'));
  }
  calls.push(providerCall('cleanupEnvironment'));
  return calls;
}

async function runCall(
  options: PluginContractOptions,
  planned: PlannedCall,
  outputs: Record<string, Outputs>,
): Promise<ContractCall> {
  const opened = await openProject({ root: options.root, env: options.env, var: options.vars });
  const mark = await options.wire.latest();
  const { session, router, close } = startSession(opened, 'contract-test', [planned.handler]);
  const reported = new Set<string>();
  const off = session.bus.on('namespaceStatus', (event) => {
    const payload = (event as TendEvent<'namespaceStatus'>).payload;
    if (payload.pluginName === options.plugin) reported.add(payload.namespaceName);
  });
  let error: unknown;
  try {
    await router.initProviders();
    await planned.invoke(router, outputs);
  } catch (thrown) {
    error = thrown;
  } finally {
    off();
    await close(error === undefined ? {} : { error });
  }
  const requests = await options.wire.since(mark);
  const touched = new Set<string>();
  for (const request of requests) {
    if (request.namespace !== undefined && !isIdentityRead(request)) touched.add(request.namespace);
  }
  const call: ContractCall = {
    handler: planned.handler,
    touched: [...touched].sort(),
    reported: [...reported].sort(),
    unreported: [...touched].filter((n) => !reported.has(n)).sort(),
  };
  if (planned.actionRef) call.actionRef = planned.actionRef;
  if (requests.length > 0 && requests[0]!.seq > mark + 1) {
    call.error = `the request log lost requests ${mark + 1}–${requests[0]!.seq - 1}: cannot check this call`;
  }
  if (error !== undefined) call.error = error instanceof Error ? error.message : String(error);
  return call;
}
