/**
 * A Garden action document (Build, Deploy, Test, Run; apiVersion garden.io/v0–v2) as tend's
 * (docs/garden.md): `source: { path }`, dependencies as `{ kind, name }` or `Kind.name`, a literal
 * `disabled`, and each action type's spec in tend's terms — exec (`deployCommand`, `shell`),
 * container Build and Deploy, container Test/Run (run as a kubernetes-pod), kubernetes Deploy (Garden's
 * manifest keys are tend's own). What tend cannot do is a problem naming the key; what it
 * ignores (sync mode, port forwards, artifacts…) is one note each.
 */
import type { ConfigPath } from '../project.js';
import {
  checkApiVersion,
  dropIgnoredKeys,
  isRecord,
  type GardenRecord,
  type Translation,
} from './translation.js';

/** Garden action types with no tend counterpart: what to do instead. */
const unsupportedTypes: Record<string, string> = {
  terraform: 'run terraform from an exec action (`command: [terraform, apply, -auto-approve]`)',
  pulumi: 'run pulumi from an exec action (`command: [pulumi, up, --yes]`)',
  'jib-container': 'build with a container Build (a Dockerfile) or an exec Build that runs jib',
  helm: 'render the chart (`helm template`) into manifest files for a kubernetes Deploy',
  'helm-pod': 'use a kubernetes-pod action with the image and command',
  'kubernetes-exec': 'use a kubernetes-pod action, or an exec action running `kubectl exec`',
  persistentvolumeclaim: 'write the PersistentVolumeClaim as a manifest of a kubernetes Deploy',
  configmap: 'write the ConfigMap as a manifest of a kubernetes Deploy',
  'conftest-container': 'run conftest from an exec Test',
  'conftest-helm': 'run conftest from an exec Test',
  hadolint: 'run hadolint from an exec Test',
};

/** Garden keys of every action that tend reads as they are. */
const commonKeys = ['kind', 'type', 'name', 'description', 'include', 'exclude', 'timeout', 'spec'];

type SpecTranslator = (translation: Translation, spec: GardenRecord) => GardenRecord | undefined;

/** `command` as Garden runs it with `shell: true`: one string for `sh -c`. */
function shellCommand(translation: Translation, spec: GardenRecord, key: string): unknown {
  const command = spec[key];
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
  const out: GardenRecord = { ...rest, command: shellCommand(translation, spec, 'deployCommand') };
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
  if (cleanupCommand !== undefined) {
    translation.note(
      ['spec', 'cleanupCommand'],
      'cleanupCommand is not run by tend (it stops persistent processes itself); run it yourself when the environment goes',
    );
  }
  return out;
};

const containerBuild: SpecTranslator = (translation, spec) => {
  for (const key of ['extraFlags', 'secrets'] as const) {
    if (spec[key] !== undefined) {
      translation.unsupported(
        ['spec', key],
        `${key}: tend's in-cluster builder takes no ${key === 'secrets' ? 'build secrets' : 'extra flags'}; remove it`,
      );
    }
  }
  const kept = dropIgnoredKeys(
    translation,
    spec,
    ['localId', 'publishId', 'platforms', 'extraFlags', 'secrets'],
    ['spec'],
    'image naming and platform settings',
  );
  if (isRecord(kept.buildArgs)) {
    kept.buildArgs = Object.fromEntries(Object.entries(kept.buildArgs).map(([k, v]) => [k, String(v)]));
  }
  return kept;
};

const containerPod: SpecTranslator = (translation, spec) => {
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
  if (kept.volumes !== undefined) {
    translation.unsupported(
      ['spec', 'volumes'],
      'volumes of a container Test or Run are not mounted by tend; remove them',
    );
    delete kept.volumes;
  }
  if (isRecord(kept.env)) {
    const env: GardenRecord = {};
    for (const [name, value] of Object.entries(kept.env)) {
      if (isRecord(value)) {
        translation.unsupported(
          ['spec', 'env', name],
          'a secret reference in env is not read by tend; give the value',
        );
      } else {
        env[name] = typeof value === 'string' ? value : String(value);
      }
    }
    kept.env = env;
  }
  return kept;
};

/** Garden's env values as tend's: strings (a number or boolean as its text), a `secretRef` as it is. */
function envStrings(env: GardenRecord): GardenRecord {
  return Object.fromEntries(
    Object.entries(env).map(([name, value]) => [
      name,
      typeof value === 'number' || typeof value === 'boolean' ? String(value) : value,
    ]),
  );
}

const containerDeploy: SpecTranslator = (translation, spec) => {
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
  if (isRecord(kept.env)) kept.env = envStrings(kept.env);
  if (Array.isArray(kept.volumes)) {
    kept.volumes = kept.volumes.filter((volume, i) => {
      if (!isRecord(volume)) return true;
      const source = volume.hostPath !== undefined ? 'hostPath' : volume.action !== undefined ? 'action' : '';
      if (!source) return true;
      translation.unsupported(
        ['spec', 'volumes', i, source],
        source === 'hostPath'
          ? 'a hostPath volume is not mounted by tend (the files are on your machine, not the node); remove hostPath for an empty directory'
          : 'a volume from another action (a persistentvolumeclaim or configmap Deploy) is not mounted by tend; write the PersistentVolumeClaim or ConfigMap and the workload as a kubernetes Deploy',
      );
      return false;
    });
  }
  return kept;
};

const kubernetesDeploy: SpecTranslator = (translation, spec) => {
  for (const key of ['namespace', 'patchResources', 'applyArgs', 'localVolumes'] as const) {
    if (spec[key] === undefined) continue;
    const what = {
      namespace:
        'namespace: tend deploys into the environment namespace (set `overrideNamespace: true` to move objects that name another); remove it',
      patchResources:
        'patchResources is not applied by tend yet; write the change into the manifest (or a kustomize patch)',
      applyArgs: 'applyArgs: tend applies through the API, not kubectl; remove it',
      localVolumes: 'localVolumes are not mounted by tend; remove them',
    }[key];
    translation.unsupported(['spec', key], what);
  }
  const kept = dropIgnoredKeys(
    translation,
    spec,
    ['defaultTarget', 'sync', 'localMode', 'portForwards', 'waitForJobs'],
    ['spec'],
    'sync mode, local mode and port forwarding',
  );
  for (const key of ['namespace', 'patchResources', 'applyArgs', 'localVolumes']) delete kept[key];
  return kept;
};

const translators: Record<string, Partial<Record<string, SpecTranslator>>> = {
  exec: { Build: execCommand, Deploy: execDeploy, Test: execCommand, Run: execCommand },
  container: { Build: containerBuild, Deploy: containerDeploy, Test: containerPod, Run: containerPod },
  kubernetes: { Deploy: kubernetesDeploy },
};

/** tend's action type for a Garden type and kind (container Test/Run are tend's kubernetes-pod). */
function tendType(type: string, kind: string): string {
  return type === 'container' && (kind === 'Test' || kind === 'Run') ? 'kubernetes-pod' : type;
}

/** A dependency as tend writes it: `build.api`, from `build.api`, `Build.api` or `{ kind: Build, name: api }`. */
function dependencyRef(dependency: unknown): unknown {
  if (isRecord(dependency) && typeof dependency.kind === 'string' && typeof dependency.name === 'string') {
    return `${dependency.kind.toLowerCase()}.${dependency.name}`;
  }
  if (typeof dependency === 'string' && dependency.includes('.')) {
    const dot = dependency.indexOf('.');
    return `${dependency.slice(0, dot).toLowerCase()}${dependency.slice(dot)}`;
  }
  return dependency;
}

/** Keys of a Garden action with a problem of their own; the message says what to do. */
const unsupportedActionKeys: Record<string, string> = {
  variables: 'action-level variables are not supported by tend yet; move them to the Project variables',
  varfiles: 'action-level varfiles are not supported by tend yet; name the files in the environment varfiles',
  environments: 'an action limited to some environments is not supported by tend yet; remove `environments`',
  build:
    "a Deploy, Test or Run that runs in a Build's directory (`build:`) is not supported by tend yet; set `source` instead",
  copyFrom:
    'copyFrom is not supported by tend yet; make the Build produce the files where the other one reads them',
};

/** The Garden action keys this translation reads (`internal` and `buildAtSource` need nothing from tend). */
const readActionKeys = new Set([
  ...commonKeys,
  ...Object.keys(unsupportedActionKeys),
  'apiVersion',
  'disabled',
  'internal',
  'buildAtSource',
  'allowPublish',
  'source',
  'dependencies',
]);

/**
 * The Garden action as tend's, or undefined when it is not loaded (disabled). Types tend does
 * not have are problems; the types it has go on to tend's own checks.
 */
export function translateGardenAction(
  value: GardenRecord,
  translation: Translation,
): GardenRecord | undefined {
  checkApiVersion(translation, value);
  const kind = String(value.kind);
  if (value.disabled === true) {
    translation.note(['disabled'], `${kind} ${String(value.name)} is disabled; not loaded`);
    return undefined;
  }
  if (value.disabled !== undefined && value.disabled !== false) {
    translation.unsupported(
      ['disabled'],
      'disabled set by a template expression is not supported by tend yet; use true or false',
    );
  }
  const out: GardenRecord = {};
  for (const key of commonKeys) if (value[key] !== undefined) out[key] = value[key];
  for (const [key, message] of Object.entries(unsupportedActionKeys)) {
    if (value[key] !== undefined) translation.unsupported([key], message);
  }
  if (value.allowPublish !== undefined) {
    translation.note(['allowPublish'], 'allowPublish: tend publishes no images; ignored');
  }
  // A key of neither Garden's nor tend's goes on for tend's check to name (a typo, often).
  for (const key of Object.keys(value)) if (!readActionKeys.has(key)) out[key] = value[key];
  if (isRecord(value.source)) {
    if (value.source.repository !== undefined) {
      translation.unsupported(
        ['source', 'repository'],
        'a remote source repository is not fetched by tend; clone it into the project',
      );
    }
    if (typeof value.source.path === 'string') {
      out.source = value.source.path;
      translation.moved(['source'], ['source', 'path']);
    }
  } else if (value.source !== undefined) {
    out.source = value.source;
  }
  if (Array.isArray(value.dependencies)) out.dependencies = value.dependencies.map(dependencyRef);
  else if (value.dependencies !== undefined) out.dependencies = value.dependencies;

  const type = typeof value.type === 'string' ? value.type : '';
  const instead = unsupportedTypes[type];
  if (instead !== undefined) {
    translation.unsupported(['type'], `action type ${type} is not supported by tend; ${instead}`);
    translation.unloadedAction = `${kind.toLowerCase()}.${String(value.name)}`;
    return undefined;
  }
  if (
    type === 'kubernetes-pod' &&
    isRecord(value.spec) &&
    (value.spec.resource ?? value.spec.podSpec) !== undefined
  ) {
    translation.unsupported(
      ['spec', value.spec.resource !== undefined ? 'resource' : 'podSpec'],
      "a kubernetes-pod from a workload's pod spec is not supported by tend yet; give spec.image (and command)",
    );
    translation.unloadedAction = `${kind.toLowerCase()}.${String(value.name)}`;
    return undefined;
  }
  const translate = translators[type]?.[kind];
  out.type = tendType(type, kind);
  if (translate && isRecord(value.spec)) {
    const spec = translate(translation, value.spec);
    if (spec) out.spec = spec;
    if (type === 'container' && isRecord(value.spec) && typeof value.spec.cacheResult === 'boolean') {
      out.cacheResult = value.spec.cacheResult;
    }
  }
  return out;
}

export const gardenOnlyKinds = ['Workflow', 'Command'] as const;
const templateKinds = ['ConfigTemplate', 'RenderTemplate', 'ModuleTemplate'];

/** What the Loader does with a Garden document of a kind that is not an action: a note or a problem. */
export function otherGardenKind(value: GardenRecord, translation: Translation, at: ConfigPath): boolean {
  const kind = String(value.kind);
  const name = typeof value.name === 'string' ? value.name : '(no name)';
  if ((gardenOnlyKinds as readonly string[]).includes(kind)) {
    translation.note(
      at,
      `${kind} ${name}: Garden ${kind === 'Workflow' ? 'workflows' : 'custom commands'} are read but not run by tend`,
    );
    return true;
  }
  if (templateKinds.includes(kind)) {
    translation.unsupported(
      at,
      `${kind} ${name}: Garden config templates are not supported by tend yet; write the actions out`,
    );
    return true;
  }
  return false;
}
