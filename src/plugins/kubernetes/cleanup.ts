/**
 * The kubernetes plugin's cleanup handlers (the `cleanup` part of the plugin contract), used by
 * the cleanup executors: the clusters of the executor's kubeconfig contexts as targets
 * (`kubernetes/<uid of kube-system>`), their tend-labelled namespaces as inventory, and
 * verify-and-delete of one namespace — through the namespace-tracking client's
 * `namespaces.deleteOwned`, the same path as `tend cleanup env`.
 */
import { TendError } from '../../errors.js';
import { namespaceProtector } from '../../cleanup/protection.js';
import type {
  CleanupCallContext,
  CleanupInventory,
  CleanupJobSpec,
  CleanupResult,
  CleanupTarget,
} from '../../plugin/types.js';
import { KubeClient, type ClusterIdentity, type NamespaceInfo } from './client/index.js';
import type { GateContext } from './client/gate.js';
import { settingsOf, type KubernetesExecutorSettings, type ProviderSettings } from './config.js';

type Context = CleanupCallContext<KubernetesExecutorSettings>;

interface ClusterTargetState {
  context: string;
  kubeconfig?: string;
  identity: ClusterIdentity;
}

function settingsFor(ctx: Context, state: { context?: string; kubeconfig?: string }, namespace: string) {
  const settings: ProviderSettings = {
    ...settingsOf({ systemNamespace: ctx.protection.systemNamespace }, namespace),
    ...(state.context ? { context: state.context } : {}),
    ...(state.kubeconfig ? { kubeconfig: state.kubeconfig } : {}),
  };
  return settings;
}

/** What the client's gate reports namespaces for: the job's project and environment (none for target-wide reads). */
function gateContext(ctx: Context, environment: { project: string; name: string }): GateContext {
  return { events: ctx.events, log: ctx.log, signal: ctx.signal, environment };
}

const noEnvironment = { project: '-', name: '-' };

function stateOf(target: CleanupTarget): ClusterTargetState {
  return target.state as ClusterTargetState;
}

export async function targets(ctx: Context): Promise<CleanupTarget[]> {
  const k = ctx.provider.config;
  const contexts: (string | undefined)[] = k.contexts.length > 0 ? k.contexts : [undefined];
  const byCluster = new Map<string, CleanupTarget>();
  for (const context of contexts) {
    const state = { ...(context ? { context } : {}), ...(k.kubeconfig ? { kubeconfig: k.kubeconfig } : {}) };
    const client = await KubeClient.identify(gateContext(ctx, noEnvironment), settingsFor(ctx, state, '-'));
    const identity = client.identity;
    if (identity.clusterIdFallback) {
      throw new TendError(
        'TEND_K8S_FORBIDDEN',
        `cannot serve context "${identity.context}" (${identity.server}): the uid of namespace kube-system, ` +
          'which names the cluster in tend’s records, cannot be read',
        {
          detail: {
            context: identity.context,
            hint: 'grant get on namespace kube-system to these credentials',
          },
        },
      );
    }
    const key = `kubernetes/${identity.clusterId}`;
    if (byCluster.has(key)) continue;
    byCluster.set(key, {
      targetKey: key,
      pluginName: 'kubernetes',
      description: `context ${identity.context} (${identity.server})`,
      state: { context: identity.context, ...(k.kubeconfig ? { kubeconfig: k.kubeconfig } : {}), identity },
    });
  }
  return [...byCluster.values()];
}

function inventoryItem(info: NamespaceInfo) {
  const annotations: Record<string, string> = {};
  for (const [key, value] of Object.entries(info.annotations)) {
    if (key.startsWith('tend.dev/')) annotations[key] = value;
  }
  return {
    namespaceName: info.name,
    uid: info.uid!,
    resourceVersion: info.resourceVersion!,
    phase: info.state === 'terminating' ? ('Terminating' as const) : ('Active' as const),
    labels: info.labels,
    annotations,
  };
}

export async function inventory(ctx: Context, target: CleanupTarget): Promise<CleanupInventory> {
  const state = stateOf(target);
  const client = await KubeClient.forCall(
    gateContext(ctx, noEnvironment),
    settingsFor(ctx, state, '-'),
    state.identity,
  );
  const list = await client.namespaces.listManaged();
  const items = list.items.filter((i) => i.uid && i.resourceVersion).map(inventoryItem);
  return { complete: list.complete, ...(list.error ? { error: list.error } : {}), items };
}

export async function verifyAndClean(
  ctx: Context,
  target: CleanupTarget,
  job: CleanupJobSpec,
): Promise<CleanupResult> {
  const state = stateOf(target);
  const name = job.namespaceName;
  const jobCluster = (job.target as { clusterId?: unknown }).clusterId;
  if (jobCluster !== state.identity.clusterId) {
    return {
      outcome: 'cancelled',
      message: `the job is for cluster ${String(jobCluster)}, this executor serves ${state.identity.clusterId}`,
    };
  }
  // Before any call: a protected name is never even read as an app namespace.
  const protectedName = namespaceProtector({
    systemNamespace: ctx.protection.systemNamespace,
    patterns: ctx.protection.protectNamespaces,
  });
  const protectedBy = protectedName(name);
  if (protectedBy)
    return { outcome: 'cancelled', message: `namespace ${name} is protected (${protectedBy})` };
  if (!job.namespaceUid) {
    return { outcome: 'cancelled', message: `no recorded uid for namespace ${name}: no ownership proof` };
  }
  const client = await KubeClient.forCall(
    gateContext(ctx, { project: job.project, name: job.environment }),
    settingsFor(ctx, state, name),
    state.identity,
  );
  const checks = {
    environment: job.environment,
    uid: job.namespaceUid,
    notActiveAfter: job.expectedLastActivityAt,
    protectedName,
    dryRun: job.dryRun,
  };
  if (job.action === 'pause' || job.action === 'resume') {
    // Pause and resume: the same ownership proof on a fresh read, then the workloads tend deployed.
    const changed = await client.workloads.verifiedChange(job.action, name, checks);
    return {
      outcome: changed.outcome === 'done' ? 'done' : 'cancelled',
      message: changed.message,
    };
  }
  const result = await client.namespaces.deleteOwned(name, checks);
  switch (result.outcome) {
    case 'deleted':
    case 'gone':
      return { outcome: 'done', message: result.message };
    case 'refused':
    case 'changed':
      return { outcome: 'cancelled', message: result.message };
  }
}
