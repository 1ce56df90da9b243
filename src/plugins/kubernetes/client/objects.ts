/**
 * Objects of any kind, for manifests: discovery (is a kind namespaced?), server-side apply
 * (field manager `tend`), read and delete. Every call goes through the request gate, and only
 * namespaced kinds pass: a Namespace or another cluster-scoped object is refused before any
 * request (`TEND_K8S_CLUSTER_SCOPED`), so a plugin cannot delete or relabel a namespace around
 * the one create and delete path (the namespace gate's `ensure` and `deleteOwned`).
 */
import type * as k8s from '@kubernetes/client-node';
import { TendError } from '../../../errors.js';
import { apiError, describeFailure } from './errors.js';
import type { RequestGate } from './gate.js';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
}

export type KubeObject = k8s.KubernetesObject & { spec?: unknown; status?: unknown; [key: string]: unknown };

/** The reference of an object (apiVersion, kind, name) for read and delete. */
export function refOf(object: KubeObject): ObjectRef {
  return { apiVersion: object.apiVersion!, kind: object.kind!, name: object.metadata!.name! };
}

/**
 * Built-in kinds whose scope never changes, so the common manifests need no discovery request
 * (`apiVersion/kind` → namespaced). Anything else is asked of the cluster.
 */
const builtinScopes = new Map<string, boolean>([
  ...[
    'v1/ConfigMap',
    'v1/Secret',
    'v1/Service',
    'v1/ServiceAccount',
    'v1/Pod',
    'v1/PersistentVolumeClaim',
    'v1/Endpoints',
    'v1/LimitRange',
    'v1/ResourceQuota',
    'apps/v1/Deployment',
    'apps/v1/StatefulSet',
    'apps/v1/DaemonSet',
    'apps/v1/ReplicaSet',
    'batch/v1/Job',
    'batch/v1/CronJob',
    'networking.k8s.io/v1/Ingress',
    'networking.k8s.io/v1/NetworkPolicy',
    'autoscaling/v2/HorizontalPodAutoscaler',
    'autoscaling/v1/HorizontalPodAutoscaler',
    'policy/v1/PodDisruptionBudget',
    'rbac.authorization.k8s.io/v1/Role',
    'rbac.authorization.k8s.io/v1/RoleBinding',
  ].map((key) => [key, true] as const),
  ...[
    'v1/Namespace',
    'v1/Node',
    'v1/PersistentVolume',
    'rbac.authorization.k8s.io/v1/ClusterRole',
    'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
    'apiextensions.k8s.io/v1/CustomResourceDefinition',
    'storage.k8s.io/v1/StorageClass',
    'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration',
    'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration',
  ].map((key) => [key, false] as const),
]);

export class ObjectCalls {
  private readonly namespacedCache = new Map<string, boolean>();

  constructor(private readonly gate: RequestGate) {}

  /** Whether a kind is namespaced (discovery, cached per call). Unknown kinds are a manifest error. */
  async isNamespaced(apiVersion: string, kind: string): Promise<boolean> {
    const key = `${apiVersion}/${kind}`;
    const cached = builtinScopes.get(key) ?? this.namespacedCache.get(key);
    if (cached !== undefined) return cached;
    const objects = this.gate.connection.objects as unknown as {
      resource(apiVersion: string, kind: string): Promise<k8s.V1APIResource | undefined>;
    };
    let resource: k8s.V1APIResource | undefined;
    try {
      resource = await this.gate.retry(`discover ${key}`, () => objects.resource(apiVersion, kind), true);
    } catch (error) {
      const f = describeFailure(error);
      if (f.status !== 404) throw apiError(error, this.gate.describe(`discover ${key}`));
    }
    if (!resource) {
      throw new TendError(
        'TEND_K8S_MANIFEST_INVALID',
        `the cluster does not know kind ${kind} in apiVersion ${apiVersion}`,
        { detail: { apiVersion, kind } },
      );
    }
    this.namespacedCache.set(key, resource.namespaced);
    return resource.namespaced;
  }

  /** Server-side apply (field manager `tend`, forcing conflicts) of one object into the namespace. */
  async apply(namespace: string, object: KubeObject): Promise<KubeObject> {
    await onlyNamespaced(
      this,
      object.apiVersion,
      object.kind,
      `apply ${object.kind} ${object.metadata?.name}`,
    );
    const { k8s } = this.gate.connection;
    const body = { ...object, metadata: { ...object.metadata, namespace } };
    return this.gate.request(
      namespace,
      `apply ${object.kind} ${object.metadata?.name} in ${namespace}`,
      () =>
        this.gate.connection.objects.patch(
          body,
          undefined,
          undefined,
          'tend',
          true,
          k8s.PatchStrategy.ServerSideApply,
        ) as Promise<KubeObject>,
    );
  }

  async read(namespace: string, ref: ObjectRef): Promise<KubeObject | undefined> {
    await onlyNamespaced(this, ref.apiVersion, ref.kind, `read ${ref.kind} ${ref.name}`);
    return this.gate.requestOptional(
      namespace,
      `read ${ref.kind} ${ref.name} in ${namespace}`,
      () =>
        this.gate.connection.objects.read({
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          metadata: { name: ref.name, namespace },
        }) as Promise<KubeObject>,
    );
  }

  async delete(namespace: string, ref: ObjectRef): Promise<boolean> {
    await onlyNamespaced(this, ref.apiVersion, ref.kind, `delete ${ref.kind} ${ref.name}`);
    const result = await this.gate.requestOptional(
      namespace,
      `delete ${ref.kind} ${ref.name} in ${namespace}`,
      () =>
        this.gate.connection.objects.delete(
          { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace } },
          undefined,
          undefined,
          undefined,
          undefined,
          'Background',
        ),
    );
    return result !== undefined;
  }
}

/** Refuses what is not a namespaced kind: those are not a plugin's to touch. */
async function onlyNamespaced(
  objects: ObjectCalls,
  apiVersion: string | undefined,
  kind: string | undefined,
  what: string,
): Promise<void> {
  const namespaceKind = kind === 'Namespace' && (apiVersion === 'v1' || apiVersion === undefined);
  if (namespaceKind || !(await objects.isNamespaced(apiVersion ?? '', kind ?? ''))) {
    throw new TendError(
      'TEND_K8S_CLUSTER_SCOPED',
      `refused to ${what}: ${kind} is cluster-scoped; plugins touch only namespaced objects, and tend creates and deletes namespaces only through its namespace gate`,
      { detail: { apiVersion, kind } },
    );
  }
}
