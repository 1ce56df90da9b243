/** The resource types the simulator serves, as discovery describes them. */

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** Subresources beyond the object itself, e.g. `status`, `log`, `exec`. */
  subresources: string[];
  /** Names must be DNS-1123 labels (namespaces, services) rather than subdomains. */
  labelNames: boolean;
  /** Key used by the store and fault rules: `pods`, `deployments.apps`. */
  key: string;
  apiVersion: string;
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
export { VERBS };

function rt(
  group: string,
  version: string,
  kind: string,
  plural: string,
  namespaced: boolean,
  extra: Partial<Pick<ResourceType, 'shortNames' | 'categories' | 'subresources' | 'labelNames'>> = {},
): ResourceType {
  return {
    group,
    version,
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced,
    shortNames: extra.shortNames ?? [],
    categories: extra.categories ?? [],
    subresources: extra.subresources ?? [],
    labelNames: extra.labelNames ?? false,
    key: group ? `${plural}.${group}` : plural,
    apiVersion: group ? `${group}/${version}` : version,
  };
}

export const RESOURCES: ResourceType[] = [
  rt('', 'v1', 'Namespace', 'namespaces', false, {
    shortNames: ['ns'],
    subresources: ['status', 'finalize'],
    labelNames: true,
  }),
  rt('', 'v1', 'Pod', 'pods', true, {
    shortNames: ['po'],
    categories: ['all'],
    subresources: ['status', 'log', 'exec', 'attach'],
  }),
  rt('', 'v1', 'Service', 'services', true, {
    shortNames: ['svc'],
    categories: ['all'],
    subresources: ['status'],
    labelNames: true,
  }),
  rt('', 'v1', 'ConfigMap', 'configmaps', true, { shortNames: ['cm'] }),
  rt('', 'v1', 'Secret', 'secrets', true),
  rt('', 'v1', 'ServiceAccount', 'serviceaccounts', true, { shortNames: ['sa'], subresources: ['token'] }),
  rt('', 'v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true, {
    shortNames: ['pvc'],
    subresources: ['status'],
  }),
  rt('', 'v1', 'Event', 'events', true, { shortNames: ['ev'] }),
  rt('apps', 'v1', 'Deployment', 'deployments', true, {
    shortNames: ['deploy'],
    categories: ['all'],
    subresources: ['status', 'scale'],
  }),
  rt('apps', 'v1', 'ReplicaSet', 'replicasets', true, {
    shortNames: ['rs'],
    categories: ['all'],
    subresources: ['status', 'scale'],
  }),
  rt('apps', 'v1', 'StatefulSet', 'statefulsets', true, {
    shortNames: ['sts'],
    categories: ['all'],
    subresources: ['status', 'scale'],
  }),
  rt('batch', 'v1', 'Job', 'jobs', true, { categories: ['all'], subresources: ['status'] }),
  rt('apps', 'v1', 'DaemonSet', 'daemonsets', true, {
    shortNames: ['ds'],
    categories: ['all'],
    subresources: ['status'],
  }),
  // Their controller behaviour: autoscaling.ts.
  rt('batch', 'v1', 'CronJob', 'cronjobs', true, {
    shortNames: ['cj'],
    categories: ['all'],
    subresources: ['status'],
  }),
  rt('autoscaling', 'v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', true, {
    shortNames: ['hpa'],
    categories: ['all'],
    subresources: ['status'],
  }),
  // Stored and served (tend archives and restores them); no controller routes traffic.
  rt('networking.k8s.io', 'v1', 'Ingress', 'ingresses', true, {
    shortNames: ['ing'],
    subresources: ['status'],
  }),
  // Stored and served (the manifests under deploy/ ship them); no network is simulated.
  rt('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies', true, { shortNames: ['netpol'] }),
  // Validating admission (admission.ts).
  rt(
    'admissionregistration.k8s.io',
    'v1',
    'ValidatingAdmissionPolicy',
    'validatingadmissionpolicies',
    false,
    {
      subresources: ['status'],
    },
  ),
  rt(
    'admissionregistration.k8s.io',
    'v1',
    'ValidatingAdmissionPolicyBinding',
    'validatingadmissionpolicybindings',
    false,
  ),
  // Who may do what (rbac.ts).
  rt('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true),
  rt('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true),
  rt('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false),
  rt('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
];

export const GROUP_VERSIONS: { group: string; version: string }[] = [
  { group: '', version: 'v1' },
  { group: 'apps', version: 'v1' },
  { group: 'batch', version: 'v1' },
  { group: 'autoscaling', version: 'v2' },
  { group: 'networking.k8s.io', version: 'v1' },
  { group: 'rbac.authorization.k8s.io', version: 'v1' },
  { group: 'admissionregistration.k8s.io', version: 'v1' },
];

const byPath = new Map<string, ResourceType>();
const byKind = new Map<string, ResourceType>();
for (const r of RESOURCES) {
  byPath.set(`${r.group}/${r.version}/${r.plural}`, r);
  byKind.set(`${r.apiVersion}/${r.kind}`, r);
}

export function resourceFor(group: string, version: string, plural: string): ResourceType | undefined {
  return byPath.get(`${group}/${version}/${plural}`);
}

export function resourceForKind(apiVersion: string, kind: string): ResourceType | undefined {
  return byKind.get(`${apiVersion}/${kind}`);
}

export function resourceByKey(key: string): ResourceType {
  const r = RESOURCES.find((x) => x.key === key);
  if (!r) throw new Error(`kube-sim: unknown resource ${key}`);
  return r;
}

export const NS = resourceByKey('namespaces');
export const POD = resourceByKey('pods');
export const SERVICE_ACCOUNT = resourceByKey('serviceaccounts');
export const CONFIGMAP = resourceByKey('configmaps');
export const EVENT = resourceByKey('events');
export const DEPLOYMENT = resourceByKey('deployments.apps');
export const REPLICASET = resourceByKey('replicasets.apps');
export const STATEFULSET = resourceByKey('statefulsets.apps');
export const JOB = resourceByKey('jobs.batch');
export const DAEMONSET = resourceByKey('daemonsets.apps');
export const CRONJOB = resourceByKey('cronjobs.batch');
export const HPA = resourceByKey('horizontalpodautoscalers.autoscaling');
export const SECRET = resourceByKey('secrets');
export const PVC = resourceByKey('persistentvolumeclaims');
