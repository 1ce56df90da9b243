/**
 * Garden's volumes: a container's `volumes` (an empty directory, a `hostPath`, or `action:` a
 * persistentvolumeclaim or configmap Deploy, which tend's container volume names by its object:
 * `persistentVolumeClaim` or `configMap`), and those two Deploy types themselves, which Garden
 * 0.13 deploys as a kubernetes Deploy of one PersistentVolumeClaim or ConfigMap named after the
 * action (core/src/plugins/kubernetes/volumes/ before Garden 0.14 removed them).
 */
import type { ModuleDependency } from './module-parts.js';
import type { ConfigPath } from '../project.js';
import type { ModuleParts } from './module-parts.js';
import type { GardenProjectIndex, VolumeDeployType } from './project-index.js';
import { dependencyRef, isRecord, type GardenRecord, type Translation } from './translation.js';

/** What a spec's translation knows of its action. */
export interface ActionFacts {
  kind: string;
  name: string;
  /** The action's dependencies, as tend writes them (`deploy.db`). */
  dependencies: readonly unknown[];
  index: GardenProjectIndex;
}

const volumeKeys: Record<VolumeDeployType, 'persistentVolumeClaim' | 'configMap'> = {
  persistentvolumeclaim: 'persistentVolumeClaim',
  configmap: 'configMap',
};

/** A container's volumes as tend's: `action:` becomes the claim or ConfigMap it names. */
export function containerVolumes(translation: Translation, volumes: unknown, action: ActionFacts): unknown {
  if (!Array.isArray(volumes)) return volumes;
  return volumes.map((volume: unknown, i) => {
    if (!isRecord(volume) || volume.action === undefined) return volume;
    const { action: reference, ...rest } = volume;
    const at: ConfigPath = ['spec', 'volumes', i, 'action'];
    if (rest.hostPath !== undefined) {
      translation.unsupported(at, 'a volume has hostPath or action, not both (as in Garden); remove one');
      return rest;
    }
    const ref = dependencyRef(reference);
    if (typeof ref !== 'string' || !ref.startsWith('deploy.')) {
      translation.unsupported(
        at,
        'action of a volume names a persistentvolumeclaim or configmap Deploy: `deploy.<name>` or `{ kind: Deploy, name: <name> }`',
      );
      return rest;
    }
    const name = ref.slice('deploy.'.length);
    if (!action.dependencies.includes(ref)) {
      translation.unsupported(
        at,
        `${action.kind.toLowerCase()}.${action.name} mounts ${ref} but does not depend on it; add it to dependencies (Garden requires it too)`,
      );
    }
    const type = action.index.volumeDeploys.get(name);
    if (!type) {
      translation.unsupported(
        at,
        `${ref} is not a persistentvolumeclaim or configmap Deploy, the only actions a volume mounts (as in Garden)`,
      );
      return rest;
    }
    translation.moved(['spec', 'volumes', i, volumeKeys[type]], at);
    return { ...rest, [volumeKeys[type]]: name };
  });
}

/** A persistentvolumeclaim or configmap Deploy's spec as a kubernetes Deploy's: its one object. */
export function volumeDeploySpec(
  type: VolumeDeployType,
  translation: Translation,
  spec: GardenRecord,
  action: ActionFacts,
): GardenRecord {
  const [kind, key] =
    type === 'persistentvolumeclaim'
      ? (['PersistentVolumeClaim', 'spec'] as const)
      : (['ConfigMap', 'data'] as const);
  // `namespace` goes on as the kubernetes Deploy's, which names only the environment's namespace.
  const { [key]: body, ...rest } = spec;
  if (!isRecord(body)) {
    translation.unsupported(['spec', key], `spec.${key}: the ${kind}'s ${key}, a mapping, is required`);
  }
  translation.moved(['spec', 'manifests', 0, key], ['spec', key]);
  // Other keys go on, for tend's check to name them.
  return { ...rest, manifests: [{ apiVersion: 'v1', kind, metadata: { name: action.name }, [key]: body }] };
}

/**
 * A 0.12 container service's, task's or test's volumes as Garden 0.13 converts them: `module:` a
 * volume module becomes `action:` its Deploy, which the action then depends on.
 */
export function moduleVolumes(
  volumes: unknown,
  dependencies: ModuleDependency[],
  at: ConfigPath,
): { volumes: unknown; moves: [ConfigPath, ConfigPath][] } {
  if (!Array.isArray(volumes)) return { volumes, moves: [] };
  const moves: [ConfigPath, ConfigPath][] = [];
  const converted = volumes.map((volume: unknown, i) => {
    if (!isRecord(volume) || typeof volume.module !== 'string') return volume;
    const { module, ...rest } = volume;
    const ref = `deploy.${module}`;
    if (!dependencies.includes(ref)) dependencies.push(ref);
    moves.push([
      ['spec', 'volumes', i, 'action'],
      [...at, 'volumes', i, 'module'],
    ]);
    return { ...rest, action: ref };
  });
  return { volumes: converted, moves };
}

/** A 0.12 persistentvolumeclaim or configmap module: one Deploy of that type, named after it. */
export function convertVolumeModule(parts: ModuleParts, type: VolumeDeployType): void {
  const { module, name, buildDependencies, base, runtime, add } = parts;
  // Garden reads no files of a volume module.
  const { include: _include, exclude: _exclude, ...own } = base;
  const key = type === 'persistentvolumeclaim' ? 'spec' : 'data';
  add(
    {
      ...own,
      kind: 'Deploy',
      type,
      name,
      dependencies: [...buildDependencies, ...runtime(module.dependencies)],
      spec: {
        ...(module.namespace !== undefined ? { namespace: module.namespace } : {}),
        [key]: module[key],
      },
    },
    [[['spec'], []]],
  );
}
