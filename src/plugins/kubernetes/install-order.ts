/**
 * The order tend creates a namespace's objects in, deploying them (deploy.ts) or restoring an
 * archive (restore.ts): Helm's install order of the namespaced kinds
 * (pkg/releaseutil/kind_sorter.go), so that what a pod reads — its ServiceAccount, Secrets,
 * ConfigMaps, claims — exists before the workloads that start pods. A Deployment created before
 * the Secret it mounts starts pods that fail on it (CreateContainerConfigError), which the
 * readiness check takes for a failure. Kinds Helm does not list come last; each kind keeps the
 * order given.
 */
const installOrder = [
  'Namespace',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'PersistentVolumeClaim',
  'Role',
  'RoleBinding',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'Ingress',
];

/** The objects in install order (a stable sort: the same kinds keep the order given). */
export function inInstallOrder<T extends { kind?: string }>(objects: readonly T[]): T[] {
  const rank = (object: T) => {
    const index = installOrder.indexOf(String(object.kind));
    return index === -1 ? installOrder.length : index;
  };
  return [...objects].sort((a, b) => rank(a) - rank(b));
}
