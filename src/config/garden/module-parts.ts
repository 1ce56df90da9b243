/**
 * What converting each type of 0.12 module starts from (garden/modules.ts converts exec,
 * container and kubernetes modules, garden/helm-module.ts helm modules), and what they share.
 */
import type { ConfigPath } from '../project.js';
import type { IndexedModule } from './project-index.js';
import { isRecord, type GardenRecord, type Translation } from './translation.js';

export interface ModuleParts {
  module: GardenRecord;
  name: string;
  /** The module's directory (its Dockerfile or chart is looked for there). */
  moduleDir: string;
  build: GardenRecord;
  /** `build.<module>` of each of the module's `build.dependencies`. */
  buildDependencies: string[];
  /** Keys every action of the module gets (description, include, exclude, disabled, variables). */
  base: GardenRecord;
  /** Runtime dependencies (service and task names) as action references. */
  runtime: (dependencies: unknown) => string[];
  add: (value: GardenRecord, moves: [ConfigPath, ConfigPath][]) => void;
  entries: (key: 'services' | 'tasks' | 'tests') => { entry: GardenRecord; at: ConfigPath }[];
  translation: Translation;
  /** The project's modules by name (a helm module's `base`). */
  modules: ReadonlyMap<string, IndexedModule>;
}

export const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

/** Garden's `convertServiceResourceSpec`: a pod selector, or a kind (default Deployment) and a name. */
export function targetResource(resource: unknown, moduleName: string): GardenRecord | undefined {
  if (!isRecord(resource)) return undefined;
  const target: GardenRecord =
    isRecord(resource.podSelector) && Object.keys(resource.podSelector).length > 0
      ? { podSelector: resource.podSelector }
      : { kind: resource.kind ?? 'Deployment', name: resource.name ?? moduleName };
  if (resource.containerName !== undefined) target.containerName = resource.containerName;
  return target;
}

/** Garden's env values as tend's: strings (a number or boolean as its text), a `secretRef` as it is. */
export function envStrings(env: unknown): unknown {
  if (!isRecord(env)) return env;
  return Object.fromEntries(
    Object.entries(env).map(([key, value]) => [
      key,
      typeof value === 'number' || typeof value === 'boolean' ? String(value) : value,
    ]),
  );
}
