/**
 * The kubernetes plugin's cleanup handlers (the `cleanup` part of the plugin contract), used by
 * the cleanup executors: the clusters of the executor's kubeconfig contexts as targets
 * (`kubernetes/<uid of kube-system>`), their tend-labelled namespaces as inventory, and the
 * primitives the framework's checks call: read one namespace, delete it through the
 * namespace-tracking client's `namespaces.deleteOwned` (the same path as `tend cleanup env`),
 * pause and resume what tend deployed there, archive it.
 */
import { TendError } from '../../errors.js';
import { namespaceProtector } from '../../cleanup/protection.js';
import type { EnvironmentArchive } from '../../cleanup/archive.js';
import type {
  CleanupActionResult,
  CleanupCallContext,
  CleanupInventory,
  CleanupJobSpec,
  CleanupPrecondition,
  CleanupResource,
  CleanupResourceRef,
  CleanupTarget,
  RestoreRequest,
  RestoreResult,
} from '../../plugin/types.js';
import { annotations, KubeClient, labels, type ClusterIdentity, type NamespaceInfo } from './client/index.js';
import type { GateContext } from './client/gate.js';
import { requestsFailure, type NamespaceRequests } from './client/requests.js';
import { describeChanges } from './client/workloads.js';
import { settingsOf, type KubernetesExecutorSettings, type ProviderSettings } from './config.js';

type Context = CleanupCallContext<KubernetesExecutorSettings>;

interface ClusterTargetState {
  context: string;
  kubeconfig?: string;
  identity: ClusterIdentity;
}

function settingsFor(ctx: Context, state: { context?: string; kubeconfig?: string }, namespace: string) {
  const settings: ProviderSettings = {
    ...settingsOf({ systemNamespace: ctx.protection.systemName }, namespace),
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

/** A mark that fits the inventory's bounds, or nothing (a value that does not fit names nothing tend knows). */
function mark(value: string | undefined, maxLength = 253): string | undefined {
  return value !== undefined && value !== '' && value.length <= maxLength ? value : undefined;
}

/** 10000-01-01: later times have no ISO 8601 form without an expanded year. */
const lastIsoTime = Date.UTC(10_000, 0, 1);

/** The namespace in tend's terms: its label and `tend.dev/*` annotations mapped to the item's fields. */
function inventoryItem(info: NamespaceInfo): CleanupResource {
  const a = info.annotations;
  const role = a[annotations.role];
  const activity = Date.parse(a[annotations.lastActivity] ?? '');
  const created = Date.parse(info.createdAt ?? '');
  const project = mark(a[annotations.project]);
  const environment = mark(a[annotations.environment]);
  return {
    name: info.name,
    uid: info.uid!,
    version: info.resourceVersion!,
    state: info.state === 'terminating' ? 'terminating' : 'active',
    managedByTend: info.labels[labels.managedBy] === 'tend',
    ...(project ? { project } : {}),
    ...(environment ? { environment } : {}),
    ...(role === 'app' || role === 'build' || role === 'system' ? { role } : {}),
    adopted: a[annotations.adopted] === 'true',
    // An unreadable stamp, or one no ISO time can say, is no activity (the registry's still counts).
    ...(activity >= 0 && activity < lastIsoTime ? { lastActivityAt: new Date(activity).toISOString() } : {}),
    ...(created >= 0 && created < lastIsoTime ? { createdAt: new Date(created).toISOString() } : {}),
  };
}

/**
 * How long the pods' requests of a target's last listing stand for it: listing every pod of a
 * cluster each pass (every 30 s) cost an inventory of 1,000 namespaces with 2 pods each three
 * times as much as listing the namespaces alone; the savings report needs them only as they were
 * before a deletion or a pause, and a few minutes old are close enough.
 */
const requestsRefreshMs = 5 * 60_000;
const listedRequests = new Map<
  string,
  { at: number; byNamespace: Map<string, NamespaceRequests>; listed: Set<string> }
>();

/**
 * What the namespaces' pods request — for the savings report, never for a decision: the last
 * listing of the target while it is recent and knows every namespace listed (by name and uid: a
 * namespace re-created under its name is listed anew), else a new one. A
 * list of pods that fails (no permission, say) leaves requests out and keeps the inventory
 * complete.
 */
async function podRequests(
  ctx: Context,
  target: CleanupTarget,
  client: KubeClient,
  items: CleanupResource[],
): Promise<Map<string, NamespaceRequests> | undefined> {
  const names = new Set(items.map((i) => i.name));
  const listed = new Set(items.map((i) => `${i.name}\u0000${i.uid}`));
  const last = listedRequests.get(target.targetKey);
  const now = Date.now();
  if (
    last &&
    now - last.at >= 0 &&
    now - last.at < requestsRefreshMs &&
    [...listed].every((k) => last.listed.has(k))
  )
    return last.byNamespace;
  try {
    const byNamespace = await client.requests.byNamespace(names);
    listedRequests.set(target.targetKey, { at: now, byNamespace, listed });
    return byNamespace;
  } catch (failure) {
    listedRequests.delete(target.targetKey);
    ctx.log.warn(
      `${target.targetKey}: cannot list pods for the savings report (${requestsFailure(failure)}); ` +
        'namespaces are counted by weight (grant list on pods to the executor)',
    );
    return undefined;
  }
}

export async function inventory(ctx: Context, target: CleanupTarget): Promise<CleanupInventory> {
  const state = stateOf(target);
  const client = await KubeClient.forCall(
    gateContext(ctx, noEnvironment),
    settingsFor(ctx, state, '-'),
    state.identity,
  );
  const list = await client.namespaces.listManaged();
  const listable = list.items.filter((i) => mark(i.uid, 100) && mark(i.resourceVersion, 100));
  // A namespace left out would read as gone: a list that cannot say every one is not complete.
  const unlisted = list.items.length - listable.length;
  const error =
    list.error ??
    (unlisted > 0 ? `${unlisted} namespace(s) without a usable uid or resourceVersion` : undefined);
  const items = listable.map(inventoryItem);
  const requests = await podRequests(ctx, target, client, items);
  for (const item of items) {
    const r = requests?.get(item.name);
    if (r) item.requests = r;
  }
  const observedAt = client.serverTime();
  return {
    complete: list.complete && unlisted === 0,
    ...(error ? { error } : {}),
    items,
    ...(observedAt !== undefined ? { observedAt: new Date(observedAt).toISOString() } : {}),
  };
}

/** A client for one namespace of the target, its events named as the resource's marks name them. */
async function clientFor(ctx: Context, target: CleanupTarget, resource: CleanupResource) {
  const state = stateOf(target);
  return KubeClient.forCall(
    gateContext(ctx, { project: resource.project ?? '-', name: resource.environment ?? '-' }),
    settingsFor(ctx, state, resource.name),
    state.identity,
  );
}

/** The namespace as the API server has it now, in tend's terms; one it cannot read is reported unverified. */
export async function read(
  ctx: Context,
  target: CleanupTarget,
  ref: CleanupResourceRef,
): Promise<CleanupResource | undefined> {
  const state = stateOf(target);
  const client = await KubeClient.forCall(
    gateContext(ctx, { project: ref.project, name: ref.environment }),
    settingsFor(ctx, state, ref.name),
    state.identity,
  );
  const info = await client.namespaces.read(ref.name);
  return info ? inventoryItem(info) : undefined;
}

/** The checks `deleteOwned` and `verifiedChange` make again on their own read (a second lock on the door). */
function lockedTo(ctx: Context, resource: CleanupResource, precondition: CleanupPrecondition) {
  return {
    ...(resource.environment !== undefined ? { environment: resource.environment } : {}),
    uid: precondition.uid,
    version: precondition.version,
    protectedName: namespaceProtector({
      systemNamespace: ctx.protection.systemName,
      patterns: ctx.protection.patterns,
    }),
  };
}

/**
 * `deleteOwned` of the namespace-tracking client — the same code path as `tend cleanup env` —
 * with the checked uid and resourceVersion: DELETE with `preconditions` (409 → changed, 404 →
 * gone), then a wait until the namespace is gone.
 */
export async function remove(
  ctx: Context,
  target: CleanupTarget,
  resource: CleanupResource,
  precondition: CleanupPrecondition,
): Promise<CleanupActionResult> {
  const client = await clientFor(ctx, target, resource);
  const result = await client.namespaces.deleteOwned(resource.name, lockedTo(ctx, resource, precondition));
  switch (result.outcome) {
    case 'deleted':
      return { outcome: 'done', message: result.message };
    case 'gone':
      return { outcome: 'gone', message: result.message };
    case 'refused':
    case 'changed':
      return { outcome: 'changed', message: result.message };
  }
}

/** Pause or resume: `workloads` of the client — what tend deployed scaled to 0 and suspended, or those values written back. */
export async function change(
  action: 'pause' | 'resume',
  ctx: Context,
  target: CleanupTarget,
  resource: CleanupResource,
  precondition: CleanupPrecondition,
): Promise<CleanupActionResult> {
  const client = await clientFor(ctx, target, resource);
  const changed = await client.workloads.verifiedChange(
    action,
    resource.name,
    lockedTo(ctx, resource, precondition),
  );
  return {
    outcome: changed.outcome === 'done' ? 'done' : changed.outcome === 'gone' ? 'gone' : 'changed',
    message: changed.message,
  };
}

/** For a dry run of a pause: the workloads it would scale down or suspend. */
export async function preview(
  ctx: Context,
  target: CleanupTarget,
  resource: CleanupResource,
  action: 'delete' | 'pause' | 'resume',
): Promise<string | undefined> {
  if (action !== 'pause') return undefined;
  const client = await clientFor(ctx, target, resource);
  return describeChanges(await client.workloads.pause(resource.name, { dryRun: true, strict: true }));
}

/** The namespace's archive (its objects, and its Secrets when asked), of the namespace that was checked. */
export async function archive(
  ctx: Context,
  target: CleanupTarget,
  resource: CleanupResource,
  o: { withSecrets: boolean },
): Promise<EnvironmentArchive> {
  const client = await clientFor(ctx, target, resource);
  const info = await client.namespaces.read(resource.name);
  if (!info || info.uid !== resource.uid) {
    throw new TendError(
      'TEND_ARCHIVE',
      `namespace ${resource.name} changed before its archive was taken; not deleted`,
    );
  }
  return client.archives.collect(info, o.withSecrets);
}

/**
 * A restore job: into the job's namespace on this cluster, through the gate (the restore
 * session's `created` event is the namespace's ownership proof). Never into a protected name.
 */
export async function restore(
  ctx: Context,
  target: CleanupTarget,
  job: CleanupJobSpec,
  request: RestoreRequest,
): Promise<RestoreResult> {
  const state = stateOf(target);
  const name = job.resourceName;
  const jobCluster = (job.target as { clusterId?: unknown }).clusterId;
  if (jobCluster !== state.identity.clusterId) {
    throw new TendError(
      'TEND_ARCHIVE',
      `the job is for cluster ${String(jobCluster)}, this executor serves ${state.identity.clusterId}`,
    );
  }
  const protectedBy = namespaceProtector({
    systemNamespace: ctx.protection.systemName,
    patterns: ctx.protection.patterns,
  })(name);
  if (protectedBy)
    throw new TendError(
      'TEND_ARCHIVE',
      `namespace ${name} is protected (${protectedBy}): never restored into`,
    );
  const client = await KubeClient.forCall(
    gateContext(ctx, { project: job.project, name: job.environment }),
    settingsFor(ctx, state, name),
    state.identity,
  );
  const { restoreInto } = await import('./restore.js');
  return restoreInto(client, request, ctx.signal);
}
