/**
 * Objects of any kind, for manifests: discovery (is a kind namespaced?), server-side apply
 * (field manager `tend`), read and delete. Every call goes through the request gate, and only
 * namespaced kinds pass: a Namespace or another cluster-scoped object is refused before any
 * request (`TEND_K8S_CLUSTER_SCOPED`), so a plugin cannot delete or relabel a namespace around
 * the one create and delete path (the namespace gate's `ensure` and `deleteOwned`).
 */
import { TendError } from '../../../errors.js';
import { apiError, describeFailure } from './errors.js';
import type { RequestGate } from './gate.js';
import { ResourcePaths, type Resource } from './resources.js';
import type { KubernetesObject } from './wire.js';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
}

export type KubeObject = KubernetesObject & { spec?: unknown; status?: unknown; [key: string]: unknown };

/** The reference of an object (apiVersion, kind, name) for read and delete. */
export function refOf(object: KubeObject): ObjectRef {
  return { apiVersion: object.apiVersion!, kind: object.kind!, name: object.metadata!.name! };
}

export class ObjectCalls {
  constructor(private readonly gate: RequestGate) {}

  /** Whether a kind is namespaced. */
  async isNamespaced(apiVersion: string, kind: string): Promise<boolean> {
    return (await resourceOf(this.gate, apiVersion, kind)).namespaced;
  }

  /** Server-side apply (field manager `tend`, forcing conflicts) of one object into the namespace. */
  async apply(namespace: string, object: KubeObject): Promise<KubeObject> {
    const what = `apply ${object.kind} ${object.metadata?.name}`;
    const path = await namespacedPath(this.gate, namespace, objectRef(object), what);
    const body = { ...object, metadata: { ...object.metadata, namespace } };
    return this.gate.request(namespace, `${what} in ${namespace}`, () =>
      this.gate.connection.request<KubeObject>({
        method: 'PATCH',
        path,
        query: { fieldManager: 'tend', force: true },
        body,
        contentType: 'application/apply-patch+yaml',
      }),
    );
  }

  async read(namespace: string, ref: ObjectRef): Promise<KubeObject | undefined> {
    const path = await namespacedPath(this.gate, namespace, ref, `read ${ref.kind} ${ref.name}`);
    return this.gate.requestOptional(namespace, `read ${ref.kind} ${ref.name} in ${namespace}`, () =>
      this.gate.connection.request<KubeObject>({ method: 'GET', path }),
    );
  }

  async delete(namespace: string, ref: ObjectRef): Promise<boolean> {
    const path = await namespacedPath(this.gate, namespace, ref, `delete ${ref.kind} ${ref.name}`);
    const result = await this.gate.requestOptional(
      namespace,
      `delete ${ref.kind} ${ref.name} in ${namespace}`,
      () =>
        this.gate.connection.request<unknown>({
          method: 'DELETE',
          path,
          query: { propagationPolicy: 'Background' },
        }),
    );
    return result !== undefined;
  }
}

/** A kind's resource (discovery, once per process and cluster). Unknown kinds are a manifest error. */
async function resourceOf(gate: RequestGate, apiVersion: string, kind: string): Promise<Resource> {
  const key = `${apiVersion}/${kind}`;
  let resource: Resource | undefined;
  try {
    resource = await gate.retry(
      `discover ${key}`,
      () => gate.connection.resources.resource(apiVersion, kind),
      true,
    );
  } catch (error) {
    const f = describeFailure(error);
    if (f.status !== 404) throw apiError(error, gate.describe(`discover ${key}`));
  }
  if (!resource) {
    throw new TendError(
      'TEND_K8S_MANIFEST_INVALID',
      `the cluster does not know kind ${kind} in apiVersion ${apiVersion}`,
      { detail: { apiVersion, kind } },
    );
  }
  return resource;
}

/** What names an object's path: its kind, and its name when it is one object. */
export interface PathRef {
  apiVersion?: string;
  kind?: string;
  name?: string;
}

/** The reference of an object for its path (a manifest may lack any of it: refused then). */
export function objectRef(object: KubeObject): PathRef {
  return { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata?.name };
}

/**
 * The URL path of a namespaced object (with its name) or of its kind's objects in the namespace.
 * What is not a namespaced kind is refused before any request: those are not a plugin's to touch.
 */
export async function namespacedPath(
  gate: RequestGate,
  namespace: string,
  { apiVersion, kind, name }: PathRef,
  what: string,
): Promise<string> {
  const namespaceKind = kind === 'Namespace' && (apiVersion === 'v1' || apiVersion === undefined);
  const resource = namespaceKind ? undefined : await resourceOf(gate, apiVersion ?? '', kind ?? '');
  if (!resource?.namespaced) {
    throw new TendError(
      'TEND_K8S_CLUSTER_SCOPED',
      `refused to ${what}: ${kind} is cluster-scoped; plugins touch only namespaced objects, and tend creates and deletes namespaces only through its namespace gate`,
      { detail: { apiVersion, kind } },
    );
  }
  return ResourcePaths.path(apiVersion!, resource, namespace, name);
}
