/**
 * The volumes of a container Deploy's pods and of a kubernetes-pod (Garden's container volumes):
 * an empty directory, a directory of the node (`hostPath`), a PersistentVolumeClaim or a
 * ConfigMap, each mounted at `containerPath` in the container.
 */
import path from 'node:path';
import { Type, type Static } from 'typebox';
import type { ResolvedAction } from '../../plugin/types.js';

const sourceKeys = ['hostPath', 'persistentVolumeClaim', 'configMap'] as const;

const ObjectName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$', description });

export const ContainerVolume = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }),
    containerPath: Type.String({ minLength: 1, description: 'where the volume is mounted in the container' }),
    hostPath: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "a directory of the node (relative to the action's source directory, or absolute), as on a local cluster whose node is this machine",
      }),
    ),
    persistentVolumeClaim: Type.Optional(ObjectName('the PersistentVolumeClaim mounted (its claim name)')),
    configMap: Type.Optional(ObjectName('the ConfigMap whose keys are files in the directory')),
  },
  {
    additionalProperties: false,
    // At most one source; none is an empty directory (emptyDir).
    not: { anyOf: [0, 1, 2].map((i) => ({ required: sourceKeys.filter((_, j) => j !== i) })) },
    notErrorMessage: 'a volume with at most one of hostPath, persistentVolumeClaim and configMap',
  },
);
export type ContainerVolume = Static<typeof ContainerVolume>;

export const ContainerVolumes = Type.Array(ContainerVolume, {
  description:
    'volumes mounted in the container: an empty directory (emptyDir), or `hostPath`, `persistentVolumeClaim` or `configMap`',
});

/** A volume of a pod spec, of the kinds a ContainerVolume makes. */
export interface PodVolume {
  name: string;
  emptyDir?: Record<string, never>;
  hostPath?: { path: string };
  persistentVolumeClaim?: { claimName: string };
  configMap?: { name: string };
}

/** The pod's volumes and the container's mounts, as Garden's configureVolumes makes them. */
export function podVolumes(
  action: Pick<ResolvedAction, 'sourceDir'>,
  volumes: readonly ContainerVolume[],
): { volumes: PodVolume[]; volumeMounts: { name: string; mountPath: string }[] } {
  return {
    volumes: volumes.map((v): PodVolume => ({
      name: v.name,
      ...(v.hostPath !== undefined
        ? { hostPath: { path: path.resolve(action.sourceDir, v.hostPath) } }
        : v.persistentVolumeClaim !== undefined
          ? { persistentVolumeClaim: { claimName: v.persistentVolumeClaim } }
          : v.configMap !== undefined
            ? { configMap: { name: v.configMap } }
            : { emptyDir: {} }),
    })),
    volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: v.containerPath })),
  };
}
