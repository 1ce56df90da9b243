/**
 * A Garden Project document as tend's (docs/garden.md): `apiVersion`, `dotIgnoreFile(s)`, `scan`
 * and 0.12's `modules` are read (the last three by src/config/files.ts); `local-kubernetes` and
 * `kubernetes` become tend's kubernetes provider (Garden's registry object a `host/path` string,
 * its settings tend does not use noted once per entry); Garden's `exec` provider, loaded by
 * default there, is added when the project does not list it; the `container` provider is part of
 * tend's kubernetes provider. Other providers (terraform, pulumi…) are problems.
 */
import type { ConfigPath } from '../project.js';
import {
  checkApiVersion,
  dropIgnoredKeys,
  everyAction,
  isRecord,
  mergePatch,
  noteUnknownKeys,
  refuseUnknownKeys,
  Translation,
} from './translation.js';
import type { GardenProblem, GardenRecord } from './translation.js';
import { ignoreProjectVersionSettings } from './version-settings.js';
import { formatPath } from '../diagnostics.js';
import { typeName } from '../../expressions/evaluate.js';

/** The keys of tend's kubernetes provider entry (src/plugins/kubernetes/config.ts) and of every entry. */
const kubernetesKeys = [
  'name',
  'environments',
  'context',
  'kubeconfig',
  'namespace',
  'buildMode',
  'deploymentRegistry',
  'insecureRegistry',
  'defaultHostname',
  'ingressClass',
  'systemNamespace',
  'buildkitImage',
  'kanikoImage',
  'podStartTimeout',
  'namespaceTimeout',
  'retries',
];

/**
 * The keys of Garden's kubernetes provider entry (core/src/plugins/kubernetes/config.ts, of
 * kubernetesConfigBase and configSchema; `dependencies` is read apart) and the keys only Garden
 * 0.12's had (0.12.71), whose projects tend reads too.
 */
const gardenKubernetesKeys = [
  'name',
  'environments',
  'preInit',
  'utilImageRegistryDomain',
  'buildMode',
  'clusterBuildkit',
  'jib',
  'kaniko',
  'defaultHostname',
  'sync',
  'devMode',
  'forceSsl',
  'gardenSystemNamespace',
  'imagePullSecrets',
  'copySecrets',
  'resources',
  'tlsCertificates',
  'systemNodeSelector',
  'context',
  'deploymentRegistry',
  'ingressClass',
  'ingressHttpPort',
  'ingressHttpsPort',
  'kubeconfig',
  'kubectlPath',
  'namespace',
  'setupIngressController',
  'clusterDocker',
  'deploymentStrategy',
  'storage',
  'certManager',
  'registryProxyTolerations',
];
const knownKubernetesKeys = [...new Set([...gardenKubernetesKeys, ...kubernetesKeys])];

/** Project keys that say where the configuration is, or concern Garden Cloud, or Garden's own outputs. */
const readByFileDiscovery = ['apiVersion', 'dotIgnoreFile', 'dotIgnoreFiles', 'scan', 'modules'];
const ignoredProjectKeys = ['id', 'domain', 'organizationId', 'outputs', 'proxy', 'importVariables'];

/** Garden providers with no tend counterpart: what to do instead. */
const unsupportedProviders: Record<string, string> = {
  terraform: 'run terraform from an exec Run action (`command: [terraform, apply, -auto-approve]`)',
  pulumi: 'run pulumi from an exec Run action (`command: [pulumi, up, --yes]`)',
  jib: 'build the image with a container Build (a Dockerfile) or an exec Build running jib',
  'ephemeral-kubernetes': 'use the kubernetes provider with a cluster of your own',
  conftest: 'run conftest from an exec Test action',
  'conftest-container': 'run conftest from an exec Test action',
  'conftest-kubernetes': 'run conftest from an exec Test action',
  hadolint: 'run hadolint from an exec Test action',
};

/**
 * Garden providers that watch a run and change nothing it deploys (a trace exporter, a dashboard):
 * left out with a note, so that a project using them runs as it is.
 */
const observingProviders: Record<string, string> = {
  'otel-collector':
    "provider otel-collector: tend exports no OpenTelemetry traces; a run's events are in `tend events` and the server; entry ignored",
  octant: 'provider octant: a dashboard of the cluster, which tend does not start; entry ignored',
};

function translateProvider(
  translation: Translation,
  entry: unknown,
  at: ConfigPath,
  projectName: unknown,
): GardenRecord | undefined {
  if (!isRecord(entry) || typeof entry.name !== 'string') return entry as GardenRecord;
  const { dependencies: _order, ...rest } = entry;
  const name = entry.name;
  if (name === 'container') {
    translation.note(
      [...at, 'name'],
      "provider container: tend's kubernetes provider builds containers; entry ignored",
    );
    return undefined;
  }
  if (name === 'exec') {
    // initScript is tend's too (src/plugins/exec/init-script.ts).
    const kept = dropIgnoredKeys(
      translation,
      rest,
      Object.keys(rest).filter((key) => key !== 'name' && key !== 'environments' && key !== 'initScript'),
      at,
      "Garden's exec provider settings",
    );
    return kept;
  }
  if (name === 'local-kubernetes' || name === 'kubernetes') {
    // Garden's kubernetes provider refuses a key it does not have; its local-kubernetes accepts one.
    // As Garden checks only the providers of the chosen environment, a limited entry's refusals wait.
    const limited = Array.isArray(entry.environments);
    const refusing = limited ? new Translation() : translation;
    const known =
      name === 'kubernetes'
        ? refuseUnknownKeys(
            refusing,
            rest,
            knownKubernetesKeys,
            at,
            () => `Garden's ${name} provider refuses it too`,
          )
        : noteUnknownKeys(translation, rest, knownKubernetesKeys, at, `Garden's ${name} provider`);
    const kept = dropIgnoredKeys(
      translation,
      known,
      Object.keys(known).filter((key) => !kubernetesKeys.includes(key)),
      at,
      `Garden's ${name} provider settings`,
    );
    if (isRecord(kept.namespace) && typeof kept.namespace.name === 'string') {
      if (Object.keys(kept.namespace).some((key) => key !== 'name')) {
        translation.note(
          [...at, 'namespace'],
          'namespace labels and annotations: tend sets its own; ignored',
        );
      }
      kept.namespace = kept.namespace.name;
    }
    const registry = kept.deploymentRegistry;
    if (isRecord(registry) && typeof registry.hostname === 'string') {
      // As Garden names images: `<hostname>[:<port>]/<namespace>/<image>`.
      const { port } = registry;
      if (
        port !== undefined &&
        !(Number.isInteger(port) && (port as number) >= 1 && (port as number) <= 65_535)
      ) {
        translation.unsupported(
          [...at, 'deploymentRegistry', 'port'],
          `deploymentRegistry.port ${JSON.stringify(port)} is not a port number (1 to 65535)`,
        );
      }
      const host = port === undefined ? registry.hostname : `${registry.hostname}:${String(port)}`;
      kept.deploymentRegistry =
        typeof registry.namespace === 'string' ? `${host}/${registry.namespace}` : host;
      if (registry.insecure === true && kept.insecureRegistry === undefined) kept.insecureRegistry = true;
    }
    if (kept.buildMode === 'cluster-docker') {
      // Garden 0.12's in-cluster Docker daemon (gone in 0.13): an in-cluster build all the same.
      translation.note(
        [...at, 'buildMode'],
        'buildMode cluster-docker (Garden 0.12): tend builds images in the cluster with cluster-buildkit',
      );
      kept.buildMode = 'cluster-buildkit';
    }
    if (kept.buildMode === 'local-docker') {
      translation.note(
        [...at, 'buildMode'],
        'buildMode local-docker: tend builds images in the cluster (cluster-buildkit); ignored',
      );
      delete kept.buildMode;
    }
    if (
      name === 'local-kubernetes' &&
      kept.defaultHostname === undefined &&
      typeof projectName === 'string'
    ) {
      // Garden's local-kubernetes default (minikube's nip.io name aside): ingresses need a host.
      kept.defaultHostname = `${projectName}.local.demo.garden`;
    }
    // Garden's kubernetes provider requires a context; local-kubernetes picks one (environment.ts contextProblems).
    return {
      ...kept,
      name: 'kubernetes',
      ...(name === 'kubernetes' ? { [requiresContext]: true } : {}),
      ...(limited && refusing.problems.length > 0
        ? { [refusedWhereUsed]: refusing.problems.map((p) => ({ ...p, path: p.path.slice(at.length) })) }
        : {}),
    };
  }
  const observing = observingProviders[name];
  if (observing !== undefined) {
    translation.note([...at, 'name'], observing);
    return undefined;
  }
  const instead = unsupportedProviders[name];
  const message =
    `provider ${name} is not supported by tend` +
    (instead ? `; ${instead}` : '; tend has the kubernetes and exec providers (and third-party plugins)');
  // As Garden picks providers (core/src/config/project.ts pickEnvironment): one limited to some
  // environments is left out of the others, so it is refused only where it is used.
  if (Array.isArray(entry.environments)) {
    const refusal: GardenProblem = { code: 'TEND_CONFIG_UNSUPPORTED', message, path: ['name'] };
    return { name, environments: entry.environments, [refusedWhereUsed]: [refusal] };
  }
  translation.unsupported([...at, 'name'], message);
  return undefined;
}

/**
 * On a translated provider entry limited to some environments: its problems (paths within the
 * entry), raised only in those environments; TEND_CONFIG_UNSUPPORTED among them for a provider
 * tend cannot run. A symbol: no configuration can write it.
 */
export const refusedWhereUsed = Symbol('refused where used');

/** On a translated provider entry: the entry as written, in Garden's shape (ProviderEntry.written). */
export const gardenProviderConfig = Symbol('Garden provider configuration');

/**
 * What `${providers.<name>.config}` reads of an entry: what the user wrote, as Garden's
 * configureProvider leaves it (core/src/plugins/kubernetes/kubernetes.ts, local/config.ts): a
 * kubernetes provider's namespace as `{ name }` (unwritten: the one it deploys into) and
 * local-kubernetes' default hostname.
 */
function withGardenConfig(translated: GardenRecord, written: unknown): GardenRecord {
  if (!isRecord(translated) || !isRecord(written)) return translated;
  if (translated.name !== 'kubernetes') return { ...translated, [gardenProviderConfig]: written };
  const { namespace } = written;
  const config = {
    ...written,
    namespace: isRecord(namespace)
      ? namespace
      : { name: namespace ?? translated.namespace ?? '${environment.namespace}' },
    ...(translated.defaultHostname !== undefined && written.defaultHostname === undefined
      ? { defaultHostname: translated.defaultHostname }
      : {}),
  };
  return { ...translated, [gardenProviderConfig]: config };
}

/**
 * On a translated entry of Garden's `kubernetes` provider: Garden requires its `context`
 * (core/src/plugins/kubernetes/config.ts, `joi.string().required()`), checked where used, merged.
 */
export const requiresContext = Symbol('requires context');

/**
 * A varfile as Garden loads it (core/src/config/base.ts loadVarfile): the given path, else the
 * default (`garden.env`, `garden.<env>.env`), which may be missing, as may the given one when it
 * is the default. Any name: `*.yml`, `*.yaml` and `*.json` are read as YAML, others as dotenv.
 */
function gardenVarfile(
  translation: Translation,
  at: ConfigPath,
  given: unknown,
  defaultPath: string,
): unknown {
  if (given === undefined) return { path: defaultPath, optional: true };
  // Garden's schema (joi.posixPath()) takes one path: a list or `{ path, optional }` is tend.yml's `varfiles`.
  if (typeof given !== 'string') {
    translation.invalid(
      at,
      `${formatPath(at)} must be a path (a string), as in Garden; got a ${typeName(given)}`,
    );
    return { path: defaultPath, optional: true };
  }
  return typeof given === 'string' && given === defaultPath ? { path: given, optional: true } : given;
}

/** A Garden environment: `production` ignored, its `varfile` (default `garden.<env>.env`) tend's varfiles. */
function translateEnvironment(translation: Translation, environment: unknown, i: number): unknown {
  if (!isRecord(environment)) return environment;
  const at: ConfigPath = ['environments', i];
  // Its providers are the project's (providerEntries).
  const { production, varfile, providers: _providers, ...rest } = environment;
  if (production !== undefined) {
    translation.note(
      [...at, 'production'],
      'production: tend asks no confirmation for any environment; ignored',
    );
  }
  if (rest.varfiles !== undefined) return rest;
  translation.moved([...at, 'varfiles', 0], [...at, varfile === undefined ? 'name' : 'varfile']);
  return {
    ...rest,
    varfiles: [gardenVarfile(translation, [...at, 'varfile'], varfile, `garden.${String(rest.name)}.env`)],
  };
}

/**
 * A provider entry's `$merge` of a project variable holding a plain mapping (Garden's way to share
 * settings between providers), merged in: the entry's own keys win. Left out, the shared
 * `context` or `deploymentRegistry` would silently be another cluster's, so any other `$merge`
 * is refused.
 */
function mergedProvider(translation: Translation, project: GardenRecord, entry: unknown, i: number): unknown {
  if (!isRecord(entry) || entry.$merge === undefined) return entry;
  const { $merge: merged, ...own } = entry;
  const name =
    typeof merged === 'string' ? /^\$\{\s*var\.([A-Za-z0-9_-]+)\s*\}$/.exec(merged)?.[1] : undefined;
  const shared = name && isRecord(project.variables) ? project.variables[name] : undefined;
  if (!isRecord(shared) || JSON.stringify(shared).includes('${')) {
    translation.unsupported(
      ['providers', i, '$merge'],
      '$merge in a provider entry is read by tend only from a project variable holding a mapping without template expressions (`$merge: ${var.name}`); write the keys into the entry',
    );
    return own;
  }
  return { ...shared, ...own };
}

type ProviderEntry = { entry: unknown; at: ConfigPath };

/** Both of Garden's kubernetes providers are tend's one: an environment listing either replaces the project's. */
const tendName = (name: string): string => (name === 'local-kubernetes' ? 'kubernetes' : name);

const appliesIn = (entry: GardenRecord, environment: string): boolean =>
  !Array.isArray(entry.environments) || entry.environments.includes(environment);

/**
 * The provider entries and where each is written: the project's `providers`, and Garden 0.12's
 * `environments[].providers` (deprecated there, gone in 0.13). As Garden picks an environment's
 * providers (core/src/config/project.ts pickEnvironment), a provider an environment lists is the
 * project's entries for it that apply there with the environment's merged over them (JSON merge
 * patches); as tend writes it, one entry limited to that environment, the project's entries
 * limited to the other environments.
 */
function providerEntries(translation: Translation, project: GardenRecord): ProviderEntry[] {
  const ofProject: ProviderEntry[] = (Array.isArray(project.providers) ? project.providers : []).map(
    (entry, i) => ({ entry: mergedProvider(translation, project, entry, i), at: ['providers', i] }),
  );
  const environments = Array.isArray(project.environments) ? project.environments : [];
  const listedIn = new Map<string, Set<string>>();
  const ofEnvironments: ProviderEntry[] = [];
  environments.forEach((environment, i) => {
    if (!isRecord(environment) || typeof environment.name !== 'string') return;
    if (!Array.isArray(environment.providers)) return;
    const envName = environment.name;
    const merged = new Map<string, ProviderEntry>();
    environment.providers.forEach((entry, j) => {
      const at: ConfigPath = ['environments', i, 'providers', j];
      if (!isRecord(entry) || typeof entry.name !== 'string') {
        ofEnvironments.push({ entry, at });
        return;
      }
      const base =
        merged.get(entry.name)?.entry ??
        ofProject.reduce<unknown>(
          (sum, { entry: own }) =>
            isRecord(own) && own.name === entry.name && appliesIn(own, envName) ? mergePatch(sum, own) : sum,
          {},
        );
      merged.set(entry.name, {
        entry: { ...(mergePatch(base, entry) as GardenRecord), environments: [envName] },
        at,
      });
      listedIn.set(tendName(entry.name), (listedIn.get(tendName(entry.name)) ?? new Set()).add(envName));
    });
    ofEnvironments.push(...merged.values());
  });
  const allNames = environments.flatMap((e) => (isRecord(e) && typeof e.name === 'string' ? [e.name] : []));
  const limited = ofProject.flatMap(({ entry, at }): ProviderEntry[] => {
    const listed =
      isRecord(entry) && typeof entry.name === 'string' ? listedIn.get(tendName(entry.name)) : undefined;
    if (!listed || !isRecord(entry)) return [{ entry, at }];
    const others = (Array.isArray(entry.environments) ? entry.environments : allNames).filter(
      (name) => !listed.has(String(name)),
    );
    return others.length === 0 ? [] : [{ entry: { ...entry, environments: others }, at }];
  });
  return [...limited, ...ofEnvironments];
}

/**
 * Garden 0.12 gives a Project without `environments` its default (core/src/config/project.ts
 * defaultEnvironments): `local`, in namespace `default`, with the local-kubernetes provider. Garden
 * 0.13 and later require the key (at least one): there (apiVersion garden.io/v1 or v2, as
 * template-syntax.ts tells the versions apart) its absence is the one error, saying what to add.
 */
function withDefaultEnvironments(translation: Translation, value: GardenRecord): GardenRecord {
  if (value.environments !== undefined) return value;
  if (value.apiVersion === 'garden.io/v1' || value.apiVersion === 'garden.io/v2') {
    translation.invalid(
      ['kind'],
      'missing required key "environments" in the Project document: Garden 0.13 and later require at least one environment; add `environments: [{ name: local }]`',
    );
  } else {
    translation.note(
      ['kind'],
      "environments: none listed; Garden 0.12's default is used: environment local (namespace default) with the local-kubernetes provider",
    );
  }
  // Whatever is found in it is at the Project's line; given in the error case too, so that the missing key is no second error.
  translation.moved(['environments'], ['kind']);
  const local = { name: 'local', defaultNamespace: 'default', providers: [{ name: 'local-kubernetes' }] };
  return { ...value, environments: [local] };
}

/** The Garden Project document as tend's. */
export function translateGardenProject(value: GardenRecord, translation: Translation): GardenRecord {
  checkApiVersion(translation, value);
  const kept = dropIgnoredKeys(
    translation,
    value,
    ignoredProjectKeys,
    [],
    'Garden Cloud and output settings',
  );
  for (const key of readByFileDiscovery) delete kept[key];
  ignoreProjectVersionSettings(translation, kept);
  // Garden's project varfile (default garden.env): above the project's variables, below the environment's.
  if (kept.varfiles === undefined) {
    translation.moved(['varfiles', 0], kept.varfile === undefined ? ['name'] : ['varfile']);
    kept.varfiles = [gardenVarfile(translation, ['varfile'], kept.varfile, 'garden.env')];
  }
  delete kept.varfile;
  if (kept.sources !== undefined) {
    translation.unsupported(
      ['sources'],
      'remote sources are not fetched by tend; clone them into the project',
    );
    // What refers to their actions is no further error.
    translation.unloadedActions.push(everyAction);
    delete kept.sources;
  }
  const project = withDefaultEnvironments(translation, value);
  kept.environments = project.environments;
  if (Array.isArray(kept.environments)) {
    kept.environments = kept.environments.map((environment, i) =>
      translateEnvironment(translation, environment, i),
    );
  }
  const providers: GardenRecord[] = [];
  const environments = environmentNames(kept.environments);
  for (const { entry, at } of providerEntries(translation, project)) {
    const notesBefore = translation.notes.length;
    const translated = translateProvider(translation, entry, at, kept.name);
    // An entry limited to some environments is used only there: so are its notes.
    const only =
      isRecord(entry) && Array.isArray(entry.environments) ? entry.environments.map(String) : undefined;
    if (only) for (const note of translation.notes.slice(notesBefore)) note.environments = only;
    // undefined: left out (with its note or error); an entry that is no mapping goes on for the schema to name.
    if (translated === undefined) continue;
    for (const split of withGardenNamespace(translated, environments)) {
      translation.moved(['providers', providers.length], at);
      providers.push(withGardenConfig(split, entry));
    }
  }
  const exec = execEverywhere(providers, environments.all);
  if (exec) {
    translation.moved(['providers', providers.length], ['kind']);
    providers.push(exec);
  }
  kept.providers = providers;
  return kept;
}

/** The names of a Garden project's environments, and of those that set `defaultNamespace`. */
interface EnvironmentNames {
  all: readonly string[];
  own: ReadonlySet<string>;
}

function environmentNames(environments: unknown): EnvironmentNames {
  const named = (Array.isArray(environments) ? environments : []).filter(
    (e): e is GardenRecord => isRecord(e) && typeof e.name === 'string',
  );
  return {
    all: named.map((e) => e.name as string),
    own: new Set(named.filter((e) => e.defaultNamespace !== undefined).map((e) => e.name as string)),
  };
}

/**
 * Garden's kubernetes provider deploys into `<project>-<environment namespace>` unless its entry
 * names a namespace (core/src/plugins/kubernetes/kubernetes.ts, configureProvider): so does
 * tend's, in the environments that set `defaultNamespace`. In one without it, Garden's would be
 * `<project>-default` for every developer; tend keeps its per-developer `<project>-<user>`. An entry
 * used in both kinds of environment is two, one for each.
 */
function withGardenNamespace(entry: GardenRecord, environments: EnvironmentNames): GardenRecord[] {
  if (
    !isRecord(entry) ||
    entry.name !== 'kubernetes' ||
    entry.namespace !== undefined ||
    environments.own.size === 0
  )
    return [entry];
  const used = Array.isArray(entry.environments) ? entry.environments.map(String) : environments.all;
  const own = used.filter((name) => environments.own.has(name));
  const others = used.filter((name) => !environments.own.has(name));
  if (own.length === 0) return [entry];
  const prefixed = { ...entry, namespace: '${project.name}-${environment.namespace}' };
  if (others.length === 0) return [prefixed];
  return [
    { ...prefixed, environments: own },
    { ...entry, environments: others },
  ];
}

/**
 * Garden loads its exec provider in every environment, whatever the project lists: the entry for
 * the environments no exec entry covers (an entry limited to some leaves the others), if any.
 */
function execEverywhere(
  providers: readonly GardenRecord[],
  environments: readonly string[],
): GardenRecord | undefined {
  const entries = providers.filter((p) => isRecord(p) && p.name === 'exec');
  if (entries.length === 0) return { name: 'exec' };
  if (entries.some((p) => !Array.isArray(p.environments))) return undefined;
  const covered = new Set(entries.flatMap((p) => (p.environments as unknown[]).map(String)));
  const left = environments.filter((name) => !covered.has(name));
  return left.length > 0 ? { name: 'exec', environments: left } : undefined;
}
