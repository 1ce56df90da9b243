/**
 * Garden 0.12 modules (`kind: Module`) converted to actions the way Garden 0.13 converts them
 * (core/src/plugins/exec/convert.ts, container/container.ts, kubernetes-type/handlers.ts;
 * helm modules in garden/helm-module.ts, persistentvolumeclaim and configmap in garden/volumes.ts):
 *
 * - `exec`: a Build when `build.command` is set (`shell: true`), each service a Deploy
 *   (`deployCommand`, `statusCommand`, `cleanupCommand`), each task a Run, each test a Test named
 *   `<module>-<test>`; the module's `env` under each one's own;
 * - `container`: a Build when the module has a Dockerfile, each task a Run and each test a Test
 *   (`<module>-<test>`) running its image, each service a Deploy; a volume's `module:` becomes
 *   `action:` that module's Deploy;
 * - `kubernetes`: a Deploy of the module's `files` (as manifestTemplates), `kustomize` and
 *   `manifests`; each task a kubernetes-pod Run and each test a kubernetes-pod Test
 *   (`<module>-<test>`) in a pod like the workload of its `resource` in those files and manifests.
 *
 * A runtime dependency names a service or a task of any module: `deploy.<name>` or `run.<name>`.
 * The actions then go through the same translation as Garden 0.13 actions.
 */
import type { ConfigPath } from '../project.js';
import { manifestsOfFiles } from './generated-files.js';
import { convertHelmModule } from './helm-module.js';
import { ModuleNamesTemplate } from '../action-dependencies.js';
import {
  addModulePods,
  entryMoves,
  moduleBuildKeys,
  moduleHasDockerfile,
  skipsBuildOf,
  strings,
  type ModuleDependency,
  type ModuleParts,
} from './module-parts.js';
import { checkModuleKeys } from './module-keys.js';
import { withActionReferences } from './module-references.js';
import type { GardenProjectIndex } from './project-index.js';
import { convertVolumeModule, moduleVolumes } from './volumes.js';
import { isRecord, type GardenRecord, type Translation } from './translation.js';

/** The `disabled:` that keeps a module to the environments listed (Garden 0.13's action `environments:`). */
function disabledOutside(environments: unknown): string {
  const names =
    Array.isArray(environments) && environments.length > 0 && environments.every((e) => typeof e === 'string')
      ? environments
      : ['<environment>'];
  return `\${${names.map((name) => `environment.name != ${JSON.stringify(name)}`).join(' && ')}}`;
}

/** One action of a module, as a Garden 0.13 document, with where its keys are in the module. */
export interface ModuleAction {
  value: GardenRecord;
  /** Action path prefix → module path prefix. */
  moves: [ConfigPath, ConfigPath][];
}

export function convertModule(
  rawModule: GardenRecord,
  moduleDir: string,
  index: GardenProjectIndex,
  translation: Translation,
): ModuleAction[] {
  // A second module of a name is refused where the project is indexed (project-index.ts).
  if (index.refusedModules.has(rawModule)) {
    translation.unloadedActions.push(...moduleActionRefs(rawModule));
    return [];
  }
  const module = checkModuleKeys(
    withActionReferences(rawModule, index.modules, translation) as GardenRecord,
    translation,
    (key) =>
      key === 'environments'
        ? `limit the module to environments with \`disabled: ${disabledOutside(rawModule.environments)}\``
        : undefined,
  );
  const name = String(module.name);
  const type = String(module.type);
  const build = isRecord(module.build) ? module.build : {};
  const skipsBuild = (moduleName: string, at: ConfigPath) =>
    skipsBuildOf(moduleName, at, index.modules, translation);
  const buildOf = (moduleName: string, at: ConfigPath) =>
    skipsBuild(moduleName, at) ? [] : [`build.${moduleName}`];
  const buildDependencyList = moduleDependencies(
    build.dependencies,
    ['build', 'dependencies'],
    (d) => `build.${d}`,
    skipsBuild,
  );
  // Garden 0.13 gives each action the module's variables and its varfile.
  const base: GardenRecord = {
    ...(module.description !== undefined ? { description: module.description } : {}),
    ...(module.include !== undefined ? { include: module.include } : {}),
    ...(module.exclude !== undefined ? { exclude: module.exclude } : {}),
    ...(module.disabled !== undefined ? { disabled: module.disabled } : {}),
    ...(module.variables !== undefined ? { variables: module.variables } : {}),
    ...(module.varfile !== undefined ? { varfiles: [module.varfile] } : {}),
  };
  if (module.hotReload !== undefined) {
    translation.note(['hotReload'], 'hotReload: tend deploys what is on disk; ignored');
  }
  if (module.allowPublish !== undefined) {
    translation.note(['allowPublish'], 'allowPublish: tend has no publish command; ignored');
  }
  // A kubernetes module's generated manifests are read from their sources (generated-files.ts).
  if (module.generateFiles !== undefined && type !== 'kubernetes') {
    translation.unsupported(
      ['generateFiles'],
      `generateFiles is not supported by tend yet for a module of type ${type} (only for a kubernetes module's files)`,
    );
  }
  if (module.repositoryUrl !== undefined) {
    translation.unsupported(
      ['repositoryUrl'],
      'repositoryUrl of a module is not supported by tend yet: clone the repository into the project (beside this garden.yml) and remove repositoryUrl',
    );
  }
  if (module.repositoryUrl !== undefined) {
    // Its files are elsewhere: what it would become is not loaded, and what reads it is no new error.
    translation.unloadedActions.push(...moduleActionRefs(module));
    return [];
  }
  const runtime = (dependencies: unknown) =>
    moduleDependencies(
      dependencies,
      ['dependencies'],
      (dependency) => `${index.runtimeNames.get(dependency) ?? 'deploy'}.${dependency}`,
    ).map(({ dependency }) => dependency);
  const actions: ModuleAction[] = [];
  const add = (value: GardenRecord, moves: [ConfigPath, ConfigPath][]) =>
    actions.push({ value, moves: [...moves, [['varfiles', 0], ['varfile']]] });
  const entries = (key: 'services' | 'tasks' | 'tests') =>
    (Array.isArray(module[key]) ? module[key] : []).map((entry, i) => ({
      entry: isRecord(entry) ? entry : {},
      at: [key, i] as ConfigPath,
    }));
  const parts: ModuleParts = {
    module,
    name,
    moduleDir,
    build,
    buildDependencies: buildDependencyList.map(({ dependency }) => dependency),
    buildDependencyMoves: buildDependencyList.map(({ at }, i) => [['dependencies', i], at]),
    buildOf,
    base,
    buildKeys: moduleBuildKeys(module),
    runtime,
    add,
    entries,
    translation,
    modules: index.modules,
  };
  if (type === 'exec') convertExecModule(parts);
  else if (type === 'container') convertContainerModule(parts);
  else if (type === 'kubernetes') convertKubernetesModule(parts);
  else if (type === 'helm') convertHelmModule(parts);
  else if (type === 'persistentvolumeclaim' || type === 'configmap') convertVolumeModule(parts, type);
  else {
    translation.unsupported(
      ['type'],
      `module type ${type} is not converted by tend; write the module as actions (Garden 0.13's format)`,
    );
    translation.unloadedActions.push(...moduleActionRefs(module));
  }
  const copyAt = parts.buildKeys.moves[0]?.[1];
  if (copyAt && parts.buildKeys.value.copyFrom && !actions.some(({ value }) => value.kind === 'Build')) {
    // Garden gives it a Build that only copies them, which its actions then run in.
    translation.note(
      copyAt,
      `build.dependencies[].copy: module ${name} (${type}) becomes no Build in tend, whose actions run where the module is; ignored`,
    );
  }
  return actions;
}

/** A dependency and where the module writes it. */
interface LocatedDependency {
  dependency: ModuleDependency;
  at: ConfigPath;
}

/**
 * A module's dependency names as actions' references (`ref`; a `{name}` entry by its name), a
 * templated entry, or the whole list written as a template, kept for the environment
 * (action-dependencies.ts resolves it, each name it gives made a reference by `ref` too).
 * @param key where the list is in the module, or in its entry (a converted action's list starts
 *   with what the conversion adds, so an entry's place is its place in the module's list)
 * @param skips whether a written name is left out (it has noted why)
 */
function moduleDependencies(
  dependencies: unknown,
  key: ConfigPath,
  ref: (name: string) => string,
  skips: (name: string, at: ConfigPath) => boolean = () => false,
): LocatedDependency[] {
  if (typeof dependencies === 'string' && dependencies.includes('${'))
    return [{ dependency: new ModuleNamesTemplate(dependencies, ref, key), at: key }];
  if (!Array.isArray(dependencies)) return [];
  return dependencies.flatMap((dependency: unknown, i): LocatedDependency[] => {
    const at = [...key, i];
    if (typeof dependency === 'string') {
      if (dependency.includes('${'))
        return [{ dependency: new ModuleNamesTemplate(dependency, ref, at), at }];
      return skips(dependency, at) ? [] : [{ dependency: ref(dependency), at }];
    }
    // A build dependency may be `{name, copy}`. Any other value, or a name that is none, is made a
    // reference as it is, for the dependency check to refuse at its line (not dropped unsaid).
    if (!isRecord(dependency)) return [{ dependency: ref(String(dependency)), at }];
    const name = String(dependency.name);
    return skips(name, [...at, 'name']) ? [] : [{ dependency: ref(name), at }];
  });
}

/**
 * The actions Garden 0.13 makes of a module: its Build, and a Deploy, Run or Test of each service,
 * task and test; a module without `services` (helm, kubernetes, terraform, pulumi) is one Deploy
 * named after the module.
 */
function moduleActionRefs(module: GardenRecord): string[] {
  const names = (key: string) =>
    (Array.isArray(module[key]) ? module[key] : []).flatMap((entry) =>
      isRecord(entry) && typeof entry.name === 'string' ? [entry.name] : [],
    );
  const services = Array.isArray(module.services) ? names('services') : [String(module.name)];
  return [
    `build.${String(module.name)}`,
    ...services.map((name) => `deploy.${name}`),
    ...names('tasks').map((name) => `run.${name}`),
    ...names('tests').map((name) => `test.${String(module.name)}-${name}`),
  ];
}

function convertExecModule(parts: ModuleParts): void {
  const {
    module: spec,
    name,
    build,
    buildDependencies,
    buildDependencyMoves,
    base,
    buildKeys,
    runtime,
    add,
    entries,
    translation,
  } = parts;
  const buildCommand = strings(build.command);
  const env = isRecord(spec.env) ? spec.env : {};
  // Garden gives a module that copies files a Build (its "dummy build") without a command too.
  const hasBuild = buildCommand.length > 0 || buildKeys.value.copyFrom !== undefined;
  const own = (dependencies: unknown) => [
    ...(hasBuild ? [`build.${name}`] : buildDependencies),
    ...runtime(dependencies),
  ];
  if (hasBuild) {
    add(
      {
        ...base,
        kind: 'Build',
        type: 'exec',
        name,
        dependencies: buildDependencies,
        ...buildKeys.value,
        spec: { shell: true, ...(buildCommand.length > 0 ? { command: buildCommand } : {}), env },
      },
      [
        [
          ['spec', 'command'],
          ['build', 'command'],
        ],
        ...buildDependencyMoves,
        ...buildKeys.moves,
      ],
    );
  }
  for (const { entry, at } of entries('services')) {
    add(
      {
        ...base,
        kind: 'Deploy',
        type: 'exec',
        name: entry.name,
        dependencies: own(entry.dependencies),
        ...(entry.timeout !== undefined ? { timeout: entry.timeout } : {}),
        spec: {
          shell: true,
          deployCommand: entry.deployCommand,
          ...(entry.statusCommand !== undefined ? { statusCommand: entry.statusCommand } : {}),
          ...(entry.cleanupCommand !== undefined ? { cleanupCommand: entry.cleanupCommand } : {}),
          env: { ...env, ...(isRecord(entry.env) ? entry.env : {}) },
        },
      },
      entryMoves(at),
    );
    if (entry.syncMode !== undefined || entry.devMode !== undefined) {
      translation.note(
        [...at, entry.syncMode !== undefined ? 'syncMode' : 'devMode'],
        'sync mode: tend deploys what is on disk; ignored',
      );
    }
  }
  for (const [key, kind] of [
    ['tasks', 'Run'],
    ['tests', 'Test'],
  ] as const) {
    for (const { entry, at } of entries(key)) {
      add(
        {
          ...base,
          kind,
          type: 'exec',
          name: kind === 'Test' ? `${name}-${String(entry.name)}` : entry.name,
          dependencies: own(entry.dependencies),
          ...(entry.timeout !== undefined ? { timeout: entry.timeout } : {}),
          spec: {
            shell: true,
            command: entry.command,
            ...(entry.artifacts !== undefined ? { artifacts: entry.artifacts } : {}),
            env: { ...env, ...(isRecord(entry.env) ? entry.env : {}) },
          },
        },
        entryMoves(at),
      );
    }
  }
}

function convertContainerModule(parts: ModuleParts): void {
  const {
    module: spec,
    name,
    moduleDir,
    build,
    buildDependencies,
    buildDependencyMoves,
    base,
    buildKeys,
    runtime,
    add,
    entries,
    translation,
  } = parts;
  const specAt: ConfigPath = [];
  const dockerfile = typeof spec.dockerfile === 'string' ? spec.dockerfile : 'Dockerfile';
  const hasBuild = moduleHasDockerfile(spec, moduleDir);
  const image = hasBuild ? `\${actions.build.${name}.outputs.deploymentImageId}` : spec.image;
  if (!hasBuild && spec.image === undefined) {
    // As Garden says it (container module configure): every service, task and test would lack one.
    translation.unsupported(
      ['name'],
      `container module ${name} neither specifies image nor has a Dockerfile (${dockerfile}) among its files; set image, or add the Dockerfile`,
    );
    // What it would become is not loaded; what refers to it is no further error.
    translation.unloadedActions.push(...moduleActionRefs(spec));
    return;
  }
  if (hasBuild) {
    const moduleBuild = isRecord(spec.build) ? spec.build : {};
    add(
      {
        ...base,
        kind: 'Build',
        type: 'container',
        name,
        dependencies: buildDependencies,
        ...buildKeys.value,
        ...(build.timeout !== undefined ? { timeout: build.timeout } : {}),
        spec: {
          dockerfile,
          ...(spec.buildArgs !== undefined ? { buildArgs: spec.buildArgs } : {}),
          ...(spec.extraFlags !== undefined ? { extraFlags: spec.extraFlags } : {}),
          ...(moduleBuild.targetImage !== undefined ? { targetStage: moduleBuild.targetImage } : {}),
        },
      },
      [[['spec'], specAt], [['timeout'], ['build', 'timeout']], ...buildDependencyMoves, ...buildKeys.moves],
    );
  }
  // Garden's prepareRuntimeDependencies: the module's build dependencies, then its own Build.
  const own = (dependencies: unknown) => [
    ...buildDependencies,
    ...(hasBuild ? [`build.${name}`] : []),
    ...runtime(dependencies),
  ];
  for (const [key, kind] of [
    ['services', 'Deploy'],
    ['tasks', 'Run'],
    ['tests', 'Test'],
  ] as const) {
    for (const { entry, at } of entries(key)) {
      const {
        name: entryName,
        dependencies,
        disabled,
        timeout,
        description: _d,
        hotReload,
        hotReloadCommand,
        hotReloadArgs,
        ...rest
      } = entry;
      // Garden 0.12's hot reload of a service: its own settings and the command it ran with.
      for (const [key, value] of [
        ['hotReload', hotReload],
        ['hotReloadCommand', hotReloadCommand],
        ['hotReloadArgs', hotReloadArgs],
      ] as const) {
        if (value !== undefined)
          translation.note([...at, key], `${key}: tend deploys what is on disk; ignored`);
      }
      const actionDependencies = own(dependencies);
      const volumes = moduleVolumes(rest.volumes, actionDependencies, at);
      add(
        {
          ...base,
          kind,
          type: 'container',
          name: kind === 'Test' ? `${name}-${String(entryName)}` : entryName,
          dependencies: actionDependencies,
          ...(disabled !== undefined ? { disabled } : {}),
          ...(timeout !== undefined ? { timeout } : {}),
          spec: { ...rest, ...(rest.volumes !== undefined ? { volumes: volumes.volumes } : {}), image },
        },
        [...volumes.moves, ...entryMoves(at), [['type'], ['type']]],
      );
    }
  }
}

function convertKubernetesModule(parts: ModuleParts): void {
  const { module: spec, name, buildDependencies, buildOf, base, runtime, add, translation } = parts;
  const specAt: ConfigPath = [];
  const files = manifestsOfFiles(spec, translation);
  const serviceResource = isRecord(spec.serviceResource) ? spec.serviceResource : undefined;
  // Garden's conversion makes the Deploy depend on its serviceResource's container module too.
  const sourceBuild =
    typeof serviceResource?.containerModule === 'string'
      ? buildOf(serviceResource.containerModule, ['serviceResource', 'containerModule'])
      : [];
  add(
    {
      ...base,
      kind: 'Deploy',
      type: 'kubernetes',
      name,
      dependencies: [...new Set([...buildDependencies, ...sourceBuild]), ...runtime(spec.dependencies)],
      spec: {
        ...files,
        ...(spec.kustomize !== undefined ? { kustomize: spec.kustomize } : {}),
        ...(spec.manifests !== undefined ? { manifests: spec.manifests } : {}),
        ...(spec.namespace !== undefined ? { namespace: spec.namespace } : {}),
      },
    },
    [
      [
        ['spec', 'manifestTemplates'],
        [...specAt, 'files'],
      ],
      [['spec'], specAt],
    ],
  );
  // Garden's tasks and tests: kubernetes-pod actions finding their workload (`resource`, else the
  // module's `serviceResource`) in the module's files and manifests (not its kustomization).
  const manifestKeys: GardenRecord = {
    ...files,
    ...(spec.manifests !== undefined ? { manifests: spec.manifests } : {}),
    ...(spec.namespace !== undefined ? { namespace: spec.namespace } : {}),
  };
  addModulePods(parts, {
    type: 'kubernetes-pod',
    base,
    serviceResource,
    dependencies: (entryDependencies) => [...buildDependencies, ...runtime(entryDependencies)],
    spec: manifestKeys,
    moves: [
      [['spec', 'manifestTemplates'], ['files']],
      [['spec', 'manifests'], ['manifests']],
      [['spec', 'namespace'], ['namespace']],
    ],
    keepsDisabled: true,
  });
}
