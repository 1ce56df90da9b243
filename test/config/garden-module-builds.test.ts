/**
 * A 0.12 module's build dependency on a module that becomes no Build (a container module without
 * a Dockerfile, an exec module without build.command, a kubernetes module; a helm module in tend)
 * is left out with a note, as Garden 0.13 leaves it out after converting the modules; a name that
 * is no module stays the error it was.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterEach(removeProjects);

const project = `apiVersion: garden.io/v0
kind: Project
name: shop
environments:
  - name: local
providers:
  - name: local-kubernetes
    context: kube-sim
`;

/** An image-only container module, an exec module with nothing to build, a container module built from its Dockerfile. */
const modules = {
  'db/garden.yml': `kind: Module
type: container
name: db
image: postgres:16
services:
  - name: db
    ports: [{ name: pg, containerPort: 5432 }]
`,
  'tools/garden.yml': `kind: Module
type: exec
name: tools
services:
  - name: tools
    deployCommand: [echo, tools]
`,
  'web/garden.yml': `kind: Module
type: container
name: web
`,
  'web/Dockerfile': 'FROM node:22\n',
  'chart/garden.yml': `kind: Module
type: helm
name: chart
chart: nginx
repo: https://charts.example.com
version: 1.0.0
`,
};

const load = (root: string) => loadProjectConfig({ cwd: root, plugins: builtinPlugins() });

/** The error loading `root` fails with, and the configuration errors it carries. */
async function loadFailure(root: string) {
  const error = await load(root).then(
    () => undefined,
    (caught: unknown) => caught as TendError,
  );
  const { errors = [] } = (error?.detail ?? {}) as {
    errors?: { message: string; location: { file: string; line: number } }[];
  };
  return { error, errors, lines: errors.map((e) => `${e.location.file}:${e.location.line}`) };
}

describe("a 0.12 module's build dependency on a module without a Build", () => {
  it('is left out with a note at its line, for build.dependencies and a containerModule; one on a built module stays', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      ...modules,
      'api/garden.yml': `kind: Module
type: exec
name: api
build:
  command: [make]
  dependencies:
    - db
    - name: tools
    - web
    - chart
services:
  - name: api
    deployCommand: [echo, api]
---
kind: Module
type: kubernetes
name: api-k8s
manifests:
  - apiVersion: v1
    kind: ConfigMap
    metadata: { name: api }
serviceResource:
  kind: Deployment
  name: api
  containerModule: db
tasks:
  - name: migrate
    command: [migrate]
`,
    });
    const config = await load(root);
    const dependencies = (ref: string) => config.actions.find((a) => a.ref === ref)?.dependencies;
    expect(dependencies('build.api')).toEqual(['build.web']);
    expect(dependencies('deploy.api-k8s')).toEqual([]);
    expect(config.actions.map((a) => a.ref)).not.toContain('build.db');
    expect(config.notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual([
      'api/garden.yml:7 build dependency db left out: module db has no Build (a container module without a Dockerfile deploys its image as it is); Garden leaves it out too',
      'api/garden.yml:8 build dependency tools left out: module tools has no Build (an exec module without build.command or files to copy); Garden leaves it out too',
      'api/garden.yml:10 build dependency chart left out: module chart is a helm module, which has no Build in tend (it reads the chart where it is)',
      'api/garden.yml:25 build dependency db left out: module db has no Build (a container module without a Dockerfile deploys its image as it is); Garden leaves it out too',
    ]);
  });

  it('a name that is no module of the project stays the error at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      ...modules,
      'api/garden.yml': `kind: Module
type: exec
name: api
build:
  command: [make]
  dependencies: [db, nowhere]
`,
    });
    const { errors, lines } = await loadFailure(root);
    expect(lines).toEqual(['api/garden.yml:6']);
    expect(errors[0]!.message).toContain('nowhere');
    expect(errors[0]!.message).not.toContain('build.db');

    // A value that is no name (a number) is refused at its line, not dropped unsaid.
    const odd = makeProject({
      'project.garden.yml': project,
      ...modules,
      'api/garden.yml': `kind: Module
type: exec
name: api
build:
  command: [make]
  dependencies:
    - web
    - .inf
`,
    });
    const oddFailure = await loadFailure(odd);
    expect(oddFailure.lines).toEqual(['api/garden.yml:8']);
    expect(oddFailure.errors[0]!.message).toContain('build.Infinity');

    // A container module's Build likewise.
    const container = makeProject({
      'project.garden.yml': project,
      ...modules,
      'web/garden.yml': `kind: Module
type: container
name: web
build:
  dependencies:
    - tools
    - nowhere
`,
    });
    const { error: containerError } = await loadFailure(container);
    expect(containerError?.location).toMatchObject({ file: 'web/garden.yml', line: 7 });
    expect(containerError?.message).toContain('nowhere');
  });
});

describe("a container module's build.dependencies", () => {
  it('are dependencies of its services, tasks and tests, with a Dockerfile or without, as Garden converts them', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'builder/garden.yml': 'kind: Module\nname: builder\ntype: exec\nbuild:\n  command: [make]\n',
      'web/garden.yml': `kind: Module
name: web
type: container
image: busybox:1.31.1
build:
  dependencies: [builder]
services:
  - name: web
    command: [sh, -c, sleep 1000]
tasks:
  - name: seed
    command: [seed]
    dependencies: [web]
`,
      'api/garden.yml':
        'kind: Module\nname: api\ntype: container\nbuild:\n  dependencies: [builder]\nservices:\n  - name: api\n',
      'api/Dockerfile': 'FROM node:22\n',
    });
    const config = await load(root);
    const dependencies = (ref: string) => config.actions.find((a) => a.ref === ref)?.dependencies;
    expect(dependencies('deploy.web')).toEqual(['build.builder']);
    expect(dependencies('run.seed')).toEqual(['build.builder', 'deploy.web']);
    expect(dependencies('build.api')).toEqual(['build.builder']);
    expect(dependencies('deploy.api')).toEqual(['build.builder', 'build.api']);
  });
});

describe("a 0.12 module's build.dependencies[].copy and local", () => {
  /** An exec module `app` whose build reads what it copies from module `dep`. */
  const copying = (app: string) => ({
    'garden.yml': project.replace(/providers:[\s\S]*/, ''),
    'dep/garden.yml': 'kind: Module\nname: dep\ntype: exec\nbuild:\n  command: [echo, dep]\n',
    'dep/shared.txt': 'data from dep\n',
    'dep/conf/a.yml': 'a: 1\n',
    'app/garden.yml': app,
  });
  /** Module `app` building with `command`, copying `copy` from module `dep`. */
  const copyingApp = (command: string, copy: string) =>
    copying(`kind: Module
name: app
type: exec
build:
  command: ${command}
  dependencies:
    - name: dep
      copy: ${copy}
`);

  it("become the Build's copyFrom (target defaulting to source) and buildAtSource, as Garden converts them", async () => {
    const root = makeProject(
      copying(`kind: Module
name: app
type: exec
local: true
build:
  command: [cat, shared.txt]
  dependencies:
    - name: dep
      copy:
        - source: shared.txt
          target: copied/shared.txt
        - source: conf
---
kind: Module
name: tool
type: exec
build:
  dependencies:
    - name: dep
      copy: [{ source: shared.txt }]
services:
  - name: tool
    deployCommand: [cat, shared.txt]
`),
    );
    const config = await load(root);
    const action = (ref: string) => config.actions.find((a) => a.ref === ref);
    expect(action('build.app')).toMatchObject({
      dependencies: ['build.dep'],
      buildAtSource: true,
      copyFrom: [
        { build: 'dep', sourcePath: 'shared.txt', targetPath: 'copied/shared.txt' },
        { build: 'dep', sourcePath: 'conf', targetPath: 'conf' },
      ],
    });
    // Garden gives a module without build.command that copies files a Build that only copies them.
    expect(action('build.tool')).toMatchObject({
      copyFrom: [{ build: 'dep', sourcePath: 'shared.txt', targetPath: 'shared.txt' }],
    });
    expect(action('build.tool')?.buildAtSource).toBeUndefined();
    expect(action('deploy.tool')?.dependencies).toEqual(['build.tool']);
  });

  it('tend build copies the files into the build directory before the build command runs', async () => {
    // 0.12's exec commands run in a shell: the file is written where the test reads it.
    const root = makeProject(
      copyingApp("[cat, shared.txt, '>', $BUILT_FILE]", '[{ source: shared.txt, target: shared.txt }]'),
    );
    const built = path.join(root, 'built.txt');
    const run = await runTend(['build', 'app'], { cwd: root, env: { BUILT_FILE: built } });
    expect(run.stderr).not.toContain('No such file');
    expect(run.code).toBe(0);
    expect(readFileSync(built, 'utf8')).toBe('data from dep\n');
  });

  it('of a module that becomes no Build in tend (a kubernetes module) is one note at its line', async () => {
    const root = makeProject({
      ...copying('kind: Module\nname: app\ntype: exec\n'),
      'garden.yml': project,
      'k8s/garden.yml': `kind: Module
name: k8s
type: kubernetes
build:
  dependencies:
    - name: dep
      copy: [{ source: shared.txt }]
manifests: []
`,
    });
    const config = await load(root);
    expect(config.notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual([
      'k8s/garden.yml:7 build.dependencies[].copy: module k8s (kubernetes) becomes no Build in tend, whose actions run where the module is; ignored',
    ]);
  });

  it('a copy source leaving the build directory is the error at its line', async () => {
    const root = makeProject(copyingApp('[cat, shared.txt]', '[{ source: ../secret.txt }]'));
    const { errors, lines } = await loadFailure(root);
    expect(lines).toEqual(['app/garden.yml:8']);
    expect(errors[0]!.message).toContain('../secret.txt');
  });
});
