/**
 * Where a kind's objects live in the API: `/apis/apps/v1/namespaces/<ns>/deployments/<name>`. The
 * built-in kinds of common manifests are known (their resource name and scope never change), so
 * they need no discovery request; any other kind is looked up once per process and cluster in its
 * group version's resource list (`GET /apis/<group>/<version>`), as kubectl does.
 */
import type { V1APIResourceList } from './wire.js';

export interface Resource {
  /** The resource name in URL paths: `deployments`. */
  name: string;
  namespaced: boolean;
}

const resourceEntries = (names: Record<string, string>, namespaced: boolean) =>
  Object.entries(names).map(([key, name]) => [key, { name, namespaced }] as const);

/** `apiVersion/kind` → resource, for the built-in kinds whose resource never changes. */
const builtinResources = new Map<string, Resource>([
  ...resourceEntries(
    {
      'v1/ConfigMap': 'configmaps',
      'v1/Secret': 'secrets',
      'v1/Service': 'services',
      'v1/ServiceAccount': 'serviceaccounts',
      'v1/Pod': 'pods',
      'v1/PersistentVolumeClaim': 'persistentvolumeclaims',
      'v1/Endpoints': 'endpoints',
      'v1/Event': 'events',
      'v1/LimitRange': 'limitranges',
      'v1/ResourceQuota': 'resourcequotas',
      'apps/v1/Deployment': 'deployments',
      'apps/v1/StatefulSet': 'statefulsets',
      'apps/v1/DaemonSet': 'daemonsets',
      'apps/v1/ReplicaSet': 'replicasets',
      'batch/v1/Job': 'jobs',
      'batch/v1/CronJob': 'cronjobs',
      'networking.k8s.io/v1/Ingress': 'ingresses',
      'networking.k8s.io/v1/NetworkPolicy': 'networkpolicies',
      'autoscaling/v2/HorizontalPodAutoscaler': 'horizontalpodautoscalers',
      'autoscaling/v1/HorizontalPodAutoscaler': 'horizontalpodautoscalers',
      'policy/v1/PodDisruptionBudget': 'poddisruptionbudgets',
      'rbac.authorization.k8s.io/v1/Role': 'roles',
      'rbac.authorization.k8s.io/v1/RoleBinding': 'rolebindings',
    },
    true,
  ),
  ...resourceEntries(
    {
      'v1/Namespace': 'namespaces',
      'v1/Node': 'nodes',
      'v1/PersistentVolume': 'persistentvolumes',
      'rbac.authorization.k8s.io/v1/ClusterRole': 'clusterroles',
      'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'clusterrolebindings',
      'apiextensions.k8s.io/v1/CustomResourceDefinition': 'customresourcedefinitions',
      'storage.k8s.io/v1/StorageClass': 'storageclasses',
      'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration': 'validatingwebhookconfigurations',
      'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration': 'mutatingwebhookconfigurations',
    },
    false,
  ),
]);

/** The path of a group version: `/api/v1` for the core group, `/apis/<group>/<version>` otherwise. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

export class ResourcePaths {
  /** The resource lists of group versions asked so far. */
  private readonly lists = new Map<string, Promise<V1APIResourceList>>();

  /** @param get reads a group version's resource list (`GET /apis/apps/v1`) */
  constructor(private readonly get: (path: string) => Promise<V1APIResourceList>) {}

  /**
   * The resource of a kind; undefined when the cluster serves the group version without it. A
   * list asked before that lacks the kind (a CustomResourceDefinition created since) is asked again.
   */
  async resource(apiVersion: string, kind: string): Promise<Resource | undefined> {
    const builtin = builtinResources.get(`${apiVersion}/${kind}`);
    if (builtin) return builtin;
    const asked = this.lists.get(apiVersion);
    const known = asked && find(await asked.catch(() => undefined), kind);
    if (known) return known;
    const list = this.get(groupVersionPath(apiVersion));
    this.lists.set(apiVersion, list);
    return find(await list, kind);
  }

  /** The URL path of an object (with `name`) or of the objects of its kind in a namespace. */
  static path(apiVersion: string, resource: Resource, namespace: string | undefined, name?: string): string {
    const scope = resource.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    const object = name === undefined ? '' : `/${encodeURIComponent(name)}`;
    return `${groupVersionPath(apiVersion)}${scope}/${resource.name}${object}`;
  }
}

/** A kind's resource in a list. Subresources (`deployments/scale`) share their kind with others: not them. */
function find(list: V1APIResourceList | undefined, kind: string): Resource | undefined {
  const found = list?.resources.find((r) => r.kind === kind && !r.name.includes('/'));
  return found && { name: found.name, namespaced: found.namespaced };
}
