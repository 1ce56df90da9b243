/** Canonical identities used by the registry. */
import type { Target } from '../../events/catalog.js';

/** `kubernetes/<clusterId>` or `local/<hostId>/<path>`: the place a namespace lives. */
export function targetKey(target: Target): string {
  return target.kind === 'kubernetes'
    ? `kubernetes/${target.clusterId}`
    : `local/${target.hostId}/${target.path}`;
}

export interface EnvironmentIdentity {
  project: string;
  name: string;
  namespace: string;
}

export function environmentKey(e: EnvironmentIdentity): string {
  return JSON.stringify([e.project, e.name, e.namespace]);
}
