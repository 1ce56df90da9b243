/**
 * A 0.12 `helm` module converted as Garden 0.13 converts it (core/src/plugins/kubernetes/helm/
 * handlers.ts): a helm Deploy named after the module (none with `skipDeploy`) of its chart
 * (`chart` with `repo` and `version`, else `chartPath`), `values`, `valueFiles` and release name
 * (`releaseName`, else the module's name), depending on the module's build dependencies and the
 * container module of `serviceResource`; each task a helm-pod Run and each test a helm-pod Test
 * (`<module>-<test>`) in a pod like the workload of its `resource` (else the module's
 * `serviceResource`), rendered from the same chart.
 *
 * With `base` (another helm module), the Deploy deploys that module's chart with its values
 * under this module's; tasks and tests render the base's files.
 *
 * Garden also gives the module a Build that only copies its files (and the base's), which the
 * actions run in; tend reads the charts where the modules are, so there is no such Build.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { ConfigPath } from '../project.js';
import { addModulePods, type ModuleParts } from './module-parts.js';
import { isRecord, mergePatch, type GardenRecord } from './translation.js';

const defined = (record: GardenRecord): GardenRecord =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));

/**
 * Garden's `base`: the helm module whose files Garden copies into this module's build directory,
 * whose chart the Deploy deploys. Refused as Garden refuses it: not a helm module, or this module
 * having a chart of its own.
 */
function baseModule(parts: ModuleParts, chartPath: string): { value: GardenRecord; dir: string } | undefined {
  const { module, moduleDir, modules, translation } = parts;
  if (typeof module.base !== 'string') return undefined;
  const base = modules.get(module.base);
  const problem =
    base === undefined
      ? `base: there is no module ${module.base}`
      : base.value.type !== 'helm'
        ? `base: module ${module.base} is of type ${String(base.value.type)}, not a helm module`
        : statSync(path.join(moduleDir, chartPath, 'Chart.yaml'), { throwIfNoEntry: false })?.isFile()
          ? `base: module ${parts.name} has a chart of its own (${path.posix.join(chartPath, 'Chart.yaml')}) and a base; Helm charts cannot be merged, remove one (as Garden requires)`
          : undefined;
  if (problem) {
    translation.unsupported(['base'], problem);
    return undefined;
  }
  return base;
}

/** The path of a chart directory of the base module, from this module's directory. */
function chartOfBase(moduleDir: string, base: { dir: string }, chartPath: unknown): string {
  const relative = path.relative(
    moduleDir,
    path.join(base.dir, typeof chartPath === 'string' ? chartPath : '.'),
  );
  return relative === '' ? '.' : relative;
}

/**
 * What Garden includes in a helm module's version when neither `include` nor `exclude` is set:
 * the chart's files (a local chart) or the value files (a remote one), under `chartPath`.
 */
function defaultInclude(module: GardenRecord, moduleDir: string, chartPath: string): string[] {
  const valueFiles = Array.isArray(module.valueFiles) ? module.valueFiles.map(String) : [];
  const hasChart = statSync(path.join(moduleDir, chartPath, 'Chart.yaml'), {
    throwIfNoEntry: false,
  })?.isFile();
  const patterns = hasChart
    ? ['*', 'charts/**/*', 'templates/**/*', ...valueFiles]
    : ['*.yaml', '*.yml', ...valueFiles];
  return patterns.map((pattern) => path.posix.join(chartPath, pattern));
}

export function convertHelmModule(parts: ModuleParts): void {
  const { module, name, moduleDir, buildDependencies, buildOf, runtime, add, entries } = parts;
  const chartPath = typeof module.chartPath === 'string' ? module.chartPath : '.';
  const chartBase = baseModule(parts, chartPath);
  const base: GardenRecord = {
    ...parts.base,
    ...(module.include === undefined && module.exclude === undefined
      ? { include: defaultInclude(module, moduleDir, chartPath) }
      : {}),
  };
  // Garden's tasks and tests render this module's chartPath in the build directory (the base's
  // files, with a base); its Deploy the base's chartPath, with the base's values under its own.
  const chartKeys = (ofDeploy: boolean) =>
    defined({
      chart: defined({
        name: module.chart,
        path: module.chart
          ? undefined
          : chartBase
            ? chartOfBase(moduleDir, chartBase, ofDeploy ? chartBase.value.chartPath : chartPath)
            : chartPath,
        repo: module.repo,
        version: module.version,
      }),
      releaseName: module.releaseName ?? name,
      values:
        chartBase && ofDeploy ? mergePatch(chartBase.value.values ?? {}, module.values ?? {}) : module.values,
      valueFiles: module.valueFiles,
    });
  const chartMoves: [ConfigPath, ConfigPath][] = [
    [['spec', 'chart', 'name'], ['chart']],
    [['spec', 'chart', 'path'], chartBase ? ['base'] : ['chartPath']],
    [['spec', 'chart'], []],
    [['spec', 'values'], ['values']],
    [['spec', 'valueFiles'], ['valueFiles']],
    [['spec', 'releaseName'], ['releaseName']],
  ];
  // Garden adds the container module of a task's or test's resource to the module's build dependencies.
  const resourceBuilds = [...entries('tasks'), ...entries('tests')].flatMap(({ entry, at }) =>
    isRecord(entry.resource) && typeof entry.resource.containerModule === 'string'
      ? buildOf(entry.resource.containerModule, [...at, 'resource', 'containerModule'])
      : [],
  );
  const builds = [...new Set([...buildDependencies, ...resourceBuilds])];
  const serviceResource = isRecord(module.serviceResource) ? module.serviceResource : undefined;
  if (module.skipDeploy !== true) {
    const deployResource = chartBase
      ? mergePatch(chartBase.value.serviceResource ?? {}, serviceResource ?? {})
      : serviceResource;
    const sourceBuild =
      isRecord(deployResource) && typeof deployResource.containerModule === 'string'
        ? buildOf(deployResource.containerModule, ['serviceResource', 'containerModule'])
        : [];
    add(
      {
        ...base,
        kind: 'Deploy',
        type: 'helm',
        name,
        dependencies: [...new Set([...builds, ...runtime(module.dependencies), ...sourceBuild])],
        ...(module.timeout !== undefined ? { timeout: module.timeout } : {}),
        spec: {
          ...chartKeys(true),
          ...defined({
            namespace: module.namespace,
            atomic: module.atomicInstall,
            portForwards: module.portForwards,
            sync: module.sync ?? module.devMode,
          }),
        },
      },
      [
        ...chartMoves,
        [['spec', 'atomic'], ['atomicInstall']],
        [['spec', 'sync'], [module.sync !== undefined ? 'sync' : 'devMode']],
        [['spec'], []],
      ],
    );
  }
  addModulePods(parts, {
    type: 'helm-pod',
    base,
    serviceResource,
    dependencies: (entryDependencies) => [...new Set([...builds, ...runtime(entryDependencies)])],
    spec: { ...chartKeys(false), ...defined({ namespace: module.namespace }) },
    moves: [...chartMoves, [['spec', 'namespace'], ['namespace']]],
    keepsDisabled: false,
  });
}
