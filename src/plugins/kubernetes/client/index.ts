/** The only way the kubernetes plugin reaches a cluster (see client.ts). */
export {
  annotations,
  KubeClient,
  labels,
  ownedBy,
  type ClusterIdentity,
  type ExecStreams,
  type KubeObject,
  type NamespaceInfo,
  type ObjectRef,
} from './client.js';
export { resetConnections } from './connection.js';
export { describeFailure, withRetry, type ApiFailure } from './errors.js';
export type { CoreV1Event, V1Container, V1Pod } from '@kubernetes/client-node';
