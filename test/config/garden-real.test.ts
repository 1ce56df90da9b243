/**
 * What real Garden projects (public repositories, not Garden's examples) write and tend reads:
 * each case a minimal reproduction of a project's shape, checked against what Garden does with it.
 */
import { userInfo } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import { validateCommand } from '../../src/commands/validate.js';
import { providersOf } from '../../src/config/environment.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterEach(removeProjects);

const load = (root: string) => loadProjectConfig({ cwd: root, plugins: builtinPlugins() });

/** The problems a rejected load or validate lists, each as `code file:line message`. */
async function problemLines(work: Promise<unknown>): Promise<string[]> {
  const error = await work.then(
    () => undefined,
    (caught: TendError) => caught,
  );
  const errors = (error?.detail?.errors ?? []) as {
    code: string;
    message: string;
    location: { file: string; line: number };
  }[];
  return errors.map((e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message}`);
}

const execRun = `kind: Run
type: exec
name: hello
spec:
  command: [echo, hello]
`;

describe("Garden 0.12's environments[].providers", () => {
  it("is each environment's providers, merged over the project's entries as Garden merges them", async () => {
    const root = makeProject({
      'garden.yml': `kind: Project
name: vote
defaultEnvironment: remote
providers:
  - name: local-kubernetes
    context: shared
    defaultHostname: shared.example.com
environments:
  - name: local
    providers:
      - name: local-kubernetes
        defaultHostname: vote.local.app.garden
  - name: remote
    providers:
      - name: kubernetes
        context: gke-demo
        buildMode: cluster-docker
        setupIngressController: nginx
  - name: plain
`,
      'hello/garden.yml': execRun,
    });
    const { project, notes } = await load(root);
    const kubernetes = (env: string) =>
      providersOf(project, env)
        .filter((p) => p.name === 'kubernetes')
        .map((p) => p.config);
    expect(kubernetes('local')).toEqual([{ context: 'shared', defaultHostname: 'vote.local.app.garden' }]);
    // kubernetes is another Garden provider than local-kubernetes: the environment's entry alone.
    expect(kubernetes('remote')).toEqual([{ context: 'gke-demo', buildMode: 'cluster-buildkit' }]);
    expect(kubernetes('plain')).toEqual([{ context: 'shared', defaultHostname: 'shared.example.com' }]);
    expect(providersOf(project, 'remote').map((p) => p.name)).toEqual(['kubernetes', 'exec']);
    // Notes point at the environment's entry, as written.
    expect(notes.map((n) => `${n.location.file}:${n.location.line} ${n.message.split(':')[0]}`)).toEqual([
      'garden.yml:18 setupIngressController',
      'garden.yml:17 buildMode cluster-docker (Garden 0.12)',
    ]);
  });
});

describe("Garden's local-kubernetes defaultHostname", () => {
  it('is <project>.local.demo.garden when the entry sets none, as Garden makes it; a kubernetes entry has none', async () => {
    const root = makeProject({
      'garden.yml': `kind: Project
name: shop
environments: [{ name: local }, { name: remote }, { name: own }]
providers:
  - name: local-kubernetes
    environments: [local]
  - name: kubernetes
    environments: [remote]
    context: gke
  - name: local-kubernetes
    environments: [own]
    defaultHostname: apps.example.test
`,
      'hello/garden.yml': execRun,
    });
    const { project } = await load(root);
    const hostname = (env: string) =>
      providersOf(project, env).find((p) => p.name === 'kubernetes')?.config.defaultHostname;
    expect([hostname('local'), hostname('remote'), hostname('own')]).toEqual([
      'shop.local.demo.garden',
      undefined,
      'apps.example.test',
    ]);
  });
});

describe('an exec command that runs the garden CLI', () => {
  it('gets a note at its command (validate passes); a command that only says garden does not', async () => {
    const root = makeProject({
      'project.garden.yml':
        'apiVersion: garden.io/v1\nkind: Project\nname: lib\nenvironments: [{ name: local }]\n',
      'lib/garden.yml': `kind: Module
type: exec
name: build-lib
build:
  command:
    - /bin/sh
    - -c
    - |-
      echo "prepare artifacts..."
      garden --env local run task build-lib-artifacts
---
kind: Run
type: exec
name: party
spec:
  command: [sh, -c, "echo garden party && echo the garden is green"]
`,
    });
    const { data, exitCode } = await validateCommand({ root, var: [] });
    expect(exitCode).toBe(0);
    expect(
      data.notes?.filter((n) => n.message.includes('garden CLI')).map((n) => `${n.file}:${n.line}`),
    ).toEqual(['lib/garden.yml:5']);
  });
});

describe("a variable's keys read their siblings, as Garden resolves them key by key", () => {
  it('resolves only the key read, across layers; a key that reads itself is a cycle when read', async () => {
    const root = makeProject({
      'project.garden.yml': `kind: Project
name: kels
environments:
  - name: local
    variables:
      postgres:
        host: db.local
providers:
  - name: local-kubernetes
variables:
  postgres:
    user: admin
    host: db
    url: "postgres://\${var.postgres.user}@\${var.postgres.host}"
    loop: "\${var.postgres.loop}"
`,
      'hello/garden.yml': `kind: Run
type: exec
name: hello
spec:
  command: [echo, "\${var.postgres.url}"]
`,
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    const { project } = await load(root);
    expect(project.name).toBe('kels');
    const looping = makeProject({
      'project.garden.yml': `kind: Project
name: kels
environments:
  - name: local
providers:
  - name: local-kubernetes
variables:
  postgres:
    loop: "\${var.postgres.loop}"
`,
      'hello/garden.yml': `kind: Run
type: exec
name: hello
spec:
  command: [echo, "\${var.postgres.loop}"]
`,
    });
    await expect(validateCommand({ root: looping, var: [] })).rejects.toThrow(
      /variables refer to each other in a cycle: var\.postgres\.loop → var\.postgres\.loop;/,
    );
  });
});

describe('a 0.12 module whose files are in another repository (repositoryUrl)', () => {
  it('is one error saying what to do, and what reads its actions or the module (`${modules.<name>…}`) is no further error', async () => {
    // As AlpacaLabs/garden: image modules from other repositories, services of this one using them.
    const root = makeProject({
      'garden.yml': `kind: Project
name: alpaca
environments:
  - name: local
providers:
  - name: local-kubernetes
`,
      'api-image/garden.yml': `kind: Module
type: container
name: api-image
repositoryUrl: https://github.com/example/api.git#main
services:
  - name: api-image
tests:
  - name: unit
    args: [go, test]
`,
      'api/garden.yml': `kind: Deploy
type: container
name: api
dependencies: [build.api-image, deploy.api-image, test.api-image-unit]
spec:
  image: \${actions.build.api-image.outputs.deploymentImageId}
`,
      // A 0.12 module reading the image module, which names no image (its Dockerfile is in the other repository).
      'chart/garden.yml': `kind: Module
type: helm
name: chart
chart: stable/nginx
values: { image: "\${modules.api-image.outputs.deployment-image-name}:\${modules.api-image.version}" }
`,
    });
    expect(await problemLines(load(root))).toEqual([
      'TEND_CONFIG_UNSUPPORTED api-image/garden.yml:4 repositoryUrl of a module is not supported by tend yet: clone the repository into the project (beside this garden.yml) and remove repositoryUrl',
    ]);
  });
});

describe('an environment whose providers leave out an action type (garden-io/quickstart-example --env no-k8s)', () => {
  it("is validate's error at the action's type, naming the entries and their environments; the other environment validates", async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: quick
environments:
  - name: local
  - name: no-k8s
providers:
  - name: local-kubernetes
    environments: [local]
`,
      'api/garden.yml': `kind: Build
type: container
name: api
---
kind: Deploy
type: container
name: api
build: api
spec: { image: nginx }
---
kind: Test
type: container
name: api-unit
spec: { image: busybox, args: [echo, ok] }
---
${execRun}`,
      'api/Dockerfile': 'FROM nginx\n',
    });
    expect((await validateCommand({ root, var: [], env: 'local' })).exitCode).toBe(0);
    const entry = 'project.garden.yml:8:5 for local';
    // Each as written: the Test is tend's kubernetes-pod, its line says container.
    expect(await problemLines(validateCommand({ root, var: [], env: 'no-k8s' }))).toEqual(
      [2, 6, 12].map(
        (line) =>
          `TEND_PROVIDER_NOT_FOUND api/garden.yml:${line} action type "container" comes from provider "kubernetes", ` +
          `which environment "no-k8s" does not use: its entries are limited to other environments (${entry}); ` +
          'add this environment to one, or limit the action with environments:',
      ),
    );
  });
});

describe('a 0.12 module whose type comes from a provider the environment does not use', () => {
  const project = `kind: Project
name: modules
environments: [{ name: local }, { name: remote }]
providers:
  - name: local-kubernetes
    environments: [local]
`;
  const module = (extra = '') => `kind: Module
type: container
name: api
${extra}services:
  - name: api
    ports: [{ name: http, containerPort: 8080 }]
tests:
  - name: unit
    args: [echo, ok]
`;

  it('is one error for the module, not one per action it becomes, with the hint a module can follow', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'garden.yml': module(),
      Dockerfile: 'FROM nginx\n',
    });
    expect(await problemLines(validateCommand({ root, var: [], env: 'remote' }))).toEqual([
      'TEND_PROVIDER_NOT_FOUND garden.yml:2 module api (type "container") comes from provider "kubernetes", ' +
        'which environment "remote" does not use: its entries are limited to other environments (project.garden.yml:5:5 for local); ' +
        'add this environment to one, or disable the module in it: `disabled: ${environment.name == "remote"}`',
    ]);
  });

  it('listed under no provider at all, is one error for the module too', async () => {
    const root = makeProject({
      'project.garden.yml': 'kind: Project\nname: modules\nenvironments: [{ name: local }]\nproviders: []\n',
      'garden.yml': module(),
      Dockerfile: 'FROM nginx\n',
    });
    expect(await problemLines(validateCommand({ root, var: [] }))).toEqual([
      'TEND_PROVIDER_NOT_FOUND garden.yml:2 module api (type "container") comes from provider "kubernetes", ' +
        'which is not listed under providers in project.garden.yml; ' +
        'list local-kubernetes (a cluster on this machine) or kubernetes (with its context:) there',
    ]);
  });

  it('follows the hint: disabled in that environment, the module validates there, and is loaded in the other', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'garden.yml': module('disabled: ${environment.name == "remote"}\n'),
      Dockerfile: 'FROM nginx\n',
    });
    expect((await validateCommand({ root, var: [], env: 'remote' })).exitCode).toBe(0);
    const local = await validateCommand({ root, var: [], env: 'local' });
    expect(local.data.actions.map((a) => a.ref)).toEqual(['build.api', 'deploy.api', 'test.api-unit']);
  });
});

describe('a provider tend refuses, limited to some environments (garden-io/garden-coder-example: ephemeral-kubernetes)', () => {
  const project = (providers: string) => `apiVersion: garden.io/v1
kind: Project
name: coder
defaultEnvironment: a
environments: [{ name: a }, { name: b }, { name: c }]
providers:
${providers}`;
  const deploy = 'kind: Deploy\nname: web\ntype: kubernetes\nspec:\n  manifests: []\n';

  it("is its error in its environments; in the others, an action without its provider is validate's error at the type", async () => {
    const root = makeProject({
      'project.garden.yml': project('  - name: ephemeral-kubernetes\n    environments: [a]\n'),
      'garden.yml': deploy,
    });
    expect(await problemLines(validateCommand({ root, var: [], env: 'a' }))).toEqual([
      'TEND_CONFIG_UNSUPPORTED project.garden.yml:7 provider ephemeral-kubernetes is not supported by tend; use the kubernetes provider with a cluster of your own',
    ]);
    for (const env of ['b', 'c']) {
      expect(await problemLines(validateCommand({ root, var: [], env })), env).toEqual([
        'TEND_PROVIDER_NOT_FOUND garden.yml:3 action type "kubernetes" comes from provider "kubernetes", which is not listed under providers in project.garden.yml; ' +
          'list local-kubernetes (a cluster on this machine) or kubernetes (with its context:) there',
      ]);
    }
  });

  it('beside a kubernetes entry for another environment, still leaves the action without its provider in a third', async () => {
    for (const kubernetes of ['kubernetes', 'local-kubernetes']) {
      const root = makeProject({
        'project.garden.yml': project(
          // Garden's kubernetes provider requires its context (garden-kubernetes-context.test.ts).
          `  - name: ${kubernetes}\n    environments: [a]\n    context: ctx\n  - name: ephemeral-kubernetes\n    environments: [c]\n`,
        ),
        'garden.yml': deploy,
      });
      expect((await validateCommand({ root, var: [], env: 'a' })).exitCode, kubernetes).toBe(0);
      expect(await problemLines(validateCommand({ root, var: [], env: 'b' })), kubernetes).toEqual([
        'TEND_PROVIDER_NOT_FOUND garden.yml:3 action type "kubernetes" comes from provider "kubernetes", which environment "b" does not use: ' +
          'its entries are limited to other environments (project.garden.yml:7:5 for a); add this environment to one, or limit the action with environments:',
      ]);
      expect(await problemLines(validateCommand({ root, var: [], env: 'c' })), kubernetes).toEqual([
        'TEND_CONFIG_UNSUPPORTED project.garden.yml:10 provider ephemeral-kubernetes is not supported by tend; use the kubernetes provider with a cluster of your own',
      ]);
    }
  });

  it('without one, an action whose provider is listed nowhere is the error once, in every environment', async () => {
    const root = makeProject({
      'project.garden.yml': project('  - name: exec\n'),
      'garden.yml': deploy,
    });
    for (const env of ['a', 'b']) {
      expect(await problemLines(validateCommand({ root, var: [], env })), env).toEqual([
        'TEND_PROVIDER_NOT_FOUND garden.yml:3 action type "kubernetes" comes from provider "kubernetes", which is not listed under providers in project.garden.yml; ' +
          'list local-kubernetes (a cluster on this machine) or kubernetes (with its context:) there',
      ]);
    }
  });
});

describe("Garden's kubernetes provider namespace (erauner12/homelab-garden: defaultNamespace demo)", () => {
  it('is <project>-<environment namespace> where the environment sets defaultNamespace and the entry names none', async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: homelab
environments:
  - name: demo
    defaultNamespace: demo
  - name: shared
    defaultNamespace: default
  - name: mine
providers:
  - name: local-kubernetes
`,
      'garden.yml': execRun,
    });
    // The namespace objects go to, as validate's header names it.
    const namespaceIn = async (env: string) => {
      const validated = await runTend(['validate', '--env', env], { cwd: root });
      expect(validated.code, validated.stderr).toBe(0);
      return /, (namespace [^,]*),/.exec(validated.stdout.split('\n')[0]!)?.[1];
    };
    expect(await namespaceIn('demo')).toBe(
      "namespace homelab-demo (provider kubernetes's namespace; the environment's is demo)",
    );
    // Garden's `default` is a namespace of the project's own here, as in Garden.
    expect(await namespaceIn('shared')).toBe(
      "namespace homelab-default (provider kubernetes's namespace; the environment's is default)",
    );
    // Without defaultNamespace: tend's per-developer namespace, where Garden's is homelab-default.
    expect(await namespaceIn('mine')).toBe(`namespace homelab-${userInfo().username.toLowerCase()}`);
    // One entry for the environments with a namespace of their own, one for the other.
    const { project } = await load(root);
    expect(project!.providers.map((p) => [p.name, p.environments, p.config.namespace])).toEqual([
      ['kubernetes', ['demo', 'shared'], '${project.name}-${environment.namespace}'],
      ['kubernetes', ['mine'], undefined],
      ['exec', undefined, undefined],
    ]);

    // An entry naming its namespace keeps it.
    const named = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: homelab
environments: [{ name: demo, defaultNamespace: demo }]
providers: [{ name: local-kubernetes, namespace: "\${environment.namespace}" }]
`,
      'garden.yml': execRun,
    });
    const validated = await runTend(['validate'], { cwd: named });
    expect(validated.stdout.split('\n')[0]).toContain(', namespace demo, ');
  });
});

describe('a provider entry that is no mapping', () => {
  it("is the schema's error at its line, beside a kubernetes entry split by environment", async () => {
    for (const [entries, line, column] of [
      ['[null]', 5, 13],
      ['[{ name: local-kubernetes }, null]', 5, 41],
      ['[7, { name: exec, environments: [dev] }]', 5, 13],
    ] as const) {
      const root = makeProject({
        'project.garden.yml': `apiVersion: garden.io/v1\nkind: Project\nname: h\nenvironments: [{ name: dev, defaultNamespace: dev }, { name: other }]\nproviders: ${entries}\n`,
        'garden.yml': execRun,
      });
      const error = await validateCommand({ root, var: [] }).then(
        () => undefined,
        (caught: TendError) => caught,
      );
      expect(error?.message, entries).toMatch(/^invalid value for providers\[\d\]: expected a mapping/);
      expect(error?.location, entries).toMatchObject({ file: 'project.garden.yml', line, column });
    }
  });
});
