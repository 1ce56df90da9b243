/**
 * What real Garden projects (public repositories, not Garden's examples) do, reproduced small and
 * run into kube-sim: each case a shape a project had that tend did not run before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusCommand } from '../../../src/commands/status.js';
import { validateCommand } from '../../../src/commands/validate.js';
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { configMapData, execute, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterAll(removeProjects);

const project = (name: string, extra = '') => `apiVersion: garden.io/v2
kind: Project
name: ${name}
environments:
  - name: local
    defaultNamespace: ${name}
providers:
  - name: local-kubernetes
    context: kube-sim
    namespace: \${environment.namespace}
${extra}`;

const configMap = (name: string, data: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
data:
${data}`;

describe('real Garden projects, reproduced', () => {
  it("deploys into Garden's <project>-<defaultNamespace> (erauner12/homelab-garden); status and validate --json say both namespaces", async () => {
    const root = makeProject({
      'project.garden.yml': project('real-ns').replace('\n    namespace: ${environment.namespace}', ''),
      'garden.yml': `kind: Deploy\ntype: kubernetes\nname: app\nspec:\n  manifests:\n    - ${configMap(
        'app',
        '  a: "1"\n',
      )
        .split('\n')
        .join('\n      ')}\n`,
    });
    const validated = await validateCommand({ root, var: [] });
    expect([validated.data.namespace, validated.data.appNamespace]).toEqual(['real-ns', 'real-ns-real-ns']);
    expect((await execute('deploy', root)).data.actions.map((a) => [a.ref, a.state])).toEqual([
      ['deploy.app', 'ready'],
    ]);
    expect(await configMapData(h.kubeconfig, 'real-ns-real-ns', 'app')).toEqual({ a: '1' });
    const status = await statusCommand({ root });
    expect([status.data.namespace, status.data.appNamespace]).toEqual(['real-ns', 'real-ns-real-ns']);
  });

  it('an action run with --var: validate passes with a note at the line, the others run, and it runs when given the variable', async () => {
    // As jasoncolburne/kels writes its registry environments: `run propose --var node=…`.
    const withOther = (read: string) =>
      makeProject({
        'project.garden.yml': project('real-var-flag', 'variables:\n  registry: r1\n'),
        'garden.yml': `kind: Run
type: exec
name: propose
spec:
  command: [echo, "\${var.node}"]
---
kind: Run
type: exec
name: other
spec:
  command: [echo, "\${var.${read}}"]
`,
      });
    const typo = await validateCommand({ root: withOther('regsitry'), var: [] }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    // A misspelt declared variable stays an error: it is not one to pass.
    expect(typo?.message).toContain('did you mean "var.registry"?');

    const fixed = withOther('registry');
    const validated = await validateCommand({ root: fixed, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.notes).toContainEqual({
      message:
        'run.propose reads variable "node", which nothing declares: it runs only when given one (--var node=…)',
      file: 'garden.yml',
      line: 5,
      column: 19,
    });
    const other = await runTend(['run', 'other'], { cwd: fixed });
    expect(other.code, other.stderr).toBe(0);
    const without = await runTend(['run', 'propose'], { cwd: fixed });
    expect(without.code).toBe(2);
    expect(without.stderr).toContain('unknown variable "var.node"');
    const given = await runTend(['run', 'propose', '--var', 'node=n7', '--show-output'], { cwd: fixed });
    expect(given.code, given.stderr).toBe(0);
    expect(given.stdout).toContain('n7');
  });

  it('a provider kubeconfig with a NUL is refused by validate at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project('real-kubeconfig-nul', '').replace(
        '    context: kube-sim\n',
        '    context: kube-sim\n    kubeconfig: "cluster/a\\u0000b"\n',
      ),
    });
    await expect(validateCommand({ root, var: [] })).rejects.toMatchObject({
      code: 'TEND_CONFIG_INVALID',
      location: { file: 'project.garden.yml', line: 10 },
    });
  });

  it("the provider's kubeconfig is the cluster's, relative to the project root; --kubeconfig overrides it", async () => {
    // As erauner12/homelab-garden writes it. Ignored, its context would be looked up in another file.
    const root = makeProject({
      'project.garden.yml': project('real-kubeconfig', '').replace(
        '    context: kube-sim\n',
        '    context: kube-sim\n    kubeconfig: cluster/kubeconfig\n',
      ),
      'garden.yml': `kind: Deploy
type: kubernetes
name: app
spec:
  manifests:
    - { apiVersion: v1, kind: ConfigMap, metadata: { name: app }, data: { a: "1" } }
`,
    });
    mkdirSync(path.join(root, 'cluster'));
    copyFileSync(h.kubeconfig, path.join(root, 'cluster', 'kubeconfig'));
    const elsewhere = { KUBECONFIG: path.join(root, 'no-such-kubeconfig') };
    const deployed = await runTend(['deploy'], { cwd: path.join(root, 'cluster'), env: elsewhere });
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(await configMapData(h.kubeconfig, 'real-kubeconfig', 'app')).toEqual({ a: '1' });

    const overridden = await runTend(['status', '--kubeconfig', elsewhere.KUBECONFIG], { cwd: root });
    expect(overridden.code).not.toBe(0);
    expect(overridden.stderr).toContain('no-such-kubeconfig');
  });

  it("a variable's keys read their siblings, and an action's variable reading a Run's outputs makes it a dependency", async () => {
    // As jasoncolburne/kels writes them: `url` built from `user` and `port` of the same variable,
    // and a Deploy's variable reading a Run it does not list under dependencies.
    const root = makeProject({
      'project.garden.yml': project(
        'real-vars',
        `variables:
  postgres:
    user: admin
    port: 5432
    url: "postgres://\${var.postgres.user}@db:\${var.postgres.port}"
`,
      ),
      'garden.yml': `kind: Run
type: exec
name: read-urls
spec:
  command: [echo, "https://a.example https://b.example"]
---
kind: Deploy
type: kubernetes
name: app
variables:
  registryUrls: \${actions.run.read-urls.outputs.log}
spec:
  manifestTemplates: [manifests.yml.tpl]
`,
      'manifests.yml.tpl': configMap(
        'app',
        `  database: "\${var.postgres.url}"
  registries: "\${var.registryUrls}"
`,
      ),
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => [a.ref, a.dependencies])).toEqual([
      ['run.read-urls', []],
      ['deploy.app', ['run.read-urls']],
    ]);

    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['run.read-urls', 'ready', undefined],
      ['deploy.app', 'ready', undefined],
    ]);
    expect(await configMapData(h.kubeconfig, 'real-vars', 'app')).toEqual({
      database: 'postgres://admin@db:5432',
      registries: 'https://a.example https://b.example',
    });
  });

  it("a pod Run's result is cached unless cacheResult: false, as Garden's default has it", async () => {
    // As garden-io/garden-example-hasura's db-init: deployed twice, it ran twice.
    const root = makeProject({
      'project.garden.yml': project('real-cache'),
      'garden.yml': `kind: Run
type: container
name: db-init
spec:
  image: busybox:1.36
  command: [sh, -c, "echo init"]
---
kind: Run
type: kubernetes-pod
name: db-seed
spec:
  cacheResult: false
  podSpec:
    containers:
      - name: seed
        image: busybox:1.36
        command: [sh, -c, "echo seed"]
---
kind: Deploy
type: kubernetes
name: app
dependencies: [run.db-init, run.db-seed]
spec:
  manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: app }
      data: { ready: "yes" }
`,
    });
    const states = async () =>
      (await execute('deploy', root)).data.actions.map((a) => `${a.ref} ${a.state}`).sort();
    expect(await states()).toEqual(['deploy.app ready', 'run.db-init ready', 'run.db-seed ready']);
    expect(await states()).toEqual(['deploy.app cached', 'run.db-init cached', 'run.db-seed ready']);
  });

  it("Garden's kubernetes provider outputs: validate leaves them to deploy, which reads them", async () => {
    // As dmytri/monorepo-template reads the ingress's base hostname.
    const root = makeProject({
      'project.garden.yml': project('real-outputs', '    defaultHostname: apps.example.com\n'),
      'garden.yml': `kind: Deploy
type: kubernetes
name: app
variables:
  baseHostname: \${providers.local-kubernetes.outputs.default-hostname}
spec:
  manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: { name: app }
      data:
        host: api.\${var.baseHostname}
        namespace: \${providers.local-kubernetes.outputs.app-namespace}
`,
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.app', 'ready', undefined],
    ]);
    expect(await configMapData(h.kubeconfig, 'real-outputs', 'app')).toEqual({
      host: 'api.apps.example.com',
      namespace: 'real-outputs',
    });
  });

  it("the registry's port is in the image names; an include written ./file is that file, in the context", async () => {
    // As repayright/stack (a k3d registry: hostname and port) and dmytri/module-federation-garden
    // (`include: [./pnpm-lock.yaml]`, whose builds all failed on the ./).
    const [hostname, port] = h.sim.registryHost.split(':');
    const registry = (p: string) =>
      `    deploymentRegistry:\n      hostname: ${hostname}\n      port: ${p}\n      namespace: team\n`;
    const files = {
      'garden.yml': 'kind: Build\ntype: container\nname: app\ninclude: [./lock.txt, Dockerfile]\n',
      Dockerfile: 'FROM alpine\nCOPY lock.txt /\n',
      'lock.txt': 'locked\n',
      'left-out.txt': 'not in the context\n',
    };
    const root = makeProject({ 'project.garden.yml': project('real-port', registry(port!)), ...files });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const built = await execute('build', root);
    const [app] = built.data.actions;
    expect([app!.state, app!.error?.message]).toEqual(['ready', undefined]);
    expect(app!.outputs.deploymentImageId).toBe(`${h.sim.registryHost}/team/app:${app!.version}`);
    const manifest = JSON.parse(h.sim.registry.get('team/app', app!.version)!.body.toString()) as {
      annotations: Record<string, string>;
    };
    expect(manifest.annotations['dev.tend.kube-sim.files']).toBe('2');

    const bad = makeProject({ 'project.garden.yml': project('real-badport', registry('"abc"')), ...files });
    const refused = await runTend(['validate'], { cwd: bad });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'project.garden.yml:13:7: deploymentRegistry.port "abc" is not a port number (1 to 65535)',
    );
    // A namespace left a placeholder is said in words.
    const placeholder = makeProject({
      'project.garden.yml': project(
        'real-placeholder',
        registry(port!).replace('namespace: team', 'namespace: <GCP_PROJECT_ID>/repo'),
      ),
      ...files,
    });
    const unfilled = await runTend(['validate'], { cwd: placeholder });
    expect(unfilled.code).toBe(2);
    // A template is no placeholder: resolved with the rest (teehr-fved's `${project.name}`).
    const templated = makeProject({
      'project.garden.yml': project(
        'real-templated',
        registry(port!).replace('namespace: team', 'namespace: ${project.name}'),
      ),
      ...files,
    });
    expect((await runTend(['validate'], { cwd: templated })).code).toBe(0);
    expect(unfilled.stderr).toContain(
      'deploymentRegistry: expected a registry host and path, e.g. registry.example.com/shop: the path of ' +
        'lower-case letters, digits, ".", "_", "-" and "/" (a placeholder to fill in?), got',
    );
  });

  it("a 0.12 kubernetes module's files read the outputs of the module it builds on", async () => {
    // As Keyruu/randomplaydance: a CronJob's image named by `${modules.fetch.outputs.local-image-id}`.
    const root = makeProject({
      'project.garden.yml': project(
        'real-modfiles',
        `    deploymentRegistry:\n      hostname: ${h.sim.registryHost}\n      namespace: garden\n`,
      ),
      'fetch/Dockerfile': 'FROM alpine\n',
      'fetch/garden.yml': `kind: Module
type: container
name: fetch
`,
      'cronjob/garden.yml': `kind: Module
type: kubernetes
name: cronjob
build:
  dependencies: [fetch]
files: [k8s/images.yaml]
`,
      'cronjob/k8s/images.yaml': configMap(
        'images',
        `  local: harbor.example.com/garden/\${modules.fetch.outputs.local-image-id}
  deployment: \${modules.fetch.outputs.deployment-image-id}
`,
      ),
    });
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['build.fetch', 'ready', undefined],
      ['deploy.cronjob', 'ready', undefined],
    ]);
    const { version } = deployed.data.actions[0]!;
    expect(await configMapData(h.kubeconfig, 'real-modfiles', 'images')).toEqual({
      local: `harbor.example.com/garden/fetch:${version}`,
      deployment: `${h.sim.registryHost}/garden/fetch:${version}`,
    });
  });

  it('a templated file reading the outputs of an action its own does not depend on: validate says so at its line, deploy fails there', async () => {
    const root = makeProject({
      'project.garden.yml': project('real-nodep'),
      'garden.yml': `kind: Run
type: exec
name: read-urls
spec:
  command: [echo, "https://a.example"]
---
kind: Deploy
type: kubernetes
name: app
spec:
  manifestTemplates: [app.yml.tpl]
`,
      'app.yml.tpl': configMap('app', '  registries: "${actions.run.read-urls.outputs.log}"\n'),
    });
    const where = 'app.yml.tpl:6:16: ConfigMap app: "${actions.run.read-urls.outputs.log}": ';
    const validated = await validateCommand({ root, var: [] }).catch((error: unknown) => error);
    expect(String(validated).split('\n')[0]).toBe(
      where +
        'deploy.app does not depend on run.read-urls, so its outputs are not known when deploy.app runs; ' +
        'add run.read-urls to its dependencies',
    );
    const deployed = await execute('deploy', root, ['app']);
    const app = deployed.data.actions.find((a) => a.ref === 'deploy.app');
    // A template error of its file (it was an internal error).
    expect(app?.error).toMatchObject({
      code: 'TEND_TEMPLATE',
      message: expect.stringContaining(
        'ConfigMap app: "${actions.run.read-urls.outputs.log}": outputs of run.read-urls are not available',
      ),
    });
  });

  it('a manifestTemplates file reading a variable nothing declares: the same note as the spec, and the deploy needs --var (demokratie-live/democracy-development)', async () => {
    const root = makeProject({
      'project.garden.yml': project('real-var-file'),
      'garden.yml': `kind: Deploy
type: kubernetes
name: inline
spec:
  manifests:
    - { apiVersion: v1, kind: ConfigMap, metadata: { name: inline }, data: { key: "\${var.API_KEY}" } }
---
kind: Deploy
type: kubernetes
name: templated
spec:
  manifestTemplates: [cm.yaml]
`,
      'cm.yaml': configMap('templated', '  key: ${var.API_KEY}\n'),
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.notes).toContainEqual({
      message:
        'deploy.templated reads variable "API_KEY", which nothing declares: it runs only when given one (--var API_KEY=…)',
      file: 'cm.yaml',
      line: 6,
      column: 8,
    });
    // Without it, each fails when it runs, the file as the spec does: saying the variable to pass.
    const unknown = 'unknown variable "var.API_KEY"; available: (none); set it with --var API_KEY=<value>';
    await expect(execute('deploy', root, ['inline'])).rejects.toMatchObject({
      code: 'TEND_TEMPLATE',
      message: expect.stringContaining(unknown),
    });
    const without = await execute('deploy', root, ['templated']);
    expect(without.data.actions.find((a) => a.ref === 'deploy.templated')?.error).toMatchObject({
      code: 'TEND_TEMPLATE',
      message: expect.stringContaining(unknown),
    });
    await execute('deploy', root, ['templated'], { var: ['API_KEY=k1'] });
    expect(await configMapData(h.kubeconfig, 'real-var-file', 'templated')).toEqual({ key: 'k1' });
  });

  it('a problem in a templated file names an object whose name is a template by its name as written, marked so', async () => {
    const root = makeProject({
      'project.garden.yml': project('real-templated-name'),
      'garden.yml': `kind: Deploy
type: kubernetes
name: templated
variables:
  app-name: web
spec:
  manifestTemplates: [cm.yaml]
`,
      'cm.yaml': configMap('${var.app-name}', '  key: ${var.app-nmae}\n'),
    });
    await expect(validateCommand({ root, var: [] })).rejects.toMatchObject({
      message: expect.stringMatching(
        /^ConfigMap "\$\{var\.app-name\}" \(its name as written\): "\$\{var\.app-nmae\}"/,
      ),
      location: { file: 'cm.yaml', line: 6, column: 8 },
    });
  });
});
