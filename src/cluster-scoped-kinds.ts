/**
 * Kinds the Kubernetes API server keeps outside namespaces, known without asking a cluster: the
 * built-in ones, and cert-manager's ClusterIssuer, the one custom resource such projects commonly
 * ship. tend deploys only into an environment's namespace: `tend init` leaves files with these out
 * (src/config/init/plan.ts), and `tend validate` notes them in a kubernetes Deploy's manifests
 * (src/plugins/kubernetes/manifest-namespaces.ts); the deploy asks the cluster about the rest.
 */
export const clusterScopedKinds: ReadonlySet<string> = new Set([
  'APIService',
  'CertificateSigningRequest',
  'ClusterIssuer',
  'ClusterRole',
  'ClusterRoleBinding',
  'CSIDriver',
  'CSINode',
  'CustomResourceDefinition',
  'IngressClass',
  'MutatingWebhookConfiguration',
  'Namespace',
  'Node',
  'PersistentVolume',
  'PriorityClass',
  'RuntimeClass',
  'StorageClass',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'ValidatingWebhookConfiguration',
  'VolumeAttachment',
]);
