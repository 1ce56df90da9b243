/** The only way the kubernetes plugin reaches a cluster (see client.ts). */
export { KubeClient } from './client.js';
export { resetConnections } from './connection.js';
export { describeFailure, withRetry, type ApiFailure } from './errors.js';
export type { ClusterIdentity } from './gate.js';
export { annotations, labels, ownedBy, type NamespaceInfo } from './namespace-info.js';
export type { DeletionChecks, ManagedNamespaceList, NamespaceDeletion } from './namespaces.js';
export { refOf, type KubeObject, type ObjectRef } from './objects.js';
export type { ExecStreams } from './pods.js';
export { describeChanges, pauseAnnotations, type WorkloadChange, type WorkloadsResult } from './workloads.js';
export type { CoreV1Event, V1Container, V1Pod } from './wire.js';
