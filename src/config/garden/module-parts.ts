/**
 * What converting each type of 0.12 module starts from (garden/modules.ts converts exec,
 * container and kubernetes modules, garden/helm-module.ts helm modules), and what they share.
 */
import type { ModuleNamesTemplate } from '../action-dependencies.js';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import type { ConfigPath } from '../project.js';
import { containsTemplate } from '../template.js';
import type { IndexedModule } from './project-index.js';
import { isRecord, type GardenRecord, type Translation } from './translation.js';

/** A converted action's dependency: a reference, or a module's templated names (resolved per environment). */
export type ModuleDependency = string | ModuleNamesTemplate;

export interface ModuleParts {
  module: GardenRecord;
  name: string;
  /** The module's directory (its Dockerfile or chart is looked for there). */
  moduleDir: string;
  build: GardenRecord;
  /** `build.<module>` of each of the module's `build.dependencies` (those of modules with a Build). */
  buildDependencies: ModuleDependency[];
  /** Where each of `buildDependencies` is in the module, for a Build's `dependencies`. */
  buildDependencyMoves: [ConfigPath, ConfigPath][];
  /** `build.<module>` of a module named at `at`, or none (a note) where that module has no Build. */
  buildOf: (moduleName: string, at: ConfigPath) => string[];
  /** Keys every action of the module gets (description, include, exclude, disabled, variables). */
  base: GardenRecord;
  /** Keys the module's Build gets (`copyFrom`, `buildAtSource`), with where each is in the module. */
  buildKeys: { value: GardenRecord; moves: [ConfigPath, ConfigPath][] };
  /** Runtime dependencies (service and task names) as action references. */
  runtime: (dependencies: unknown) => ModuleDependency[];
  add: (value: GardenRecord, moves: [ConfigPath, ConfigPath][]) => void;
  entries: (key: 'services' | 'tasks' | 'tests') => { entry: GardenRecord; at: ConfigPath }[];
  translation: Translation;
  /** The project's modules by name (a helm module's `base`). */
  modules: ReadonlyMap<string, IndexedModule>;
}

export const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

/** Where the keys of a service's, task's or test's action are in its entry of the module (at `at`). */
export const entryMoves = (at: ConfigPath): [ConfigPath, ConfigPath][] => [
  [['spec'], at],
  [['name'], [...at, 'name']],
  [['dependencies'], [...at, 'dependencies']],
  [['timeout'], [...at, 'timeout']],
];

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

/** Garden's env values as tend's: strings (a number, boolean or null as its text), a `secretRef` as it is. */
export function envStrings(env: unknown): unknown {
  if (!isRecord(env)) return env;
  return Object.fromEntries(
    Object.entries(env).map(([key, value]) => [
      key,
      // Garden's prepareEnvVars: a number or boolean as its text, an empty value (null) as "null".
      typeof value === 'number' || typeof value === 'boolean' || value === null ? String(value) : value,
    ]),
  );
}

/**
 * A helm or kubernetes module's `tasks` and `tests` as Garden 0.13 converts them: pod Runs and
 * Tests running like the workload of their `resource` (else the module's `serviceResource`); an
 * entry that names neither is a note, not an action.
 */
export function addModulePods(
  parts: ModuleParts,
  o: {
    type: 'helm-pod' | 'kubernetes-pod';
    /** Keys every action of the module gets. */
    base: GardenRecord;
    serviceResource: unknown;
    /** An entry's action dependencies, from its own `dependencies`. */
    dependencies: (entryDependencies: unknown) => ModuleDependency[];
    /** The module's keys every pod gets (its chart, its manifests), and where each came from. */
    spec: GardenRecord;
    moves: [ConfigPath, ConfigPath][];
    /** An entry's own `disabled` is kept (a kubernetes module's) or left out (a helm module's). */
    keepsDisabled: boolean;
  },
): void {
  const { name, add, entries, translation } = parts;
  for (const [key, kind] of [
    ['tasks', 'Run'],
    ['tests', 'Test'],
  ] as const) {
    for (const { entry, at } of entries(key)) {
      const { name: entryName, description, dependencies, disabled, timeout, resource: own, ...rest } = entry;
      const resource = targetResource(own ?? o.serviceResource, name);
      if (!resource) {
        translation.note(
          at,
          `${key === 'tasks' ? 'task' : 'test'} ${String(entryName)} names no resource (nor does the module's serviceResource): Garden converts it to no action; not loaded`,
        );
        continue;
      }
      add(
        {
          ...o.base,
          kind,
          type: o.type,
          name: kind === 'Test' ? `${name}-${String(entryName)}` : entryName,
          ...(kind === 'Run' && description !== undefined ? { description } : {}),
          ...(o.keepsDisabled && disabled !== undefined ? { disabled } : {}),
          dependencies: o.dependencies(dependencies),
          ...(timeout !== undefined ? { timeout } : {}),
          spec: {
            ...rest,
            ...(rest.env !== undefined ? { env: envStrings(rest.env) } : {}),
            resource,
            ...o.spec,
          },
        },
        [
          ...o.moves,
          [['spec', 'resource'], own !== undefined ? [...at, 'resource'] : ['serviceResource']],
          ...entryMoves(at),
        ],
      );
    }
  }
}

/**
 * Garden's `moduleHasDockerfile`: a module that names its `dockerfile` is built; otherwise one is
 * when its `Dockerfile` is among the module's files (there, and not left out by `include` or
 * `exclude`). A module with neither deploys its `image` as it is.
 */
export function moduleHasDockerfile(module: GardenRecord, moduleDir: string): boolean {
  if (typeof module.dockerfile === 'string' && module.dockerfile !== '') return true;
  if (!existsSync(path.join(moduleDir, 'Dockerfile'))) return false;
  // Garden's augmentGlobs: a pattern naming a directory (`.`, `src`) stands for everything below it.
  const matches = (patterns: unknown) =>
    strings(patterns).some((pattern) => {
      const glob =
        !picomatch.scan(pattern).isGlob &&
        statSync(path.join(moduleDir, pattern), { throwIfNoEntry: false })?.isDirectory()
          ? path.posix.join(pattern, '**', '*')
          : pattern;
      return picomatch(glob, { dot: true })('Dockerfile');
    });
  // A templated include is resolved only in an environment: it may hold the Dockerfile, so it is built.
  if (Array.isArray(module.include) && !containsTemplate(module.include) && !matches(module.include)) {
    return false;
  }
  return !matches(module.exclude);
}

/**
 * A module's `build.dependencies[].copy` as its Build's `copyFrom` (Garden's convertModules:
 * `source` is `sourcePath`, `target` `targetPath`, which defaults to it), and `local` as its
 * `buildAtSource` (Garden's inheritModuleToAction), with where each is in the module.
 */
export function moduleBuildKeys(module: GardenRecord): ModuleParts['buildKeys'] {
  const build = isRecord(module.build) ? module.build : {};
  const copyFrom: GardenRecord[] = [];
  const moves: [ConfigPath, ConfigPath][] = [];
  (Array.isArray(build.dependencies) ? build.dependencies : []).forEach((dependency: unknown, i) => {
    if (!isRecord(dependency) || !Array.isArray(dependency.copy)) return;
    const at: ConfigPath = ['build', 'dependencies', i];
    dependency.copy.forEach((copy: unknown, j) => {
      // Another key, or a copy that is no mapping, is left for the schema to refuse at its line.
      const { source, target, ...rest } = isRecord(copy) ? copy : { source: copy };
      const to: ConfigPath = ['copyFrom', copyFrom.length];
      const from: ConfigPath = [...at, 'copy', j];
      copyFrom.push({
        ...rest,
        build: dependency.name,
        sourcePath: source,
        ...(target !== undefined ? { targetPath: target } : {}),
      });
      moves.push(
        [to, from],
        [
          [...to, 'build'],
          [...at, 'name'],
        ],
        [
          [...to, 'sourcePath'],
          [...from, 'source'],
        ],
        [
          [...to, 'targetPath'],
          [...from, 'target'],
        ],
      );
    });
  });
  if (module.local !== undefined) moves.push([['buildAtSource'], ['local']]);
  return {
    value: {
      ...(copyFrom.length > 0 ? { copyFrom } : {}),
      ...(module.local !== undefined ? { buildAtSource: module.local } : {}),
    },
    moves,
  };
}

/** Module types that become no Build whatever their keys, in Garden's conversion as in tend's. */
const typesWithoutBuild: readonly unknown[] = ['kubernetes', 'persistentvolumeclaim', 'configmap'];

/**
 * Whether a build dependency on module `name` is left out, with a note at `at`: the module becomes
 * no Build (an exec module without `build.command`, a container module without a Dockerfile, a
 * kubernetes module), so nothing of it is built first. Garden 0.13 removes such dependencies after
 * converting the modules, with a warning. A helm module has a Build in Garden that only copies its
 * files; tend has none (it reads the chart in place), so a dependency on it is left out too, with
 * its own note. A name that is no module of the project stays, for the dependency check to name.
 */
export function skipsBuildOf(
  name: string,
  at: ConfigPath,
  modules: ReadonlyMap<string, IndexedModule>,
  translation: Translation,
): boolean {
  const module = modules.get(name);
  const without = module && noBuildOf(module);
  if (!without) return false;
  translation.note(at, `build dependency ${name} left out: module ${name} ${without}`);
  return true;
}

/** Whether each container module has no Dockerfile, found once per load (it reads the module's directory). */
const imageOnly = new WeakMap<IndexedModule, boolean>();

/** A container module without a Dockerfile: it has no Build and deploys its `image` as it is. */
export function isImageOnlyModule(module: IndexedModule): boolean {
  let only = imageOnly.get(module);
  if (only === undefined) {
    only = module.value.type === 'container' && !moduleHasDockerfile(module.value, module.dir);
    imageOnly.set(module, only);
  }
  return only;
}

/** Why a module becomes no Build, in words after its name; undefined when it has one. */
function noBuildOf(module: IndexedModule): string | undefined {
  const { value } = module;
  const asGarden = 'Garden leaves it out too';
  if (
    value.type === 'exec' &&
    strings(isRecord(value.build) ? value.build.command : undefined).length === 0 &&
    moduleBuildKeys(value).value.copyFrom === undefined
  ) {
    return `has no Build (an exec module without build.command or files to copy); ${asGarden}`;
  }
  if (isImageOnlyModule(module)) {
    return `has no Build (a container module without a Dockerfile deploys its image as it is); ${asGarden}`;
  }
  if (typesWithoutBuild.includes(value.type))
    return `has no Build (a ${String(value.type)} module); ${asGarden}`;
  // Garden's Build of a helm module only copies its files; tend reads the chart where it is.
  if (value.type === 'helm')
    return 'is a helm module, which has no Build in tend (it reads the chart where it is)';
  return undefined;
}
