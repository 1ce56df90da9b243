/**
 * The API objects tend reads and sends, as they travel: JSON. The shapes are
 * @kubernetes/client-node's models (types only), with their timestamps as the strings the API
 * sends — the models type them as Date, which the library's generated deserializer made of them;
 * tend's requests (connection.ts) parse the JSON and nothing more.
 */
import type * as k8s from '@kubernetes/client-node';

/** A model as JSON: Date fields are RFC 3339 strings, everything else as the model says. */
export type Wire<T> = T extends Date
  ? string
  : T extends (infer E)[]
    ? Wire<E>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

/** A list as the API sends it: its `continue` token is `continue` (the models rename it `_continue`). */
export interface List<T> {
  items: T[];
  metadata?: { continue?: string; remainingItemCount?: number; resourceVersion?: string };
}

export type V1Pod = Wire<k8s.V1Pod>;
export type V1Container = Wire<k8s.V1Container>;
export type CoreV1Event = Wire<k8s.CoreV1Event>;
export type V1Namespace = Wire<k8s.V1Namespace>;
export type V1ObjectMeta = Wire<k8s.V1ObjectMeta>;
export type V1Status = Wire<k8s.V1Status>;
export type V1APIResourceList = Wire<k8s.V1APIResourceList>;
export type KubernetesObject = Wire<k8s.KubernetesObject>;
