/** Canonical identities used by the registry. */

export interface EnvironmentIdentity {
  project: string;
  name: string;
  namespace: string;
}

export function environmentKey(e: EnvironmentIdentity): string {
  return JSON.stringify([e.project, e.name, e.namespace]);
}
