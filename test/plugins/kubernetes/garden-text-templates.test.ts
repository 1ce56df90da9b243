/**
 * Manifest templates resolved as Garden resolves them, in the file's text before the YAML is
 * parsed: Garden's k8s-deploy-shared-manifests (`env: ${jsonEncode(var.env)}`, copied unmodified
 * into test/fixtures/garden-examples) validates, deploys with `--kubeconfig/--context` and passes
 * its Tests and Runs; a shell script deploys as written from `manifestFiles`; and `tend validate`
 * finds what in a templated file is not a template expression, at its file:line and object.
 */

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { copyGardenExample, makeProject, removeProjects, runTend } from '../../helpers/project.js';
import {
  configMapData,
  execute,
  kubectlJson,
  projectYaml,
  gardenDatabaseWait,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  // Garden's local-kubernetes projects name no registry: kube-sim advertises its own, as kind does.
  h = await startSim({ advertiseRegistry: true, podRules: [gardenDatabaseWait] });
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

afterAll(removeProjects);

const cluster = () => ['--kubeconfig', h.kubeconfig, '--context', 'kube-sim'];

/** `tend <verb>` in the project's directory through the CLI: the actions and their states. */
async function cli(root: string, verb: string, ...names: string[]): Promise<string[]> {
  const run = await runTend([verb, ...names, ...cluster(), '--json'], { cwd: root, timeoutMs: 120_000 });
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  const { actions } = JSON.parse(run.stdout) as { actions: { ref: string; state: string }[] };
  return actions.map((a) => `${a.ref} ${a.state}`).sort();
}

interface Container {
  name: string;
  image: string;
  args: string[];
  env: { name: string; value: string }[];
  ports: { name: string; containerPort: number; protocol: string }[];
  resources: Record<string, Record<string, string>>;
  livenessProbe: { httpGet: { path: string; port: number; scheme: string } };
}
interface Deployment {
  metadata: { name: string };
  spec: { template: { spec: { imagePullSecrets: { name: string }[]; containers: Container[] } } };
}

/** A kubernetes Deploy whose manifests under k8s/ are templated. */
const templatedJobs =
  'kind: Deploy\ntype: kubernetes\nname: jobs\nspec:\n  manifestTemplates: [k8s/*.yaml]\n';

describe('manifest templates, templated as text', () => {
  it('k8s-deploy-shared-manifests: validates, deploys its shared templates for api and web, and its Tests and Runs pass', async () => {
    const root = copyGardenExample('k8s-deploy-shared-manifests');
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain('configuration valid: 11 actions');
    // The local-kubernetes provider's `namespace:` in project.garden.yml.
    const namespace = 'k8s-deploy-shared-manifests';

    expect(await cli(root, 'deploy')).toEqual([
      'build.api ready',
      'build.web ready',
      'deploy.api ready',
      'deploy.postgres ready',
      'deploy.web ready',
      'run.db-init ready',
    ]);
    const deployments = (
      await kubectlJson<{ items: Deployment[] }>(h.kubeconfig, '-n', namespace, 'get', 'deployments')
    ).items;
    const byName = Object.fromEntries(deployments.map((d) => [d.metadata.name, d.spec.template.spec]));
    expect(Object.keys(byName).sort()).toEqual(['api', 'postgres', 'web']);
    const api = byName.api!.containers[0]!;
    // `${jsonEncode(var.…)}` written into the text: YAML reads the JSON as the lists and mappings.
    expect(api.args).toEqual(['python', 'app.py']);
    expect(api.env).toEqual([
      { name: 'PGDATABASE', value: 'postgres' },
      { name: 'PGUSER', value: 'postgres' },
      { name: 'PGPASSWORD', value: 'postgres' },
    ]);
    expect(api.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(api.resources).toEqual({
      limits: { cpu: '1', memory: '1Gi' },
      requests: { cpu: '10m', memory: '90Mi' },
    });
    expect(api.livenessProbe.httpGet).toEqual({ path: '/health', port: 8080, scheme: 'HTTP' });
    // `${actions.build[var.appName].outputs.deployment-image-id}`: each Deploy its own build's image.
    expect(api.image).toMatch(new RegExp(`^${h.sim.registryHost}/.*api:`));
    expect(byName.api!.imagePullSecrets).toEqual([{ name: 'fake-secret' }]);
    const web = byName.web!.containers[0]!;
    expect(web.image).toMatch(new RegExp(`^${h.sim.registryHost}/.*web:`));
    expect(web.env).toEqual([{ name: 'HOSTNAME', value: 'local.demo.garden' }]);
    expect(web.args).toEqual(['npm', 'run', 'serve']);
    const ingresses = (
      await kubectlJson<{ items: { metadata: { name: string }; spec: { rules: { host: string }[] } }[] }>(
        h.kubeconfig,
        '-n',
        namespace,
        'get',
        'ingresses',
      )
    ).items;
    expect(ingresses.map((i) => `${i.metadata.name} ${i.spec.rules[0]!.host}`)).toEqual([
      'web web.local.demo.garden',
    ]);

    expect(await cli(root, 'test')).toEqual(
      expect.arrayContaining(['test.api-unit ready', 'test.e2e-runner ready', 'test.web-unit ready']),
    );
    expect(await cli(root, 'run', 'db-clear')).toContain('run.db-clear ready');
    // Deployed once, templates and all: the same version again is cached.
    expect(await cli(root, 'deploy', 'api', 'web')).toEqual(
      expect.arrayContaining(['deploy.api cached', 'deploy.web cached']),
    );
  }, 240_000);

  const script = `#!/bin/sh
echo "${'$'}{HOME}"
exit ${'$'}{BACKUP_EXIT:-0}
`;
  const configMap = (name: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
data:
  backup.sh: |
${script
  .split('\n')
  .filter(Boolean)
  .map((line) => `    ${line}`)
  .join('\n')}
`;

  it('a shell script in a ConfigMap from manifestFiles deploys as written', async () => {
    const namespace = 'gtt-as-written';
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
      'jobs/jobs.tend.yml':
        'kind: Deploy\ntype: kubernetes\nname: jobs\nspec:\n  manifestFiles: [k8s/backup.yaml]\n  timeout: 20\n',
      'jobs/k8s/backup.yaml': configMap('backup'),
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const result = await execute('deploy', root);
    expect(result.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.jobs', 'ready', undefined],
    ]);
    const data = await configMapData(h.kubeconfig, namespace, 'backup');
    expect(data['backup.sh']).toBe(script);
  });

  it("a kubernetes module's generateFiles: the files it names are read from their sources, templated or (resolveTemplates: false) as written", async () => {
    const namespace = 'gtt-generated';
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
      // As JoshDrake/minted-k8s-module-outputs-bug has it: `files` names what generateFiles writes.
      'jobs/garden.yml': `kind: Module
type: kubernetes
name: jobs
files: [.manifests.yml, ./scripts.yml]
generateFiles:
  - sourcePath: manifests.yml
    targetPath: .manifests.yml
  - sourcePath: scripts.src.yml
    targetPath: scripts.yml
    resolveTemplates: false
`,
      'jobs/manifests.yml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: settings }\ndata: { env: "${environment.name}" }\n',
      'jobs/scripts.src.yml': configMap('backup'),
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const result = await execute('deploy', root);
    expect(result.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.jobs', 'ready', undefined],
    ]);
    const read = (name: string) => configMapData(h.kubeconfig, namespace, name);
    expect(await read('settings')).toEqual({ env: 'dev' });
    expect((await read('backup'))['backup.sh']).toBe(script);
  });

  it('generateFiles tend cannot read from a source is the error at its line: an inline value, a file no `files` names, another module type', async () => {
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost }),
      'jobs/garden.yml': `kind: Module
type: kubernetes
name: jobs
files: [a.yml]
generateFiles:
  - targetPath: a.yml
    value: "kind: ConfigMap"
  - sourcePath: b.src.yml
    targetPath: b.yml
---
kind: Module
type: exec
name: tool
generateFiles:
  - sourcePath: run.src.sh
    targetPath: run.sh
`,
    });
    const error = await validateCommand({ root, var: [] }).then(
      () => undefined,
      (e: unknown) => e as TendError,
    );
    const errors = (error?.detail as { errors: { message: string; location: { line: number } }[] }).errors;
    expect(errors.map((e) => [e.location.line, e.message])).toEqual([
      [
        6,
        'generateFiles: an inline value is not written by tend; put it in a file the module names under files',
      ],
      [
        8,
        "generateFiles: b.yml is not one of the module's files, and tend writes no generated file; name it under files",
      ],
      [
        14,
        "generateFiles is not supported by tend yet for a module of type exec (only for a kubernetes module's files)",
      ],
    ]);
  });

  it('validate finds, in a templated file, what is not a template expression: file:line, object, the way out', async () => {
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'gtt-bad' }),
      'jobs/jobs.tend.yml': templatedJobs,
      'jobs/k8s/a-service.yaml':
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  ports: ${jsonEncode(local.ports)}\n',
      'jobs/k8s/backup.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: other\n---\n${configMap('backup')}`,
    });
    const error = (await validateCommand({ root, var: [] }).catch((e: unknown) => e)) as TendError;
    const { errors } = error.detail as {
      errors: { code: string; message: string; location: { file: string; line: number } }[];
    };
    expect(errors.map((e) => `${e.code} ${e.location.file}:${e.location.line}`)).toEqual([
      'TEND_TEMPLATE jobs/k8s/a-service.yaml:6',
      'TEND_TEMPLATE jobs/k8s/backup.yaml:13',
      'TEND_TEMPLATE jobs/k8s/backup.yaml:14',
    ]);
    const [ports, home, exit] = errors.map((e) => e.message);
    expect(ports).toMatch(/^Service api: "\$\{jsonEncode\(local\.ports\)\}": .*ports/);
    expect(home).toMatch(/^ConfigMap backup: "\$\{HOME\}": unknown key "HOME"/);
    expect(exit).toMatch(/^ConfigMap backup: invalid template expression "\$\{BACKUP_EXIT:-0\}"/);
    for (const message of [ports, home, exit]) {
      expect(message).toContain(
        'list the file under `manifestFiles` to apply it as written, or write `$${` for a literal `${`',
      );
    }
  });

  it("a Garden v1 project's `files`: what names no key is kept as written, as Garden 0.13 does, and noted; manifestTemplates and v2 stay strict", async () => {
    const garden = (apiVersion: string, key: string) =>
      makeProject({
        'project.garden.yml': `apiVersion: garden.io/${apiVersion}
kind: Project
name: files-partial
environments: [{ name: local, defaultNamespace: gtt-partial-${apiVersion}-${key.length} }]
providers: [{ name: local-kubernetes, context: kube-sim, namespace: "\${environment.namespace}" }]
variables: { greeting: hi }
---
kind: Deploy
type: kubernetes
name: app
spec:
  ${key}: [cm.yaml]
`,
        'cm.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  # namespace: \${env.namespace}
data:
  project: \${project.name}
  greeting: "\${var.greeting} \${var.nope}"
  script: echo "\${HOME}"
`,
      });
    const root = garden('v1', 'files');
    const valid = await runTend(['validate', ...cluster()], { cwd: root });
    expect(valid.code, valid.stderr).toBe(0);
    const kept = valid.stdout + valid.stderr;
    for (const [line, expression] of [
      [5, '${env.namespace}'],
      [8, '${var.nope}'],
      [9, '${HOME}'],
    ] as const) {
      expect(kept).toContain(`cm.yaml:${line}:`);
      expect(kept).toContain(`"${expression}" kept as written: Garden 0.13 keeps what names no key`);
    }
    const deploy = await runTend(['deploy', ...cluster()], { cwd: root, timeoutMs: 120_000 });
    expect(deploy.code, deploy.stderr).toBe(0);
    const data = await configMapData(h.kubeconfig, 'gtt-partial-v1-5', 'app');
    expect(data).toEqual({ project: 'files-partial', greeting: 'hi ${var.nope}', script: 'echo "${HOME}"' });
    // manifestTemplates, and a v2 project's files, are strict: the same file is two errors (the
    // variable nothing declares is one to pass with --var: a note, as in the spec).
    for (const strict of [garden('v1', 'manifestTemplates'), garden('v2', 'files')]) {
      const refused = await runTend(['validate', ...cluster()], { cwd: strict });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('(2 configuration errors)');
      expect(refused.stderr).not.toContain('var.nope');
    }
  });

  it("validate lists the problems file by file, each file's by line", async () => {
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace: 'gtt-order' }),
      'jobs/jobs.tend.yml': templatedJobs,
      'jobs/k8s/a.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  one: "1"\n  two: "2"\n  late: ${local.none}\n',
      'jobs/k8s/b.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${local.nothing}\n',
    });
    const error = (await validateCommand({ root, var: [] }).catch((e: unknown) => e)) as TendError;
    const { errors } = error.detail as { errors: { location: { file: string; line: number } }[] };
    // a.yaml's problem is further down its file than b.yaml's: listed first all the same.
    expect(errors.map((e) => `${e.location.file}:${e.location.line}`)).toEqual([
      'jobs/k8s/a.yaml:8',
      'jobs/k8s/b.yaml:4',
    ]);
  });

  it('a templated file: $${ is a literal, inside text a list is joined and a mapping written as JSON', async () => {
    const namespace = 'gtt-values';
    const root = makeProject({
      'tend.yml': projectYaml({
        registry: h.sim.registryHost,
        namespace,
        projectExtra: 'variables:\n  hosts: [a.example, b.example]\n  limits: { cpu: "1" }\n',
      }),
      'jobs/jobs.tend.yml':
        'kind: Deploy\ntype: kubernetes\nname: jobs\nspec:\n  manifestTemplates: [k8s/values.yaml]\n  timeout: 20\n',
      'jobs/k8s/values.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: values
data:
  hosts: "\${var.hosts}"
  limits: '\${var.limits}'
  shell: echo $\${HOME}
  namespace: \${environment.namespace}
`,
    });
    expect((await execute('deploy', root)).data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['deploy.jobs', 'ready'],
    ]);
    const data = await configMapData(h.kubeconfig, namespace, 'values');
    expect(data).toEqual({
      hosts: 'a.example,b.example',
      limits: '{"cpu":"1"}',
      shell: 'echo ${HOME}',
      namespace,
    });
  });
});

describe("an image-only 0.12 container module's outputs in a templated file", () => {
  it("are its image names, as Garden's module outputs, with no dependency; its tag is an error at its line", async () => {
    const namespace = 'gtt-image-only';
    const files = {
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
      'cache/garden.yml':
        'kind: Module\ntype: container\nname: cache\nimage: registry.example.com:5000/cache/redis:6.2\n',
      'jobs/garden.yml': 'kind: Module\ntype: kubernetes\nname: jobs\nfiles: [images.yaml]\n',
      'jobs/images.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: images
data:
  id: \${modules.cache.outputs.deployment-image-id}
  name: \${modules.cache.outputs.deployment-image-name}
  local: \${modules.cache.outputs.local-image-name}
`,
    };
    const root = makeProject(files);
    const { data: validated } = await validateCommand({ root, var: [] });
    // The module has no Build and no service: nothing to depend on.
    expect(validated.actions.map((a) => `${a.ref}: ${a.dependencies.join(', ')}`)).toEqual(['deploy.jobs: ']);
    const result = await execute('deploy', root, ['jobs']);
    expect(result.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.jobs', 'ready', undefined],
    ]);
    const data = await configMapData(h.kubeconfig, namespace, 'images');
    expect(data).toEqual({
      id: 'registry.example.com:5000/cache/redis:6.2',
      name: 'registry.example.com:5000/cache/redis',
      local: 'registry.example.com:5000/cache/redis',
    });

    const tagged = makeProject({
      ...files,
      'jobs/images.yaml': `${files['jobs/images.yaml']}  tag: \${modules.cache.outputs.deployment-image-tag}\n`,
    });
    let error: TendError | undefined;
    await validateCommand({ root: tagged, var: [] }).catch(
      (caught: unknown) => (error = caught as TendError),
    );
    expect(error?.location).toMatchObject({ file: 'jobs/images.yaml', line: 9, column: 8 });
    expect(error?.message).toContain(
      'ConfigMap images: "${modules.cache.outputs.deployment-image-tag}": module cache has ' +
        'no Build (a container module without a Dockerfile deploys its image as it is); tend gives ' +
        'modules.cache.outputs.<local-image-name|local-image-id|deployment-image-name|deployment-image-id> (its ' +
        "image names), where Garden computes the rest from the module's version",
    );
  });
});

describe("a rendered Deploy's templated file", () => {
  it("reads its RenderTemplate's inputs, parent and template, as its spec does", async () => {
    const namespace = 'gtt-rendered';
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: rendered
environments:
  - name: local
    defaultNamespace: ${namespace}
providers:
  - name: local-kubernetes
    context: kube-sim
    namespace: \${environment.namespace}
---
kind: ConfigTemplate
name: greeter
inputsSchemaPath: schema.json
configs:
  - kind: Deploy
    type: kubernetes
    name: \${parent.name}
    spec:
      manifestTemplates: [cm.yaml]
---
kind: RenderTemplate
template: greeter
name: hello
inputs:
  greeting: hi
`,
      'schema.json': '{"type":"object","properties":{"greeting":{"type":"string"}}}',
      'cm.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${parent.name}\ndata:\n  greeting: ${inputs.greeting}\n  template: ${template.name}\n',
    });
    expect(await cli(root, 'deploy')).toEqual(['deploy.hello ready']);
    const data = await configMapData(h.kubeconfig, namespace, 'hello');
    expect(data).toEqual({ greeting: 'hi', template: 'greeter' });
  });
});

describe("a dependency's version and outputs in a templated file", () => {
  it('are the versions tend reports, in the manifest applied; a changed Build makes a new Deploy version with the new one', async () => {
    const namespace = 'gtt-versions';
    const files = (command: string) => ({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace, providerExtra: '  - name: exec\n' }),
      'app.tend.yml': `kind: Build
type: exec
name: prep
spec:
  command: [echo, ${command}]
---
kind: Deploy
type: kubernetes
name: web
dependencies: [build.prep]
spec:
  manifestTemplates: [cm.yaml]
  timeout: 20
`,
      'cm.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  version: \${actions.build.prep.version}
  said: "\${actions.build.prep.outputs.log}"
`,
    });
    const applied = () => configMapData(h.kubeconfig, namespace, 'web');
    const root = makeProject(files('first'));
    const first = await execute('deploy', root);
    const version = (ref: string) => first.data.actions.find((a) => a.ref === ref)!.version;
    expect(first.data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['build.prep', 'ready'],
      ['deploy.web', 'ready'],
    ]);
    expect(await applied()).toEqual({ version: version('build.prep'), said: 'first' });
    // tend validate checks the file with no version known yet, and passes.
    expect((await runTend(['validate', ...cluster()], { cwd: root })).code).toBe(0);

    // Another Build command: another Build version, hence another Deploy version, applied.
    writeFileSync(path.join(root, 'app.tend.yml'), files('second')['app.tend.yml']);
    const second = await execute('deploy', root);
    const after = (ref: string) => second.data.actions.find((a) => a.ref === ref)!;
    expect(after('deploy.web').state).toBe('ready');
    expect(after('build.prep').version).not.toBe(version('build.prep'));
    expect(after('deploy.web').version).not.toBe(version('deploy.web'));
    expect(await applied()).toEqual({ version: after('build.prep').version, said: 'second' });
  });
});

describe('action variables that read action outputs, resolved when the action runs', () => {
  it('vote-helm: validates as it is; deploying a helm Deploy without helm says TEND_TOOL_NOT_FOUND naming helm', async () => {
    const root = copyGardenExample('vote-helm');
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.find((a) => a.ref === 'deploy.api')?.dependencies).toEqual([
      'build.api-image',
      'deploy.redis',
    ]);
    const deployed = await execute('deploy', root, ['api']);
    expect(deployed.exitCode).toBe(2);
    // The helm Deploys it needs first fail for want of helm; deploy.api waits for them.
    const failed = deployed.data.actions.filter((a) => a.state === 'failed');
    expect(failed.map((a) => a.ref)).toContain('deploy.redis');
    for (const action of failed) {
      expect(action.error).toMatchObject({
        code: 'TEND_TOOL_NOT_FOUND',
        message: expect.stringMatching(/helm is not on PATH/),
      });
    }
    expect(deployed.data.actions.find((a) => a.ref === 'deploy.api')?.state).toBe('aborted');
  }, 120_000);

  it("an action's variable holding a build's output is resolved in its spec when the Deploy runs", async () => {
    const namespace = 'gtt-lazy';
    const root = makeProject({
      'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
      'api/Dockerfile': 'FROM alpine\n',
      'api/api.tend.yml': `kind: Build
type: container
name: api
---
kind: Deploy
type: kubernetes
name: api
dependencies: [build.api]
variables:
  image: \${actions.build.api.outputs.deploymentImageId}
spec:
  timeout: 20
  manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: api-image }
      data: { image: "\${var.image}", tagged: "image \${var.image}" }
`,
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['build.api', 'ready', undefined],
      ['deploy.api', 'ready', undefined],
    ]);
    const data = await configMapData(h.kubeconfig, namespace, 'api-image');
    expect(data.image).toMatch(new RegExp(`^${h.sim.registryHost}/.+/api:`));
    expect(data.tagged).toBe(`image ${data.image}`);
  });
});
