/**
 * A 0.12 `helm` module converted as Garden 0.13 converts it (core/src/plugins/kubernetes/helm/
 * handlers.ts): a helm Deploy named after the module (none with `skipDeploy`) of its chart
 * (`chart` with `repo` and `version`, else `chartPath`), `values`, `valueFiles` and release name
 * (`releaseName`, else the module's name), depending on the module's build dependencies and the
 * container module of `serviceResource`; each task a helm-pod Run and each test a helm-pod Test
 * (`<module>-<test>`) in a pod like the workload of its `resource` (else the module's
 * `serviceResource`), rendered from the same chart.
 *
 * Garden also gives the module a Build that only copies its files, which the actions run in; tend
 * reads the chart where the module is, so there is no such Build.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { ConfigPath } from '../project.js';
import { envStrings, targetResource, type ModuleParts } from './module-parts.js';
import { isRecord, type GardenRecord } from './translation.js';

const defined = (record: GardenRecord): GardenRecord =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));

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
  const { module, name, moduleDir, buildDependencies, runtime, add, entries, translation } = parts;
  if (module.base !== undefined) {
    translation.unsupported(
      ['base'],
      "base: a helm module on another module's chart is not converted by tend; set chartPath to that chart and write its values here",
    );
  }
  const chartPath = typeof module.chartPath === 'string' ? module.chartPath : '.';
  const base: GardenRecord = {
    ...parts.base,
    ...(module.include === undefined && module.exclude === undefined
      ? { include: defaultInclude(module, moduleDir, chartPath) }
      : {}),
  };
  const chart = defined({
    name: module.chart,
    path: module.chart ? undefined : chartPath,
    repo: module.repo,
    version: module.version,
  });
  const chartKeys = defined({
    chart,
    releaseName: module.releaseName ?? name,
    values: module.values,
    valueFiles: module.valueFiles,
  });
  const chartMoves: [ConfigPath, ConfigPath][] = [
    [['spec', 'chart', 'name'], ['chart']],
    [['spec', 'chart', 'path'], ['chartPath']],
    [['spec', 'chart'], []],
    [['spec', 'values'], ['values']],
    [['spec', 'valueFiles'], ['valueFiles']],
    [['spec', 'releaseName'], ['releaseName']],
  ];
  // Garden adds the container module of a task's or test's resource to the module's build dependencies.
  const resourceBuilds = [...entries('tasks'), ...entries('tests')].flatMap(({ entry }) =>
    isRecord(entry.resource) && typeof entry.resource.containerModule === 'string'
      ? [`build.${entry.resource.containerModule}`]
      : [],
  );
  const builds = [...new Set([...buildDependencies, ...resourceBuilds])];
  const serviceResource = isRecord(module.serviceResource) ? module.serviceResource : undefined;
  if (module.skipDeploy !== true) {
    const sourceBuild =
      typeof serviceResource?.containerModule === 'string'
        ? [`build.${serviceResource.containerModule}`]
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
          ...chartKeys,
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
  for (const [key, kind] of [
    ['tasks', 'Run'],
    ['tests', 'Test'],
  ] as const) {
    for (const { entry, at } of entries(key)) {
      const {
        name: entryName,
        description,
        dependencies,
        disabled: _disabled,
        timeout,
        resource: ownResource,
        ...rest
      } = entry;
      const resource = targetResource(ownResource ?? serviceResource, name);
      if (!resource) {
        translation.note(
          at,
          `${key === 'tasks' ? 'task' : 'test'} ${String(entryName)} names no resource (nor does the module's serviceResource): Garden converts it to no action; not loaded`,
        );
        continue;
      }
      add(
        {
          ...base,
          kind,
          type: 'helm-pod',
          name: kind === 'Test' ? `${name}-${String(entryName)}` : entryName,
          ...(kind === 'Run' && description !== undefined ? { description } : {}),
          dependencies: [...new Set([...builds, ...runtime(dependencies)])],
          ...(timeout !== undefined ? { timeout } : {}),
          spec: {
            ...rest,
            ...(rest.env !== undefined ? { env: envStrings(rest.env) } : {}),
            resource,
            ...chartKeys,
          },
        },
        [
          ...chartMoves,
          [['spec', 'resource'], ownResource !== undefined ? [...at, 'resource'] : ['serviceResource']],
          [['spec'], at],
          [['name'], [...at, 'name']],
          [['dependencies'], [...at, 'dependencies']],
          [['timeout'], [...at, 'timeout']],
        ],
      );
    }
  }
}
