/**
 * What reading one Garden document needs to know of the others, gathered from every document of
 * the project before any is read: which action each 0.12 service and task name became, which
 * Deploys are volumes (a container's `volumes[].action` mounts them by their type), and the helm
 * modules (a helm module's `base` is one).
 */
import path from 'node:path';
import { isGardenFile } from '../files.js';
import type { SourceFile } from '../source.js';
import { isRecord, type GardenRecord } from './translation.js';

/** Which kind of action each service and task name of the project's modules became. */
export type ModuleRuntimeNames = ReadonlyMap<string, 'deploy' | 'run'>;

/** Garden's volume Deploy types (Garden 0.13's persistentvolumeclaim and configmap). */
export type VolumeDeployType = 'persistentvolumeclaim' | 'configmap';
export const volumeDeployTypes: readonly string[] = ['persistentvolumeclaim', 'configmap'];

/** A module as written, with its directory (absolute). */
export interface IndexedModule {
  value: GardenRecord;
  dir: string;
}

export interface GardenProjectIndex {
  runtimeNames: ModuleRuntimeNames;
  /** The volume Deploys (actions, and the modules that become them) by name. */
  volumeDeploys: ReadonlyMap<string, VolumeDeployType>;
  /** The modules by name. */
  modules: ReadonlyMap<string, IndexedModule>;
}

export const emptyGardenIndex: GardenProjectIndex = {
  runtimeNames: new Map(),
  volumeDeploys: new Map(),
  modules: new Map(),
};

/** The index of the Garden files among the project's files. */
export function gardenProjectIndex(root: string, files: readonly SourceFile[]): GardenProjectIndex {
  const runtimeNames = new Map<string, 'deploy' | 'run'>();
  const volumeDeploys = new Map<string, VolumeDeployType>();
  const modules = new Map<string, IndexedModule>();
  const documents = files
    .filter((file) => isGardenFile(file.file))
    .flatMap((file) =>
      file
        .parse()
        .documents.map((doc) => ({ document: doc.value, dir: path.join(root, path.dirname(file.file)) })),
    );
  for (const { document, dir } of documents) {
    if (!isRecord(document)) continue;
    const isVolume =
      (document.kind === 'Deploy' || document.kind === 'Module') &&
      volumeDeployTypes.includes(String(document.type));
    if (isVolume && typeof document.name === 'string') {
      volumeDeploys.set(document.name, document.type as VolumeDeployType);
    }
    if (document.kind !== 'Module') continue;
    if (typeof document.name === 'string') modules.set(document.name, { value: document, dir });
    for (const [key, kind] of [
      ['services', 'deploy'],
      ['tasks', 'run'],
    ] as const) {
      for (const entry of Array.isArray(document[key]) ? document[key] : []) {
        if (isRecord(entry) && typeof entry.name === 'string') runtimeNames.set(entry.name, kind);
      }
    }
  }
  return { runtimeNames, volumeDeploys, modules };
}
