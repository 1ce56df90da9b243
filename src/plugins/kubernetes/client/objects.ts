/**
 * Objects of any kind, for manifests: discovery (is a kind namespaced?), server-side apply
 * (field manager `tend`), read and delete. Every call goes through the request gate.
 */
import type * as k8s from '@kubernetes/client-node';
import { TendError } from '../../../errors.js';
import { apiError, describeFailure } from './errors.js';
import type { RequestGate } from './gate.js';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
}

export type KubeObject = k8s.KubernetesObject & { spec?: unknown; status?: unknown; [key: string]: unknown };

/** The reference of an object (apiVersion, kind, name) for read and delete. */
export function refOf(object: KubeObject): ObjectRef {
  return { apiVersion: object.apiVersion!, kind: object.kind!, name: object.metadata!.name! };
}

export class ObjectCalls {
  private readonly namespacedCache = new Map<string, boolean>();

  constructor(private readonly gate: RequestGate) {}

  /** Whether a kind is namespaced (discovery, cached per call). Unknown kinds are a manifest error. */
  async isNamespaced(apiVersion: string, kind: string): Promise<boolean> {
    const key = `${apiVersion}/${kind}`;
    const cached = this.namespacedCache.get(key);
    if (cached !== undefined) return cached;
    const objects = this.gate.connection.objects as unknown as {
      resource(apiVersion: string, kind: string): Promise<k8s.V1APIResource | undefined>;
    };
    let resource: k8s.V1APIResource | undefined;
    try {
      resource = await this.gate.retry(`discover ${key}`, () => objects.resource(apiVersion, kind), true);
    } catch (error) {
      const f = describeFailure(error);
      if (f.status !== 404) throw apiError(error, this.gate.describe(`discover ${key}`));
    }
    if (!resource) {
      throw new TendError(
        'TEND_K8S_MANIFEST_INVALID',
        `the cluster does not know kind ${kind} in apiVersion ${apiVersion}`,
        { detail: { apiVersion, kind } },
      );
    }
    this.namespacedCache.set(key, resource.namespaced);
    return resource.namespaced;
  }

  /** Server-side apply (field manager `tend`, forcing conflicts) of one object into the namespace. */
  async apply(namespace: string, object: KubeObject): Promise<KubeObject> {
    const { k8s } = this.gate.connection;
    const body = { ...object, metadata: { ...object.metadata, namespace } };
    return this.gate.request(
      namespace,
      `apply ${object.kind} ${object.metadata?.name} in ${namespace}`,
      () =>
        this.gate.connection.objects.patch(
          body,
          undefined,
          undefined,
          'tend',
          true,
          k8s.PatchStrategy.ServerSideApply,
        ) as Promise<KubeObject>,
    );
  }

  read(namespace: string, ref: ObjectRef): Promise<KubeObject | undefined> {
    return this.gate.requestOptional(
      namespace,
      `read ${ref.kind} ${ref.name} in ${namespace}`,
      () =>
        this.gate.connection.objects.read({
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          metadata: { name: ref.name, namespace },
        }) as Promise<KubeObject>,
    );
  }

  async delete(namespace: string, ref: ObjectRef): Promise<boolean> {
    const result = await this.gate.requestOptional(
      namespace,
      `delete ${ref.kind} ${ref.name} in ${namespace}`,
      () =>
        this.gate.connection.objects.delete(
          { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace } },
          undefined,
          undefined,
          undefined,
          undefined,
          'Background',
        ),
    );
    return result !== undefined;
  }
}
