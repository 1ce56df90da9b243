/**
 * Garden 0.12 `helm` modules converted to actions as Garden 0.13 converts them: a helm Deploy of
 * the chart, tasks and tests as helm-pod Runs and Tests in a pod like the module's
 * `serviceResource`, `${modules.…}` references as the actions the modules became.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v2
kind: Project
name: shop
environments:
  - name: local
providers:
  - name: local-kubernetes
    context: kind-kind
`;

const load = (root: string) => loadProjectConfig({ cwd: root, plugins: builtinPlugins() });

async function loadErrors(root: string): Promise<string[]> {
  try {
    await load(root);
  } catch (error) {
    const { errors } = (error as TendError).detail as {
      errors: { message: string; location: { file: string; line: number } }[];
    };
    return errors.map((e) => `${e.location.file}:${e.location.line}: ${e.message}`);
  }
  throw new Error('the load succeeded');
}

const webModules = `kind: Module
type: container
name: web-image
---
kind: Module
type: helm
name: web
chartPath: ./chart
serviceResource:
  containerModule: web-image
values:
  image:
    repository: \${modules.web-image.outputs.deployment-image-name}
    tag: \${modules.web-image.version}
tests:
  - name: smoke
    command: [sh, -c]
    args: [curl web]
    env: { RETRIES: 3 }
`;

describe('helm modules', () => {
  it("the module's namespace is its Deploy's and its tests' (the kubernetes plugin checks it names the environment's)", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'web/garden.yml': webModules.replace('chartPath: ./chart\n', 'chartPath: ./chart\nnamespace: web-ns\n'),
      'web/Dockerfile': 'FROM nginx\n',
      'web/chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
    });
    const loaded = await load(root);
    expect(loaded.actions.map((a) => [a.ref, (a.spec as { namespace?: string }).namespace])).toEqual([
      ['build.web-image', undefined],
      ['deploy.web', 'web-ns'],
      ['test.web-smoke', 'web-ns'],
    ]);
  });

  it('a local chart: a helm Deploy depending on the container module of serviceResource; tests are helm-pod Tests', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'web/garden.yml': webModules,
      'web/Dockerfile': 'FROM nginx\n',
      'web/chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
    });
    const loaded = await load(root);
    const chart = { path: './chart' };
    const values = {
      image: {
        repository: '${actions.build.web-image.outputs.deployment-image-name}',
        tag: '${actions.build.web-image.version}',
      },
    };
    expect(loaded.actions.map((a) => [a.ref, a.type, a.dependencies, a.spec])).toEqual([
      ['build.web-image', 'container', [], { dockerfile: 'Dockerfile' }],
      ['deploy.web', 'helm', ['build.web-image'], { chart, releaseName: 'web', values }],
      [
        'test.web-smoke',
        'helm-pod',
        [],
        {
          command: ['sh', '-c'],
          args: ['curl web'],
          env: { RETRIES: '3' },
          // Garden's default kind, and the module's name.
          resource: { kind: 'Deployment', name: 'web' },
          chart,
          releaseName: 'web',
          values,
        },
      ],
    ]);
    // Garden's include for a module with local chart sources: the chart's files.
    expect(loaded.actions.find((a) => a.ref === 'deploy.web')?.include).toEqual([
      'chart/*',
      'chart/charts/**/*',
      'chart/templates/**/*',
    ]);
  });

  it('a remote chart: name, repo and version; tasks are helm-pod Runs in the serviceResource, depending on services', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'postgres/garden.yml': `kind: Module
description: Postgres
type: helm
name: postgres
repo: https://charts.bitnami.com/bitnami
chart: postgresql
version: 12.1.2
releaseName: db
timeout: 600
serviceResource:
  kind: StatefulSet
  name: postgres
values:
  fullnameOverride: postgres
tasks:
  - name: db-init
    command: [/bin/sh, -c]
    args: ["psql -c 'CREATE TABLE votes'"]
    dependencies: [postgres]
    env:
      PGPASSWORD: postgres
  - name: db-clear
    description: empties the table
    command: [psql]
    resource: { kind: Deployment, name: other, containerName: main, containerModule: tools }
    cacheResult: false
`,
      'tools/garden.yml': 'kind: Module\ntype: container\nname: tools\n',
      'tools/Dockerfile': 'FROM alpine\n',
    });
    const loaded = await load(root);
    const chart = { name: 'postgresql', repo: 'https://charts.bitnami.com/bitnami', version: '12.1.2' };
    const chartKeys = { chart, releaseName: 'db', values: { fullnameOverride: 'postgres' } };
    const byRef = new Map(loaded.actions.map((a) => [a.ref, a]));
    // The container module of a task's resource is a build dependency of every action of the module.
    expect(byRef.get('deploy.postgres')).toMatchObject({
      type: 'helm',
      description: 'Postgres',
      dependencies: ['build.tools'],
      spec: chartKeys,
      include: ['*.yaml', '*.yml'],
    });
    expect(byRef.get('run.db-init')).toMatchObject({
      type: 'helm-pod',
      dependencies: ['build.tools', 'deploy.postgres'],
      spec: {
        ...chartKeys,
        command: ['/bin/sh', '-c'],
        env: { PGPASSWORD: 'postgres' },
        resource: { kind: 'StatefulSet', name: 'postgres' },
      },
    });
    expect(byRef.get('run.db-clear')).toMatchObject({
      description: 'empties the table',
      cacheResult: false,
      spec: { resource: { kind: 'Deployment', name: 'other', containerName: 'main' } },
    });
  });

  it('skipDeploy leaves the Deploy out; a task with no resource is noted and not loaded; base is refused at its line', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'charts/garden.yml': `kind: Module
type: helm
name: base-chart
skipDeploy: true
tasks:
  - name: lint
    command: [helm, lint]
`,
      'charts/Chart.yaml': 'apiVersion: v2\nname: base\nversion: 0.1.0\n',
    });
    const loaded = await load(root);
    expect(loaded.actions).toEqual([]);
    expect(
      loaded.notes.map((n) => `${n.location.file}:${n.location.line}:${n.location.column}: ${n.message}`),
    ).toEqual([
      "charts/garden.yml:6:5: task lint names no resource (nor does the module's serviceResource): Garden converts it to no action; not loaded",
    ]);

    const based = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': 'kind: Module\ntype: helm\nname: api\nbase: base-chart\n',
    });
    expect(await loadErrors(based)).toEqual(['api/garden.yml:4: base: there is no module base-chart']);
  });

  it("a module's variables and varfile are each of its actions'; modules.<name> and runtime.services.<name> read the actions they became", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': `kind: Module
type: exec
name: api
variables: { greeting: hello }
varfile: api.vars.yml
services:
  - name: api
    deployCommand: [echo, "\${var.greeting} \${var.who}", "\${runtime.services.db.outputs.x}", "\${modules.db.version}"]
`,
      'api/api.vars.yml': 'who: world\n',
      'db/garden.yml':
        'kind: Module\ntype: exec\nname: db\nbuild: { command: [make] }\nservices:\n  - name: db\n    deployCommand: [echo]\n',
    });
    const api = (await load(root)).actions.find((a) => a.ref === 'deploy.api')!;
    expect(api.spec).toEqual({
      command: [
        'sh',
        '-c',
        'echo ${var.greeting} ${var.who} ${actions.deploy.db.outputs.x} ${actions.build.db.version}',
      ],
      env: {},
    });
    expect(api.variableLayers).toEqual([{ greeting: 'hello' }, { who: 'world' }]);
  });

  it("a container module is built when its Dockerfile is among its files, as Garden's moduleHasDockerfile has it", async () => {
    const module = (name: string, keys: string) =>
      `kind: Module\ntype: container\nname: ${name}\nimage: nginx:1\n${keys}tests:\n  - name: t\n    args: [x]\n`;
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'a/garden.yml': module('dir-included', 'include: [.]\n'),
      'a/Dockerfile': 'FROM alpine\n',
      'b/garden.yml': module('nothing-included', 'include: []\n'),
      'b/Dockerfile': 'FROM alpine\n',
      'c/garden.yml': module('excluded', 'exclude: [Dockerfile]\n'),
      'c/Dockerfile': 'FROM alpine\n',
      'd/garden.yml': module('named', 'dockerfile: build/app.Dockerfile\n'),
    });
    const loaded = await load(root);
    expect(loaded.actions.map((a) => [a.ref, (a.spec as { image?: string }).image])).toEqual([
      ['build.dir-included', undefined],
      ['test.dir-included-t', '${actions.build.dir-included.outputs.deploymentImageId}'],
      ['test.nothing-included-t', 'nginx:1'],
      ['test.excluded-t', 'nginx:1'],
      ['build.named', undefined],
      ['test.named-t', '${actions.build.named.outputs.deploymentImageId}'],
    ]);
  });

  it('modules.<helm module>.outputs.release-name is its release name, written in (TakeoffTech/netbox-gcp-deployment); its version is the error at its line', async () => {
    const app = (reads: string) => `kind: Module
type: kubernetes
name: app
manifests:
  - apiVersion: v1
    kind: ConfigMap
    metadata: { name: app }
    data: { db: "${reads}" }
`;
    const helm = (name: string, keys = '') =>
      `kind: Module\ntype: helm\nname: ${name}\nchartPath: chart\n${keys}`;
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'db/garden.yml': helm('db', 'releaseName: my-db\n'),
      'db/chart/Chart.yaml': 'apiVersion: v2\nname: db\nversion: 0.1.0\n',
      'cache/garden.yml': helm('cache'),
      'cache/chart/Chart.yaml': 'apiVersion: v2\nname: cache\nversion: 0.1.0\n',
      'app/garden.yml': app('${modules.db.outputs.release-name}+${modules.cache.outputs.release-name}'),
    });
    const deploy = (await load(root)).actions.find((a) => a.ref === 'deploy.app')!;
    // Written in as string literals, resolved with the rest of the spec.
    expect((deploy.spec as { manifests: { data: unknown }[] }).manifests[0]!.data).toEqual({
      db: '${"my-db"}+${"cache"}',
    });
    expect(deploy.dependencies).toEqual([]);

    const version = makeProject({
      'project.garden.yml': gardenProject,
      'db/garden.yml': helm('db'),
      'db/chart/Chart.yaml': 'apiVersion: v2\nname: db\nversion: 0.1.0\n',
      'app/garden.yml': app('${modules.db.version}'),
    });
    expect(await loadErrors(version)).toEqual([
      'app/garden.yml:8: "modules.db.version": module db has no Build (a helm module deploys its chart); ' +
        'tend gives modules.db.outputs.release-name (its release name)',
    ]);
  });

  it("a module's var (modules.<name>.var.<key>) is not supported, of a helm module as of any: the error says to read the variable itself", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'db/garden.yml': 'kind: Module\ntype: helm\nname: db\nchartPath: chart\nvariables:\n  api_token: abc\n',
      'db/chart/Chart.yaml': 'apiVersion: v2\nname: db\nversion: 0.1.0\n',
      'tool/garden.yml':
        'kind: Module\ntype: exec\nname: tool\nbuild:\n  command: [make]\nvariables:\n  x: y\n',
      'app/garden.yml': `kind: Module
type: exec
name: app
tasks:
  - name: show
    command: [echo, "\${modules.db.var.api_token}"]
  - name: other
    command: [echo, "\${modules.tool.var.x}"]
`,
    });
    const notSupported = (module: string, key: string) =>
      `"modules.${module}.var.${key}": a module's variables (modules.${module}.var) are not supported by tend; ` +
      `read the variable itself, \${var.${key}}, declared in the project's variables or the reading module's`;
    expect(await loadErrors(root)).toEqual([
      `app/garden.yml:6: ${notSupported('db', 'api_token')}`,
      `app/garden.yml:8: ${notSupported('tool', 'x')}`,
    ]);
  });
});
