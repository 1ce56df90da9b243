/**
 * What tend reads from and writes on a Namespace object: its labels and annotations, the state
 * it is in, and whether tend created it for a project (and so may delete it).
 */
import type { NamespaceState } from '../../../events/catalog.js';
import type { V1Namespace } from './wire.js';

export const labels = {
  managedBy: 'app.kubernetes.io/managed-by',
  action: 'tend.dev/action',
} as const;
export const annotations = {
  project: 'tend.dev/project',
  environment: 'tend.dev/environment',
  createdAt: 'tend.dev/created-at',
  lastActivity: 'tend.dev/last-activity',
  adopted: 'tend.dev/adopted',
  role: 'tend.dev/role',
  version: 'tend.dev/version',
  requestId: 'tend.dev/request-id',
} as const;

export interface NamespaceInfo {
  name: string;
  uid?: string;
  state: NamespaceState;
  resourceVersion?: string;
  /** Its `creationTimestamp`: when the API server created it. */
  createdAt?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** `managed-by=tend` and the project annotation of this project: tend created it for this project. */
export function ownedBy(info: NamespaceInfo, project: string): boolean {
  return (
    info.labels[labels.managedBy] === 'tend' &&
    info.annotations[annotations.project] === project &&
    info.annotations[annotations.adopted] !== 'true'
  );
}

export function missing(name: string): NamespaceInfo {
  return { name, state: 'missing', labels: {}, annotations: {} };
}

export function toInfo(ns: V1Namespace): NamespaceInfo {
  const meta = ns.metadata ?? {};
  const terminating = ns.status?.phase === 'Terminating' || meta.deletionTimestamp !== undefined;
  const info: NamespaceInfo = {
    name: meta.name ?? '',
    state: terminating ? 'terminating' : 'ready',
    labels: { ...meta.labels },
    annotations: { ...meta.annotations },
  };
  if (meta.uid) info.uid = meta.uid;
  if (meta.resourceVersion) info.resourceVersion = meta.resourceVersion;
  if (meta.creationTimestamp) info.createdAt = meta.creationTimestamp;
  return info;
}
