/**
 * The keys a Garden 0.12 module (`kind: Module`) of each type tend converts may have. Garden keeps
 * the base module keys and moves every other key into the module type's spec
 * (core/src/config/base.ts prepareModuleResource), whose schema refuses a key it does not have
 * (container/config.ts, exec/exec.ts, kubernetes-module/config.ts, helm/config.ts,
 * volumes/persistentvolumeclaim.ts and configmap.ts), in `build` and in each task and test too:
 * so tend refuses one at its line. A service's schema allows unknown keys (config/service.ts), so
 * one there is a note. Each list is what Garden 0.12, 0.13 or 0.14 has (a module written for any of
 * them is read), in Garden's order.
 */
import type { ConfigPath } from '../project.js';
// A container module's task and test have the keys of Garden's container Run and Test.
import { containerPodKeys } from './actions.js';
import {
  dropIgnoredKeys,
  isRecord,
  noteUnknownKeys,
  refuseUnknownKeys,
  type GardenRecord,
  type Translation,
} from './translation.js';

/** Garden's base module keys (config/module.ts baseModuleSpecKeys and coreModuleSpecKeys). */
const baseKeys = [
  'apiVersion',
  'kind',
  'type',
  'name',
  'build',
  'local',
  'description',
  'disabled',
  'include',
  'exclude',
  'repositoryUrl',
  'allowPublish',
  'generateFiles',
  'variables',
  'varfile',
];

/** Keys Garden sets on a module itself (baseModuleSchemaKeys): one written is overwritten or left out. */
const setByGarden = ['path', 'configPath', 'serviceConfigs', 'taskConfigs', 'testConfigs', '_config'];

const baseTaskKeys = ['name', 'description', 'dependencies', 'disabled', 'timeout'];
const baseTestKeys = ['name', 'dependencies', 'disabled', 'timeout'];
const baseServiceKeys = ['name', 'dependencies', 'disabled', 'timeout'];
const baseBuildKeys = ['dependencies', 'timeout'];

/** A kubernetes or helm module's task keys (kubernetes/config.ts kubernetesTaskSchema). */
const podTaskKeys = [
  ...baseTaskKeys,
  'resource',
  'cacheResult',
  'command',
  'args',
  'env',
  'artifacts',
  'namespace',
];
const podTestKeys = [...baseTestKeys, 'resource', 'command', 'args', 'env', 'artifacts'];

interface ModuleTypeKeys {
  /** The type's spec keys (beside the base module keys). */
  spec: readonly string[];
  build: readonly string[];
  tasks: readonly string[];
  tests: readonly string[];
  /** Known keys of a service, where the type has services. */
  services?: readonly string[];
}

const moduleTypeKeys: Record<string, ModuleTypeKeys> = {
  container: {
    spec: [
      'buildArgs',
      'extraFlags',
      'platforms',
      'secrets',
      'image',
      'hotReload',
      'dockerfile',
      'services',
      'tests',
      'tasks',
    ],
    build: [...baseBuildKeys, 'targetImage'],
    tasks: [...baseTaskKeys, ...containerPodKeys],
    tests: [...baseTestKeys, ...containerPodKeys],
    services: [
      ...baseServiceKeys,
      ...containerPodKeys.slice(0, containerPodKeys.indexOf('artifacts')),
      'image',
      'annotations',
      'daemon',
      'devMode',
      'sync',
      'localMode',
      'ingresses',
      'healthCheck',
      'hotReload',
      'hotReloadCommand',
      'hotReloadArgs',
      'limits',
      'ports',
      'replicas',
    ],
  },
  exec: {
    spec: ['env', 'services', 'tasks', 'tests'],
    build: [...baseBuildKeys, 'command', 'statusCommand'],
    tasks: [...baseTaskKeys, 'artifacts', 'command', 'statusCommand', 'env'],
    tests: [...baseTestKeys, 'command', 'statusCommand', 'env', 'artifacts'],
    services: [
      ...baseServiceKeys,
      'deployCommand',
      'statusCommand',
      'cleanupCommand',
      'env',
      'devMode',
      'syncMode',
    ],
  },
  kubernetes: {
    spec: [
      'dependencies',
      'devMode',
      'sync',
      'localMode',
      'files',
      'kustomize',
      'manifests',
      'patchResources',
      'namespace',
      'portForwards',
      'serviceResource',
      'tasks',
      'tests',
      'timeout',
      'applyArgs',
      'waitForJobs',
    ],
    build: baseBuildKeys,
    tasks: podTaskKeys,
    tests: podTestKeys,
  },
  helm: {
    spec: [
      'atomicInstall',
      'base',
      'chart',
      'chartPath',
      'dependencies',
      'devMode',
      'sync',
      'localMode',
      'namespace',
      'portForwards',
      'releaseName',
      'repo',
      'serviceResource',
      'skipDeploy',
      'tasks',
      'tests',
      'timeout',
      'version',
      'values',
      'valueFiles',
    ],
    build: baseBuildKeys,
    tasks: podTaskKeys,
    tests: podTestKeys,
  },
  persistentvolumeclaim: {
    spec: ['dependencies', 'namespace', 'spec'],
    build: baseBuildKeys,
    tasks: [],
    tests: [],
  },
  configmap: { spec: ['dependencies', 'namespace', 'data'], build: baseBuildKeys, tasks: [], tests: [] },
};

/**
 * The module with its keys checked against its type's (a type tend does not convert is refused
 * already): an unknown key of the module, its `build`, a task or a test is a problem at its line
 * (`hint` adds to a module key's message); a service keeps only the keys Garden knows, the others
 * noted. Keys Garden sets itself are noted as ignored.
 */
export function checkModuleKeys(
  module: GardenRecord,
  translation: Translation,
  hint: (key: string) => string | undefined,
): GardenRecord {
  const type = String(module.type);
  const keys = moduleTypeKeys[type];
  if (!keys) return module;
  const label = `module ${String(module.name)} (${type})`;
  const written = dropIgnoredKeys(
    translation,
    module,
    setByGarden,
    [],
    'keys Garden sets on a module itself',
  );
  const known = [...baseKeys, ...keys.spec];
  refuseUnknownKeys(translation, written, known, [], hint, label);
  // A refused key is its error alone: not read further (a hotReload of an exec module noted as ignored too).
  const checked = Object.fromEntries(
    Object.entries(module).filter(([key]) => known.includes(key) || setByGarden.includes(key)),
  );
  if (isRecord(module.build)) refuseUnknownKeys(translation, module.build, keys.build, ['build']);
  const each = (
    key: 'services' | 'tasks' | 'tests',
    check: (entry: GardenRecord, at: ConfigPath) => GardenRecord,
  ) =>
    Array.isArray(module[key])
      ? module[key].map((entry: unknown, i) => (isRecord(entry) ? check(entry, [key, i]) : entry))
      : module[key];
  each('tasks', (entry, at) => refuseUnknownKeys(translation, entry, keys.tasks, at));
  each('tests', (entry, at) => refuseUnknownKeys(translation, entry, keys.tests, at));
  const services = keys.services;
  if (!services || !Array.isArray(module.services)) return checked;
  return {
    ...checked,
    services: each('services', (entry, at) =>
      noteUnknownKeys(
        translation,
        entry,
        services,
        at,
        `a service of ${type === 'exec' ? 'an' : 'a'} ${type} module`,
      ),
    ),
  };
}
