/**
 * What reading one Garden document needs to know of the others, gathered from every document of
 * the project before any is read: which action each 0.12 service and task name became, and which
 * Deploys are volumes (a container's `volumes[].action` mounts them by their type).
 */
import { isRecord } from './translation.js';

/** Which kind of action each service and task name of the project's modules became. */
export type ModuleRuntimeNames = ReadonlyMap<string, 'deploy' | 'run'>;

/** Garden's volume Deploy types (Garden 0.13's persistentvolumeclaim and configmap). */
export type VolumeDeployType = 'persistentvolumeclaim' | 'configmap';
export const volumeDeployTypes: readonly string[] = ['persistentvolumeclaim', 'configmap'];

export interface GardenProjectIndex {
  runtimeNames: ModuleRuntimeNames;
  /** The volume Deploys (actions, and the modules that become them) by name. */
  volumeDeploys: ReadonlyMap<string, VolumeDeployType>;
}

export const emptyGardenIndex: GardenProjectIndex = { runtimeNames: new Map(), volumeDeploys: new Map() };

export function gardenProjectIndex(documents: readonly unknown[]): GardenProjectIndex {
  const runtimeNames = new Map<string, 'deploy' | 'run'>();
  const volumeDeploys = new Map<string, VolumeDeployType>();
  for (const document of documents) {
    if (!isRecord(document)) continue;
    const isVolume =
      (document.kind === 'Deploy' || document.kind === 'Module') &&
      volumeDeployTypes.includes(String(document.type));
    if (isVolume && typeof document.name === 'string') {
      volumeDeploys.set(document.name, document.type as VolumeDeployType);
    }
    if (document.kind !== 'Module') continue;
    for (const [key, kind] of [
      ['services', 'deploy'],
      ['tasks', 'run'],
    ] as const) {
      for (const entry of Array.isArray(document[key]) ? document[key] : []) {
        if (isRecord(entry) && typeof entry.name === 'string') runtimeNames.set(entry.name, kind);
      }
    }
  }
  return { runtimeNames, volumeDeploys };
}
