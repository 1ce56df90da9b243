/**
 * A Garden Project document as tend's (docs/garden.md): `apiVersion`, `dotIgnoreFile(s)`, `scan`
 * and 0.12's `modules` are read (the last three by src/config/files.ts); `local-kubernetes` and
 * `kubernetes` become tend's kubernetes provider (Garden's registry object a `host/path` string,
 * its settings tend does not use noted once per entry); Garden's `exec` provider, loaded by
 * default there, is added when the project does not list it; the `container` provider is part of
 * tend's kubernetes provider. Other providers (terraform, pulumi…) are problems.
 */
import type { ConfigPath } from '../project.js';
import { checkApiVersion, dropIgnoredKeys, isRecord, type Translation } from './translation.js';
import type { GardenRecord } from './translation.js';

/** The keys of tend's kubernetes provider entry (src/plugins/kubernetes/config.ts) and of every entry. */
const kubernetesKeys = [
  'name',
  'environments',
  'context',
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

/** Project keys that say where the configuration is, or concern Garden Cloud, or Garden's own outputs. */
const readByFileDiscovery = ['apiVersion', 'dotIgnoreFile', 'dotIgnoreFiles', 'scan', 'modules'];
const ignoredProjectKeys = ['id', 'domain', 'organizationId', 'outputs', 'proxy', 'importVariables'];

/** Garden providers with no tend counterpart: what to do instead. */
const unsupportedProviders: Record<string, string> = {
  terraform: 'run terraform from an exec Run action (`command: [terraform, apply, -auto-approve]`)',
  pulumi: 'run pulumi from an exec Run action (`command: [pulumi, up, --yes]`)',
  jib: 'build the image with a container Build (a Dockerfile) or an exec Build running jib',
  'ephemeral-kubernetes': 'use the kubernetes provider with a cluster of your own',
  'otel-collector': 'remove it: tend records its own events (tend events)',
  conftest: 'run conftest from an exec Test action',
  'conftest-container': 'run conftest from an exec Test action',
  'conftest-kubernetes': 'run conftest from an exec Test action',
  hadolint: 'run hadolint from an exec Test action',
  octant: 'remove it',
};

function translateProvider(
  translation: Translation,
  entry: unknown,
  i: number,
): { entry: GardenRecord; name: string } | undefined {
  const at: ConfigPath = ['providers', i];
  if (!isRecord(entry) || typeof entry.name !== 'string') return { entry: entry as GardenRecord, name: '' };
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
    return { entry: kept, name };
  }
  if (name === 'local-kubernetes' || name === 'kubernetes') {
    const kept = dropIgnoredKeys(
      translation,
      rest,
      Object.keys(rest).filter((key) => !kubernetesKeys.includes(key)),
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
      kept.deploymentRegistry =
        typeof registry.namespace === 'string'
          ? `${registry.hostname}/${registry.namespace}`
          : registry.hostname;
      if (registry.insecure === true && kept.insecureRegistry === undefined) kept.insecureRegistry = true;
    }
    if (kept.buildMode === 'local-docker') {
      translation.note(
        [...at, 'buildMode'],
        'buildMode local-docker: tend builds images in the cluster (cluster-buildkit); ignored',
      );
      delete kept.buildMode;
    }
    return { entry: { ...kept, name: 'kubernetes' }, name: 'kubernetes' };
  }
  const instead = unsupportedProviders[name];
  translation.unsupported(
    [...at, 'name'],
    `provider ${name} is not supported by tend` +
      (instead ? `; ${instead}` : '; tend has the kubernetes and exec providers (and third-party plugins)'),
  );
  return undefined;
}

/**
 * A varfile as Garden loads it (core/src/config/base.ts loadVarfile): the given path, else the
 * default (`garden.env`, `garden.<env>.env`), which may be missing, as may the given one when it
 * is the default. Any name: `*.env` is read as dotenv, others as YAML or JSON.
 */
function gardenVarfile(given: unknown, defaultPath: string): unknown {
  if (given === undefined) return { path: defaultPath, optional: true };
  return typeof given === 'string' && given === defaultPath ? { path: given, optional: true } : given;
}

/** A Garden environment: `production` ignored, its `varfile` (default `garden.<env>.env`) tend's varfiles. */
function translateEnvironment(translation: Translation, environment: unknown, i: number): unknown {
  if (!isRecord(environment)) return environment;
  const at: ConfigPath = ['environments', i];
  const { production, varfile, ...rest } = environment;
  if (production !== undefined) {
    translation.note(
      [...at, 'production'],
      'production: tend asks no confirmation for any environment; ignored',
    );
  }
  if (rest.varfiles !== undefined) return rest;
  translation.moved([...at, 'varfiles', 0], [...at, varfile === undefined ? 'name' : 'varfile']);
  return { ...rest, varfiles: [gardenVarfile(varfile, `garden.${String(rest.name)}.env`)] };
}

/** The Garden Project document as tend's. */
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
  // Garden's project varfile (default garden.env): above the project's variables, below the environment's.
  if (kept.varfiles === undefined) {
    translation.moved(['varfiles', 0], kept.varfile === undefined ? ['name'] : ['varfile']);
    kept.varfiles = [gardenVarfile(kept.varfile, 'garden.env')];
  }
  delete kept.varfile;
  if (kept.sources !== undefined) {
    translation.unsupported(
      ['sources'],
      'remote sources are not fetched by tend; clone them into the project',
    );
    delete kept.sources;
  }
  if (Array.isArray(kept.environments)) {
    kept.environments = kept.environments.map((environment, i) =>
      translateEnvironment(translation, environment, i),
    );
  }
  const providers: GardenRecord[] = [];
  const names = new Set<string>();
  (Array.isArray(value.providers) ? value.providers : []).forEach((entry, i) => {
    const translated = translateProvider(translation, mergedProvider(translation, value, entry, i), i);
    if (!translated) return;
    translation.moved(['providers', providers.length], ['providers', i]);
    providers.push(translated.entry);
    names.add(translated.name);
  });
  // Garden loads its exec provider whatever the project lists.
  if (!names.has('exec')) {
    translation.moved(['providers', providers.length], ['kind']);
    providers.push({ name: 'exec' });
  }
  kept.providers = providers;
  return kept;
}
