/**
 * What converting each type of 0.12 module starts from (garden/modules.ts converts exec,
 * container and kubernetes modules, garden/helm-module.ts helm modules).
 */
import type { ConfigPath } from '../project.js';
import type { GardenRecord, Translation } from './translation.js';

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
}

export const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
