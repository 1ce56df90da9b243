/**
 * What a pod needs before its containers can start, as the kubelet checks it: the Secrets and
 * ConfigMaps its volumes and environment name (unless marked optional), with the keys it picks,
 * and the PersistentVolumeClaims its volumes claim. A pod missing one waits — its containers
 * `CreateContainerConfigError` for the environment, `ContainerCreating` for a volume — and
 * starts once what it needs exists.
 */
import { CONFIGMAP, PVC, SECRET } from './resources.js';
import type { Store } from './store.js';
import type { KObject } from './types.js';

export interface Missing {
  reason: 'CreateContainerConfigError' | 'ContainerCreating';
  message: string;
}

interface KeyRef {
  name?: string;
  key?: string;
  optional?: boolean;
}

interface ContainerRefs {
  env?: { valueFrom?: { secretKeyRef?: KeyRef; configMapKeyRef?: KeyRef } }[];
  envFrom?: { secretRef?: KeyRef; configMapRef?: KeyRef }[];
}

interface VolumeRefs {
  name?: string;
  secret?: { secretName?: string; optional?: boolean };
  configMap?: { name?: string; optional?: boolean };
  persistentVolumeClaim?: { claimName?: string };
}

/** The first thing the pod needs that is not there, or undefined when it can start. */
export function missingReference(store: Store, pod: KObject): Missing | undefined {
  const namespace = pod.metadata.namespace!;
  const secret = (name: string) => store.get(SECRET, namespace, name);
  const configMap = (name: string) => store.get(CONFIGMAP, namespace, name);
  for (const v of (pod.spec?.volumes ?? []) as VolumeRefs[]) {
    const mount = `MountVolume.SetUp failed for volume "${v.name}"`;
    if (v.secret?.secretName && !v.secret.optional && !secret(v.secret.secretName)) {
      return { reason: 'ContainerCreating', message: `${mount} : secret "${v.secret.secretName}" not found` };
    }
    if (v.configMap?.name && !v.configMap.optional && !configMap(v.configMap.name)) {
      return { reason: 'ContainerCreating', message: `${mount} : configmap "${v.configMap.name}" not found` };
    }
    const claim = v.persistentVolumeClaim?.claimName;
    if (claim && !store.get(PVC, namespace, claim)) {
      return { reason: 'ContainerCreating', message: `persistentvolumeclaim "${claim}" not found` };
    }
  }
  const containers = [
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.containers ?? []),
  ] as ContainerRefs[];
  for (const c of containers) {
    const refs: { ref: KeyRef; kind: 'Secret' | 'ConfigMap'; whole: boolean }[] = [
      ...(c.env ?? []).flatMap((e) => [
        ...(e.valueFrom?.secretKeyRef
          ? [{ ref: e.valueFrom.secretKeyRef, kind: 'Secret' as const, whole: false }]
          : []),
        ...(e.valueFrom?.configMapKeyRef
          ? [{ ref: e.valueFrom.configMapKeyRef, kind: 'ConfigMap' as const, whole: false }]
          : []),
      ]),
      ...(c.envFrom ?? []).flatMap((e) => [
        ...(e.secretRef ? [{ ref: e.secretRef, kind: 'Secret' as const, whole: true }] : []),
        ...(e.configMapRef ? [{ ref: e.configMapRef, kind: 'ConfigMap' as const, whole: true }] : []),
      ]),
    ];
    for (const { ref, kind, whole } of refs) {
      if (!ref.name || ref.optional) continue;
      const object = kind === 'Secret' ? secret(ref.name) : configMap(ref.name);
      if (!object) {
        return {
          reason: 'CreateContainerConfigError',
          message: `${kind.toLowerCase()} "${ref.name}" not found`,
        };
      }
      const data = {
        ...((object['data'] as object | undefined) ?? {}),
        ...((object['binaryData'] as object | undefined) ?? {}),
      };
      if (!whole && ref.key !== undefined && !(ref.key in data)) {
        return {
          reason: 'CreateContainerConfigError',
          message: `couldn't find key ${ref.key} in ${kind} ${namespace}/${ref.name}`,
        };
      }
    }
  }
  return undefined;
}
