/**
 * What reading one Garden document needs to know of the others, gathered from every document of
 * the project before any is read: which action each 0.12 service and task name became, which
 * Deploys are volumes (a container's `volumes[].action` mounts them by their type), and the helm
 * modules (a helm module's `base` is one).
 */
import path from 'node:path';
import { isGardenFile } from '../files.js';
import type { SourceLocation } from '../../errors.js';
import type { ConfigProblem } from '../diagnostics.js';
import { formatLocation, type ConfigPath } from '../project.js';
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
  /** The modules by name (the first of a name). */
  modules: ReadonlyMap<string, IndexedModule>;
  /** Modules whose name an earlier module has: refused (a problem each), so not converted. */
  refusedModules: ReadonlySet<unknown>;
  /** What Garden refuses across modules: a name of two modules, of a service and a task. */
  problems: readonly ConfigProblem[];
}

export const emptyGardenIndex: GardenProjectIndex = {
  runtimeNames: new Map(),
  volumeDeploys: new Map(),
  modules: new Map(),
  refusedModules: new Set(),
  problems: [],
};

/** A service or task name: which kind it became, of which module, where. */
interface RuntimeName {
  kind: 'deploy' | 'run';
  module: string;
  location: SourceLocation;
}

const entryWords = { deploy: 'service', run: 'task' } as const;

/** The index of the Garden files among the project's files. */
export function gardenProjectIndex(root: string, files: readonly SourceFile[]): GardenProjectIndex {
  const volumeDeploys = new Map<string, VolumeDeployType>();
  const modules = new Map<string, IndexedModule & { location: SourceLocation }>();
  const runtime = new Map<string, RuntimeName>();
  const refusedModules = new Set<unknown>();
  const problems: ConfigProblem[] = [];
  const duplicate = (message: string, location: SourceLocation) =>
    problems.push({ code: 'TEND_CONFIG_DUPLICATE_ACTION', message, location });
  for (const file of files.filter((f) => isGardenFile(f.file))) {
    const dir = path.join(root, path.dirname(file.file));
    for (const { value: document, index } of file.parse().documents) {
      if (!isRecord(document)) continue;
      const locate = (p: ConfigPath) => file.locate(index, p);
      const isVolume =
        (document.kind === 'Deploy' || document.kind === 'Module') &&
        volumeDeployTypes.includes(String(document.type));
      if (isVolume && typeof document.name === 'string') {
        volumeDeploys.set(document.name, document.type as VolumeDeployType);
      }
      if (document.kind !== 'Module' || typeof document.name !== 'string') continue;
      const name = document.name;
      const first = modules.get(name);
      // Garden 0.13 renders a templated module as a RenderTemplate: its name is no module's.
      if (first && document.type !== 'templated' && first.value.type !== 'templated') {
        // Garden refuses it whether or not either is disabled (Garden.addRawModuleConfig).
        duplicate(
          `duplicate module ${name}; first defined at ${formatLocation(first.location)}: Garden refuses a module name declared twice (a disabled module too); rename one`,
          locate(['name']),
        );
        refusedModules.add(document);
        continue;
      }
      if (!first) modules.set(name, { value: document, dir, location: locate(['name']) });
      for (const [key, kind] of [
        ['services', 'deploy'],
        ['tasks', 'run'],
      ] as const) {
        (Array.isArray(document[key]) ? document[key] : []).forEach((entry: unknown, i) => {
          if (!isRecord(entry) || typeof entry.name !== 'string') return;
          const location = locate([key, i, 'name']);
          const earlier = runtime.get(entry.name);
          // Two of one kind are two actions of one name, refused as such (cross-check.ts).
          if (earlier === undefined) runtime.set(entry.name, { kind, module: name, location });
          else if (earlier.kind !== kind) {
            duplicate(
              `${entryWords[kind]} ${entry.name} of module ${name} has the name of ${entryWords[earlier.kind]} ${entry.name} of module ${earlier.module} (${formatLocation(earlier.location)}): Garden requires service and task names to be mutually unique; rename one`,
              location,
            );
          }
        });
      }
    }
  }
  const runtimeNames = new Map([...runtime].map(([name, { kind }]) => [name, kind]));
  return { runtimeNames, volumeDeploys, modules, refusedModules, problems };
}
