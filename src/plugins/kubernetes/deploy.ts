/**
 * Deploy (`kubernetes`): the manifests (manifests.ts: a kustomization, files, inline) applied into
 * the app namespace with server-side apply (field manager `tend`), labelled with the action and
 * annotated with its version. The deploy then waits for its workloads (readiness.ts). Status
 * compares the version annotation and readiness; delete removes what the manifests name.
 */
import { TendError } from '../../errors.js';
import type {
  ActionHandlerParams,
  ExecuteResult,
  PluginContext,
  ResolvedAction,
  StatusResult,
} from '../../plugin/types.js';
import {
  annotations,
  labels,
  pauseAnnotations,
  refOf,
  type KubeClient,
  type KubeObject,
} from './client/index.js';
import type { KubernetesDeploySpec } from './config.js';
import { invalid, loadManifests, type Manifest } from './manifests.js';
import { assertNamespaceKey } from './namespace-key.js';
import { clusterNamespaceRefusal } from './app-namespace.js';
import { objectOwners } from './memo.js';
import { actionLabel } from './pods.js';
import { clientFor } from './provider.js';
import { readiness, waitReady } from './readiness.js';
import { inInstallOrder } from './install-order.js';

/** What deploying needs of a spec: a kubernetes, helm (the chart renders its manifests) or container Deploy's. */
type DeploySpec = Pick<
  KubernetesDeploySpec,
  'namespace' | 'overrideNamespace' | 'wait' | 'waitForJobs' | 'timeout'
>;
/** Where the manifests come from: the spec's files and kustomization (the default), or a chart. */
export type ManifestLoader<S> = (ctx: PluginContext, action: ResolvedAction<S>) => Promise<Manifest[]>;
const specManifests = loadManifests as ManifestLoader<DeploySpec>;

/** What the shared apply, status and delete path reads of a Deploy. */
export type ManifestsAction = ResolvedAction<DeploySpec>;

/**
 * Notes which Deploy of this command renders the object: two Deploys that render the same object
 * would overwrite each other at every deploy.
 */
function claim(action: ResolvedAction, namespace: string, origin: string, object: KubeObject): void {
  const key = `${namespace}/${object.apiVersion?.split('/').slice(0, -1).join('/') ?? ''}/${object.kind}/${object.metadata?.name}`;
  const owner = objectOwners.get(key);
  if (owner !== undefined && owner !== action.ref) {
    throw invalid(
      action,
      `${origin}: ${object.kind} ${object.metadata?.name} in namespace "${namespace}" is also rendered by ${owner}; ` +
        'two Deploys cannot own one object: leave it out of one of them',
      { owners: [owner, action.ref] },
    );
  }
  objectOwners.set(key, action.ref);
}

/**
 * The Namespaces among the manifests — written by hand, or rendered by a kustomization or chart:
 * each stands for the app namespace (adopted), as tend creates that one and deploys only into it.
 */
export function adoptedNamespaces(manifests: Manifest[]): Manifest[] {
  return manifests.filter((m) => m.object.kind === 'Namespace');
}

/**
 * Checks each object targets the app namespace (or none, or another with `overrideNamespace`,
 * or an adopted Namespace) and is namespaced, that no adopted Namespace is one of the cluster's
 * own, and that no other Deploy of the command renders it; adds tend's labels and version.
 */
export async function prepare(
  client: KubeClient,
  namespace: string,
  action: ManifestsAction,
  manifests: Manifest[],
): Promise<KubeObject[]> {
  assertNamespaceKey(action, namespace);
  const objects: KubeObject[] = [];
  const override = action.spec.overrideNamespace === true;
  const adopted = new Set(adoptedNamespaces(manifests).map((m) => m.object.metadata?.name));
  // The namespaces the manifests were written for: a ServiceAccount there is now in the app namespace.
  const others = new Set(
    manifests
      .map((m) => m.object.metadata?.namespace)
      .filter((ns) => ns && ns !== namespace && (override || adopted.has(ns))),
  );
  for (const { object, origin } of manifests) {
    if (object.kind === 'Namespace') {
      // Objects written for kube-system are the cluster's, not the environment's: not moved.
      const refusal = clusterNamespaceRefusal(object.metadata?.name, namespace);
      if (refusal) throw invalid(action, `${origin}: ${refusal}`);
      continue;
    }
    // The scope first: a cluster-scoped object is refused whatever namespace it names.
    let namespaced: boolean;
    try {
      namespaced = await client.objects.isNamespaced(object.apiVersion!, object.kind!);
    } catch (error) {
      if (error instanceof TendError && error.code === 'TEND_K8S_MANIFEST_INVALID') {
        throw invalid(action, `${origin}: ${error.message}`);
      }
      throw error;
    }
    if (!namespaced) {
      throw invalid(
        action,
        `${origin}: ${object.kind} ${object.metadata?.name ?? ''} is cluster-scoped; tend deploys only namespaced ` +
          "resources, into the environment's namespace, which it can record and clean up; apply it to the cluster " +
          'once, outside tend (`kubectl apply`), and leave it out of the Deploy',
      );
    }
    const written = object.metadata?.namespace;
    if (written && written !== namespace && !override && !adopted.has(written)) {
      throw invalid(
        action,
        `${origin}: ${object.kind} ${object.metadata?.name} sets namespace ${JSON.stringify(written)}, ` +
          `but tend deploys into "${namespace}"; remove metadata.namespace, or set \`overrideNamespace: true\``,
      );
    }
    claim(action, namespace, origin, object);
    objects.push({
      ...(others.size > 0 ? withSubjectsIn(object, others, namespace) : object),
      metadata: {
        ...object.metadata,
        namespace,
        labels: {
          ...object.metadata?.labels,
          [labels.managedBy]: 'tend',
          [labels.action]: actionLabel(action.ref),
        },
        annotations: { ...object.metadata?.annotations, [annotations.version]: action.version },
      },
    });
  }
  return objects;
}

/** A RoleBinding's ServiceAccount subjects of the namespaces the manifests were written for, moved to the app namespace. */
function withSubjectsIn(object: KubeObject, others: Set<string | undefined>, namespace: string): KubeObject {
  const subjects = (object as { subjects?: unknown }).subjects;
  if (object.kind !== 'RoleBinding' || !Array.isArray(subjects)) return object;
  return {
    ...object,
    subjects: subjects.map((subject: { kind?: string; namespace?: string }) =>
      subject?.kind === 'ServiceAccount' && others.has(subject.namespace)
        ? { ...subject, namespace }
        : subject,
    ),
  };
}

export async function deploy<S extends DeploySpec>(
  ctx: PluginContext,
  { action }: ActionHandlerParams<S>,
  load: ManifestLoader<S> = specManifests,
): Promise<ExecuteResult> {
  return applyManifests(ctx, action, await load(ctx, action), {});
}

export async function getStatus<S extends DeploySpec>(
  ctx: PluginContext,
  { action }: ActionHandlerParams<S>,
  load: ManifestLoader<S> = specManifests,
): Promise<StatusResult> {
  return manifestsStatus(ctx, action, () => load(ctx, action), {});
}

export async function remove<S extends DeploySpec>(
  ctx: PluginContext,
  { action }: ActionHandlerParams<S>,
  load: ManifestLoader<S> = specManifests,
): Promise<StatusResult> {
  return removeManifests(ctx, action, () => load(ctx, action));
}

/**
 * Applies the Deploy's objects into the app namespace in install order (recorded by the client as every call is),
 * then waits for its workloads unless the spec says `wait: false`. `outputs` go beside `namespace`.
 */
export async function applyManifests(
  ctx: PluginContext,
  action: ManifestsAction,
  manifests: Manifest[],
  outputs: Record<string, string>,
): Promise<ExecuteResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  await client.namespaces.ensure(namespace);
  const objects = await prepare(client, namespace, action, manifests);
  for (const { origin, object } of adoptedNamespaces(manifests)) {
    ctx.log.info(
      `${origin}: Namespace ${object.metadata?.name} left out: its objects go into the environment's namespace "${namespace}"`,
    );
  }
  const applied: KubeObject[] = [];
  for (const object of inInstallOrder(objects)) {
    try {
      applied.push(await client.objects.apply(namespace, object));
    } catch (error) {
      if (
        error instanceof TendError &&
        error.code === 'TEND_K8S_API' &&
        (error.detail?.status === 400 || error.detail?.status === 422)
      ) {
        throw invalid(
          action,
          `the cluster rejected ${object.kind} ${object.metadata?.name}: ${error.message}`,
          {
            ...error.detail,
          },
        );
      }
      throw error;
    }
    ctx.log.info(`applied ${object.kind} ${object.metadata?.name}`);
  }
  if (action.spec.wait !== false) {
    const timeoutMs =
      action.spec.timeout !== undefined ? action.spec.timeout * 1000 : (action.timeoutMs ?? 300_000);
    await waitReady(ctx, client, namespace, action, applied, timeoutMs, action.spec);
  }
  return {
    outputs: { namespace, ...outputs },
    detail: { resources: applied.map((o) => `${o.kind}/${o.metadata?.name}`) },
  };
}

/** Ready when every object is there with the action's version and ready; paused when cleanup paused one. */
export async function manifestsStatus(
  ctx: PluginContext,
  action: ManifestsAction,
  load: () => Promise<Manifest[]>,
  outputs: Record<string, string>,
): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  if (info?.state !== 'ready') return { state: 'not-ready', detail: { namespace: info?.state ?? 'missing' } };
  const objects = await prepare(client, namespace, action, await load());
  const outdated: string[] = [];
  const paused: string[] = [];
  // Read at once: one round trip's wait for all of them, not one each.
  const lives = await Promise.all(objects.map((object) => client.objects.read(namespace, refOf(object))));
  for (const [i, object] of objects.entries()) {
    const live = lives[i];
    const name = `${object.kind}/${object.metadata?.name}`;
    const liveAnnotations = live?.metadata?.annotations ?? {};
    if (!live) outdated.push(`${name} missing`);
    else if (liveAnnotations[annotations.version] !== action.version) outdated.push(`${name} outdated`);
    // Scaled to 0 (or suspended) by a pause: "ready" with no replica would say it serves.
    else if (pauseAnnotations.replicas in liveAnnotations || pauseAnnotations.suspend in liveAnnotations)
      paused.push(name);
    else if (!readiness(live, action.spec).ready) outdated.push(`${name} not ready`);
  }
  if (outdated.length > 0) return { state: 'not-ready', detail: { resources: outdated } };
  if (paused.length > 0) {
    return {
      state: 'paused',
      reason: `${paused.join(', ')} paused by cleanup: resumed by the next \`tend deploy|test|run\` or \`tend resume\``,
      outputs: { namespace, ...outputs },
      detail: { paused },
    };
  }
  return { state: 'ready', outputs: { namespace, ...outputs } };
}

/** Deletes the objects the manifests name that tend applied for this action. */
export async function removeManifests(
  ctx: PluginContext,
  action: ManifestsAction,
  load: () => Promise<Manifest[]>,
): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  if (info?.state !== 'ready') return { state: 'not-ready' };
  const objects = await prepare(client, namespace, action, await load());
  const deleted: string[] = [];
  for (const object of objects) {
    const live = await client.objects.read(namespace, refOf(object));
    // Only what tend applied for this action: a same-named object of someone else stays.
    if (!live || live.metadata?.labels?.[labels.action] !== actionLabel(action.ref)) continue;
    if (await client.objects.delete(namespace, refOf(object)))
      deleted.push(`${object.kind}/${object.metadata?.name}`);
  }
  ctx.log.info(deleted.length ? `deleted ${deleted.join(', ')}` : 'nothing to delete');
  return { state: 'not-ready', detail: { deleted } };
}
