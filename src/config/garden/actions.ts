/**
 * A Garden action document (Build, Deploy, Test, Run; apiVersion garden.io/v0–v2) as tend's
 * (docs/garden.md): `source: { path }`, dependencies as `{ kind, name }` or `Kind.name`,
 * `variables`, `varfiles`, `disabled` and `environments` as they are (config/action-variables.ts),
 * so are `copyFrom`, `buildAtSource` and `build` (config/build-keys.ts),
 * and each action type's spec in tend's terms — exec (`deployCommand`, `shell`), container Build
 * and Deploy, container Test/Run (run as a kubernetes-pod, with Garden's keys), kubernetes Deploy (Garden's
 * manifest keys are tend's own), persistentvolumeclaim and configmap Deploys (garden/volumes.ts). What tend cannot do is a problem naming the key; what it
 * ignores (sync mode, port forwards, artifacts…) is one note each.
 */
import { gardenTimeout } from '../schema.js';
import { envStrings } from './module-parts.js';
import { volumeDeployTypes, type GardenProjectIndex, type VolumeDeployType } from './project-index.js';
import {
  checkApiVersion,
  dependencyRef,
  dropIgnoredKeys,
  isRecord,
  refuseUnknownKeys,
  type GardenRecord,
  type Translation,
} from './translation.js';
import { containerVolumes, volumeDeploySpec, type ActionFacts } from './volumes.js';
import { ignoreActionVersionSettings } from './version-settings.js';

/** Garden action types with no tend counterpart: what to do instead. */
const unsupportedTypes: Record<string, string> = {
  terraform: 'run terraform from an exec action (`command: [terraform, apply, -auto-approve]`)',
  pulumi: 'run pulumi from an exec action (`command: [pulumi, up, --yes]`)',
  'jib-container': 'build with a container Build (a Dockerfile) or an exec Build that runs jib',
  'conftest-container': 'run conftest from an exec Test',
  'conftest-helm': 'run conftest from an exec Test',
  hadolint: 'run hadolint from an exec Test',
  // Garden's docker-compose plugin: containers on the local Docker, no namespace to record.
  'docker-compose': "it comes from Garden's docker-compose plugin; run `docker compose` from an exec action",
  'docker-compose-exec':
    "it comes from Garden's docker-compose plugin; run `docker compose exec` from an exec action",
  'docker-compose-run':
    "it comes from Garden's docker-compose plugin; run `docker compose run` from an exec action",
  'docker-run': "it comes from Garden's docker-compose plugin; run `docker run` from an exec action",
};

/** Garden keys of every action that tend reads as they are. */
const commonKeys = [
  'kind',
  'type',
  'name',
  'description',
  'include',
  'exclude',
  'timeout',
  'spec',
  'variables',
  'varfiles',
  'disabled',
  'environments',
  'copyFrom',
  'buildAtSource',
  'build',
];

type SpecTranslator = (
  translation: Translation,
  spec: GardenRecord,
  action: ActionFacts,
) => GardenRecord | undefined;

/** A `garden` command line inside a command's words or script (`garden run task x`, `… && garden deploy`). */
const gardenCli =
  /(^|[\s;&|(`])garden\s+(?:--?[a-z-]+(?:[= ]\S+)?\s+)*(?:build|deploy|test|run|exec|get|delete|cleanup|publish|sync|workflow|logs|validate|dev|plugins|tools|util|login|create|up)\b/;

/**
 * `command` as Garden runs it with `shell: true`: one string for `sh -c`. A command that runs the
 * `garden` CLI gets a note: tend does not stand in for it.
 */
function shellCommand(translation: Translation, spec: GardenRecord, key: string): unknown {
  const command = spec[key];
  if (Array.isArray(command) && command.some((word) => typeof word === 'string' && gardenCli.test(word))) {
    translation.note(
      ['spec', key],
      `${key} runs the garden CLI, which tend does not provide: run what it asks of Garden with tend (\`tend run <name>\`, \`tend deploy\`…), or as an action this one depends on`,
    );
  }
  if (spec.shell !== true || !Array.isArray(command)) return command;
  translation.moved(['spec', 'command'], ['spec', key]);
  return ['sh', '-c', command.join(' ')];
}

const execCommand: SpecTranslator = (translation, spec) => {
  const { shell: _shell, artifacts, statusCommand, ...rest } = spec;
  if (artifacts !== undefined) {
    translation.note(['spec', 'artifacts'], 'artifacts: tend does not copy artifacts; ignored');
  }
  if (statusCommand !== undefined) {
    translation.note(
      ['spec', 'statusCommand'],
      'statusCommand: tend runs the command once per version (its result is kept); ignored',
    );
  }
  const command = shellCommand(translation, spec, 'command');
  // A Garden exec Build without a command only gathers its files: nothing to run.
  return { ...rest, command: command ?? ['true'] };
};

const execDeploy: SpecTranslator = (translation, spec) => {
  const {
    shell: _shell,
    deployCommand: _deploy,
    statusCommand,
    cleanupCommand,
    statusTimeout,
    ...rest
  } = spec;
  // Garden skips an empty deployCommand and reports the Deploy ready (one that only cleans up).
  const skipped = Array.isArray(spec.deployCommand) && spec.deployCommand.length === 0;
  const out: GardenRecord = {
    ...rest,
    command: skipped ? ['true'] : shellCommand(translation, spec, 'deployCommand'),
  };
  translation.moved(['spec', 'command'], ['spec', 'deployCommand']);
  if (statusCommand !== undefined && spec.persistent === true) {
    out.readiness = {
      command: statusCommand,
      ...(typeof statusTimeout === 'number' ? { timeout: statusTimeout } : {}),
    };
    translation.moved(['spec', 'readiness', 'command'], ['spec', 'statusCommand']);
  } else if (statusCommand !== undefined) {
    translation.note(
      ['spec', 'statusCommand'],
      'statusCommand: tend runs a deploy that is not persistent once per version; ignored',
    );
  }
  // Run by `tend cleanup deploy` and `tend cleanup env`, like the deploy command (`shell: true` too).
  if (Array.isArray(cleanupCommand) && spec.shell === true) {
    out.cleanupCommand = ['sh', '-c', cleanupCommand.join(' ')];
  } else if (cleanupCommand !== undefined) out.cleanupCommand = cleanupCommand;
  return out;
};

const containerBuild: SpecTranslator = (translation, { secrets, ...spec }) => {
  // Garden hands build secrets to BuildKit's secret mounts; tend's builders are given none.
  if (secrets !== undefined) {
    translation.unsupported(
      ['spec', 'secrets'],
      "secrets: tend's in-cluster builder takes no build secrets; remove it",
    );
  }
  // extraFlags stay: the builder gets them last, as Garden gives them.
  const kept = dropIgnoredKeys(
    translation,
    spec,
    ['localId', 'publishId', 'platforms'],
    ['spec'],
    'image naming and platform settings',
  );
  if (isRecord(kept.buildArgs)) {
    kept.buildArgs = Object.fromEntries(Object.entries(kept.buildArgs).map(([k, v]) => [k, String(v)]));
  }
  if (Array.isArray(kept.extraFlags))
    kept.extraFlags = withoutDockerOutputFlags(translation, kept.extraFlags);
  return kept;
};

/**
 * Docker's flags for where a built image goes (`--load` into the local Docker, `--push`), written
 * for Garden's local-docker build mode: tend builds in the cluster and always pushes the image to
 * the registry, and its builders refuse them (buildctl: "flag provided but not defined").
 */
const dockerOutputFlags = new Set(['--load', '--push']);

function withoutDockerOutputFlags(translation: Translation, flags: unknown[]): unknown[] {
  return flags.filter((flag, i) => {
    if (typeof flag !== 'string' || !dockerOutputFlags.has(flag)) return true;
    translation.note(
      ['spec', 'extraFlags', i],
      `extraFlags ${flag}: docker's flag for where the image goes; tend builds in the cluster and pushes the image to the registry; ignored`,
    );
    return false;
  });
}

/**
 * The spec keys of Garden's container Run and Test (docs/reference/action-types/Run/container.md,
 * Test/container.md), in Garden's order.
 */
export const containerPodKeys = [
  'command',
  'args',
  'env',
  'cpu',
  'memory',
  'volumes',
  'privileged',
  'addCapabilities',
  'dropCapabilities',
  'tty',
  'deploymentStrategy',
  'artifacts',
  'image',
  'cacheResult',
];

/** Spec keys of Garden's kubernetes-pod Run and Test that its container Run and Test do not have. */
const kubernetesPodOnlyKeys = [
  'namespace',
  'kustomize',
  'patchResources',
  'manifests',
  'manifestFiles',
  'manifestTemplates',
  'resource',
  'podSpec',
];

/**
 * A container Test or Run, which tend runs as its kubernetes-pod: a key Garden's container Run
 * does not have is refused here, naming Garden's keys (the kubernetes-pod check would accept its
 * own, `resource` or `manifestFiles`, and name them).
 */
const containerPod: SpecTranslator = (translation, given, action) => {
  const spec = refuseUnknownKeys(translation, given, containerPodKeys, ['spec'], (key) =>
    kubernetesPodOnlyKeys.includes(key)
      ? `${key} is a key of a kubernetes-pod ${action.kind} (type: kubernetes-pod), not of a container ${action.kind}`
      : undefined,
  );
  const kept = dropIgnoredKeys(
    translation,
    spec,
    [
      'cpu',
      'memory',
      'privileged',
      'addCapabilities',
      'dropCapabilities',
      'tty',
      'deploymentStrategy',
      'artifacts',
    ],
    ['spec'],
    "Garden's pod settings",
  );
  // Garden's spec.cacheResult is tend's action-level cacheResult (set by the caller).
  delete kept.cacheResult;
  if (kept.volumes !== undefined) kept.volumes = containerVolumes(translation, kept.volumes, action);
  if (kept.env !== undefined) kept.env = envStrings(kept.env);
  return kept;
};

const containerDeploy: SpecTranslator = (translation, spec, action) => {
  let kept = dropIgnoredKeys(
    translation,
    spec,
    ['sync', 'localMode', 'hotReload', 'devMode'],
    ['spec'],
    'sync mode, local mode and hot reload',
  );
  kept = dropIgnoredKeys(
    translation,
    kept,
    ['privileged', 'addCapabilities', 'dropCapabilities', 'tty', 'deploymentStrategy'],
    ['spec'],
    "Garden's pod settings",
  );
  if (kept.env !== undefined) kept.env = envStrings(kept.env);
  if (kept.volumes !== undefined) kept.volumes = containerVolumes(translation, kept.volumes, action);
  noteLocalPorts(translation, kept.ports);
  return kept;
};

/** Garden's `ports[].localPort` (a port forward Garden's dev commands make): one note per action. */
function noteLocalPorts(translation: Translation, ports: unknown): void {
  if (!Array.isArray(ports)) return;
  const first = ports.findIndex((port) => isRecord(port) && port.localPort !== undefined);
  if (first < 0) return;
  translation.note(
    ['spec', 'ports', first, 'localPort'],
    'ports[].localPort: a local port forward, which tend does not make; ignored',
  );
}

/**
 * Garden's localVolumes: hostPath mounts of local directories into the workloads, made on every
 * deploy (not only in sync mode) unless `enabled: false`. tend cannot: a problem when they would
 * be mounted, a note when there is nothing to mount.
 */
function localVolumes(translation: Translation, spec: GardenRecord): void {
  const value = spec.localVolumes;
  if (value === undefined || value === null) return;
  const active =
    !isRecord(value) || (Array.isArray(value.volumes) && value.volumes.length > 0 && value.enabled !== false);
  if (active) {
    translation.unsupported(
      ['spec', 'localVolumes'],
      "localVolumes (Garden's hostPath mounts of local directories, made on every deploy) are not mounted by tend: the directories are on your machine, not on the cluster's nodes; remove them, or set `enabled: false`",
    );
  } else {
    translation.note(
      ['spec', 'localVolumes'],
      'localVolumes: disabled or without volumes, nothing to mount; ignored',
    );
  }
}

const kubernetesDeploy: SpecTranslator = (translation, spec) => {
  // `namespace` is kept, as by every kubernetes and helm type: the plugin takes the environment's
  // own (src/plugins/kubernetes/namespace-key.ts).
  if (spec.applyArgs !== undefined) {
    translation.unsupported(
      ['spec', 'applyArgs'],
      'applyArgs: tend applies through the API, not kubectl; remove it',
    );
  }
  localVolumes(translation, spec);
  const kept = dropIgnoredKeys(
    translation,
    spec,
    ['defaultTarget', 'sync', 'localMode', 'portForwards'],
    ['spec'],
    'sync mode, local mode and port forwarding',
  );
  for (const key of ['applyArgs', 'localVolumes']) delete kept[key];
  return withKustomizeDefaults(kept);
};

/**
 * `kustomize` as Garden reads it (kubernetes-type/kustomize.ts): `path` defaults to the action's
 * directory, and `null` (of `kustomize` or of its `path`) runs no kustomize.
 */
export function withKustomizeDefaults(spec: GardenRecord): GardenRecord {
  const { kustomize } = spec;
  if (kustomize === null || (isRecord(kustomize) && kustomize.path === null)) {
    const { kustomize: _none, ...rest } = spec;
    return rest;
  }
  if (isRecord(kustomize) && kustomize.path === undefined)
    return { ...spec, kustomize: { ...kustomize, path: '.' } };
  return spec;
}

const helmDeploy: SpecTranslator = (translation, spec) => {
  localVolumes(translation, spec);
  const kept = dropIgnoredKeys(
    translation,
    spec,
    [
      'defaultTarget',
      'sync',
      'localMode',
      'portForwards',
      'waitForJobs',
      'atomic',
      'waitForUnhealthyResources',
    ],
    ['spec'],
    'sync mode, port forwarding and helm release settings',
  );
  delete kept.localVolumes;
  return kept;
};

/**
 * `resource` as tend reads it: `podSelector` is not. Such an action is not loaded: its one error
 * says what to write, not the keys `resource` then lacks.
 */
function podResource(translation: Translation, spec: GardenRecord, key: string, action: ActionFacts): void {
  if (isRecord(spec[key]) && spec[key].podSelector !== undefined) {
    translation.unsupported(
      ['spec', key, 'podSelector'],
      'resource.podSelector is not read by tend; name the workload (`kind` and `name`)',
    );
    translation.unloadedActions.push(`${action.kind.toLowerCase()}.${action.name}`);
  }
}

/**
 * A helm-pod's or kubernetes-pod's spec. A kubernetes-pod finds its `resource` in its own
 * manifests (as Garden does); a helm-pod's are its chart's.
 */
const podFromResource =
  (ownManifests: boolean): SpecTranslator =>
  (translation, spec, action) => {
    podResource(translation, spec, 'resource', action);
    const manifestKeys = ['manifests', 'manifestFiles', 'manifestTemplates', 'kustomize', 'patchResources'];
    for (const key of ownManifests ? [] : manifestKeys) {
      if (spec[key] !== undefined) {
        translation.unsupported(
          ['spec', key],
          `${key} of a helm-pod is not read by tend; the pod's workload is found in its chart`,
        );
      }
    }
    const kept = dropIgnoredKeys(translation, spec, ['artifacts'], ['spec'], 'artifacts');
    // Garden's spec.cacheResult is tend's action-level cacheResult (set by the caller).
    delete kept.cacheResult;
    for (const key of ownManifests ? [] : manifestKeys) delete kept[key];
    return kept;
  };

const kubernetesExec: SpecTranslator = (translation, spec, action) => {
  const { target, ...kept } = spec;
  if (target !== undefined && kept.resource === undefined) {
    kept.resource = target;
    translation.moved(['spec', 'resource'], ['spec', 'target']);
  }
  podResource(translation, spec, target !== undefined ? 'target' : 'resource', action);
  return kept;
};

const volumeDeploy =
  (type: VolumeDeployType): SpecTranslator =>
  (translation, spec, action) =>
    volumeDeploySpec(type, translation, spec, action);

const translators: Record<string, Partial<Record<string, SpecTranslator>>> = {
  exec: { Build: execCommand, Deploy: execDeploy, Test: execCommand, Run: execCommand },
  container: { Build: containerBuild, Deploy: containerDeploy, Test: containerPod, Run: containerPod },
  kubernetes: { Deploy: kubernetesDeploy },
  helm: { Deploy: helmDeploy },
  'helm-pod': { Test: podFromResource(false), Run: podFromResource(false) },
  'kubernetes-pod': { Test: podFromResource(true), Run: podFromResource(true) },
  'kubernetes-exec': { Test: kubernetesExec, Run: kubernetesExec },
  persistentvolumeclaim: { Deploy: volumeDeploy('persistentvolumeclaim') },
  configmap: { Deploy: volumeDeploy('configmap') },
};

/** The types whose Test and Run are pods, with Garden's `spec.cacheResult`. */
const podTypes = new Set(['container', 'helm-pod', 'kubernetes-pod']);

/**
 * tend's action type for a Garden type and kind: container Test/Run are tend's kubernetes-pod,
 * volume Deploys a kubernetes Deploy of their object.
 */
function tendType(type: string, kind: string): string {
  if (volumeDeployTypes.includes(type)) return 'kubernetes';
  return type === 'container' && (kind === 'Test' || kind === 'Run') ? 'kubernetes-pod' : type;
}

/** The Garden action keys this translation reads (`internal` needs nothing from tend). */
const readActionKeys = new Set([
  ...commonKeys,
  'apiVersion',
  'internal',
  'allowPublish',
  'source',
  'dependencies',
  'version',
]);

/**
 * The Garden action as tend's, or undefined when it is not loaded (disabled). Types tend does
 * not have are problems; the types it has go on to tend's own checks.
 */
export function translateGardenAction(
  value: GardenRecord,
  translation: Translation,
  index: GardenProjectIndex,
): GardenRecord | undefined {
  checkApiVersion(translation, value);
  const kind = String(value.kind);
  const out: GardenRecord = {};
  for (const key of commonKeys) if (value[key] !== undefined) out[key] = value[key];
  if (out.timeout !== undefined) out.timeout = gardenTimeout(out.timeout);
  if (value.allowPublish !== undefined) {
    translation.note(['allowPublish'], 'allowPublish: tend publishes no images; ignored');
  }
  if (value.version !== undefined) ignoreActionVersionSettings(translation, value.version);
  // A key of neither Garden's nor tend's goes on for tend's check to name (a typo, often).
  for (const key of Object.keys(value)) if (!readActionKeys.has(key)) out[key] = value[key];
  if (isRecord(value.source)) {
    if (value.source.repository !== undefined) {
      // Its path is in that repository (Garden resolves it from the repository's root): no second error here.
      translation.unsupported(
        ['source', 'repository'],
        'a remote source repository is not fetched by tend; clone it into the project',
      );
    } else if (typeof value.source.path === 'string') {
      out.source = value.source.path;
      translation.moved(['source'], ['source', 'path']);
    }
  } else if (value.source !== undefined) {
    out.source = value.source;
  }
  // A templated entry (or the whole key) is resolved once the environment is chosen (action-dependencies.ts).
  if (Array.isArray(value.dependencies)) {
    out.dependencies = value.dependencies.map((dependency) =>
      typeof dependency === 'string' && dependency.includes('${') ? dependency : dependencyRef(dependency),
    );
  } else if (value.dependencies !== undefined) out.dependencies = value.dependencies;

  const type = typeof value.type === 'string' ? value.type : '';
  // Garden checks the type of enabled actions only.
  if (value.disabled === true && !translators[type]?.[kind]) {
    translation.note(['disabled'], `${kind} ${String(value.name)} is disabled; not loaded`);
    return undefined;
  }
  const instead = unsupportedTypes[type];
  if (instead !== undefined) {
    translation.unsupported(['type'], `action type ${type} is not supported by tend; ${instead}`);
    translation.unloadedActions.push(`${kind.toLowerCase()}.${String(value.name)}`);
    return undefined;
  }
  const translate = translators[type]?.[kind];
  out.type = tendType(type, kind);
  if (out.type !== type) translation.writtenType = type;
  // An exec Build may have no spec at all (it only gathers files for others).
  const givenSpec = value.spec ?? (type === 'exec' ? {} : undefined);
  if (translate && isRecord(givenSpec)) {
    const dependencies = Array.isArray(out.dependencies) ? out.dependencies : [];
    const facts = { kind, name: String(value.name), dependencies, index };
    const spec = translate(translation, givenSpec, facts);
    if (translation.unloadedActions.includes(`${kind.toLowerCase()}.${facts.name}`)) return undefined;
    // A container Deploy, Test or Run with `build:` runs the image that Build made: Garden needs
    // `image` only without a build.
    if (spec && type === 'container' && kind !== 'Build' && typeof value.build === 'string')
      spec.image ??= `\${actions.build.${value.build}.outputs.deploymentImageId}`;
    if (spec) out.spec = spec;
    // Garden caches a pod's result unless told not to (runCacheResultSchema's default), a Run's too.
    if (podTypes.has(type) && (kind === 'Test' || kind === 'Run'))
      out.cacheResult = typeof givenSpec.cacheResult === 'boolean' ? givenSpec.cacheResult : true;
  }
  // A volume Deploy's version is its spec's: Garden reads no files for it.
  if (volumeDeployTypes.includes(type)) out.include ??= [];
  return out;
}
