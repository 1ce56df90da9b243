/**
 * Garden projects read as they are: which files (garden.yml, project.garden.yml, *.garden.yml,
 * minus scan and ignore files), the Project and actions in one file or many, YAML anchors and
 * merge keys, and what tend does not do said at its file:line — as a problem, or a note that
 * `tend validate` prints.
 */
import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { providersOf } from '../../src/config/environment.js';
import { configure, loadProjectConfig } from '../../src/config/pipeline.js';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v2
kind: Project
name: shop
environments:
  - name: local
providers:
  - name: local-kubernetes
    context: kind-kind
    ingressClass: nginx
    deploymentRegistry:
      hostname: registry.example.com
      namespace: shop
`;

const execRun = (name: string) => `kind: Run
type: exec
name: ${name}
spec:
  command: [echo, ${name}]
`;

const load = (root: string, cwd = root) => loadProjectConfig({ cwd, plugins: builtinPlugins() });

async function loadError(root: string): Promise<TendError> {
  try {
    await load(root);
  } catch (error) {
    return error as TendError;
  }
  throw new Error('the load succeeded');
}

const messages = (error: TendError) =>
  (error.detail as { errors: { code: string; message: string; location: { file: string; line: number } }[] })
    .errors;

describe('Garden project files', () => {
  it("finds the project from a subdirectory and reads every Garden file name, tend's beside them", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': execRun('api'),
      'web/garden.yaml': execRun('web'),
      'db/db.garden.yml': execRun('db'),
      'jobs/jobs.garden.yaml': execRun('jobs'),
      'tools/tools.tend.yml': execRun('tools'),
      'docs/notes.yml': execRun('not-config'),
    });
    const loaded = await load(root, path.join(root, 'api'));
    expect(loaded.project.name).toBe('shop');
    expect(loaded.project.file).toBe('project.garden.yml');
    expect(loaded.actions.map((a) => `${a.ref} ${a.file}`).sort()).toEqual([
      'run.api api/garden.yml',
      'run.db db/db.garden.yml',
      'run.jobs jobs/jobs.garden.yaml',
      'run.tools tools/tools.tend.yml',
      'run.web web/garden.yaml',
    ]);
    // local-kubernetes is tend's kubernetes provider, Garden's registry object a host/path; exec is implied.
    expect(loaded.project.providers.map((p) => [p.name, p.config])).toEqual([
      [
        'kubernetes',
        {
          context: 'kind-kind',
          deploymentRegistry: 'registry.example.com/shop',
          ingressClass: 'nginx',
          defaultHostname: 'shop.local.demo.garden',
        },
      ],
      ['exec', {}],
    ]);
    expect(loaded.notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual([]);
  });

  it('searches dot directories and every depth, but not .git, node_modules, .tend, .garden nor a symbolic link', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      '.ci/ci.garden.yml': execRun('ci'),
      'a/b/c/d/e/deep.tend.yml': execRun('deep'),
      'a/.tend.yml': execRun('dot-named'),
      'a/tend.yml': execRun('not-config'),
      ...Object.fromEntries(
        ['.git', 'node_modules', '.tend', '.garden', 'x/node_modules', 'x/y/.garden'].map((dir) => [
          `${dir}/skipped/garden.yml`,
          execRun(`in-${dir.replaceAll(/[./]/g, '')}`),
        ]),
      ),
    });
    // Outside the project, and no configuration: following a link to it would be an error.
    const outside = makeProject({ 'linked.garden.yml': 'kind: [' });
    symlinkSync(outside, path.join(root, 'a', 'link-to-dir'));
    symlinkSync(path.join(outside, 'linked.garden.yml'), path.join(root, 'a', 'link.garden.yml'));
    const loaded = await load(root);
    expect(loaded.actions.map((a) => `${a.ref} ${a.file}`).sort()).toEqual([
      'run.ci .ci/ci.garden.yml',
      'run.deep a/b/c/d/e/deep.tend.yml',
      'run.dot-named a/.tend.yml',
    ]);
  });

  it("Garden's format before 0.10 (a top-level project:) is said as such; no project file at all names both kinds", async () => {
    const older = makeProject({
      'garden.yml': 'project:\n  name: old\n  environments:\n    - name: local\n',
      'api/garden.yml': 'module:\n  name: api\n  type: container\n',
    });
    const error = await loadError(path.join(older, 'api'));
    expect([error.code, error.message]).toEqual([
      'TEND_CONFIG_UNSUPPORTED',
      `${path.join(older, 'garden.yml')} declares its project in Garden's format before 0.10 (a top-level \`project:\`), which tend does not read`,
    ]);
    expect(String(error.detail?.hint)).toContain('`kind: Project` document');
    const none = makeProject({ 'api/garden.yml': execRun('api') });
    const missing = await loadError(none);
    expect([missing.code, missing.message]).toEqual([
      'TEND_CONFIG_NOT_FOUND',
      `no tend.yml or Garden project file found in ${none} or any parent directory`,
    ]);
  });

  it('the Project and its actions in one garden.yml, with YAML anchors and merge keys', async () => {
    const root = makeProject({
      'garden.yml': `${gardenProject}---
kind: Run
type: exec
name: derived
spec:
  <<: &base
    command: [echo, hi]
    env: { A: &b "1" }
  env: { A: "2", B: *b }
`,
    });
    const loaded = await load(root);
    expect(loaded.actions.map((a) => [a.ref, a.spec])).toEqual([
      ['run.derived', { command: ['echo', 'hi'], env: { A: '2', B: '1' } }],
    ]);
  });

  it('leaves out what dotIgnoreFile, .gardenignore and scan.exclude list', async () => {
    const root = makeProject({
      'project.garden.yml': `${gardenProject}scan:\n  exclude: [vendor/**/*]\n`,
      '.gardenignore': 'old/\n',
      'svc/.gardenignore': 'legacy.garden.yml\n',
      'svc/garden.yml': execRun('svc'),
      'svc/legacy.garden.yml': execRun('legacy'),
      'old/garden.yml': execRun('old'),
      'vendor/lib/garden.yml': execRun('vendored'),
    });
    expect((await load(root)).actions.map((a) => a.ref)).toEqual(['run.svc']);

    const custom = makeProject({
      'project.garden.yml': `${gardenProject}dotIgnoreFile: .gitignore\n`,
      '.gitignore': 'generated/\n',
      '.gardenignore': 'svc/\n',
      'svc/garden.yml': execRun('svc'),
      'generated/garden.yml': execRun('generated'),
    });
    expect((await load(custom)).actions.map((a) => a.ref)).toEqual(['run.svc']);
  });

  it('an ignore file of several lines leaves out each of its patterns; comments, blank lines and a negation as gitignore has them', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      '.gardenignore':
        '# generated and vendored code\nmodule-b/\n\n*.old.garden.yml\nlegacy/*\n!legacy/kept.garden.yml\n',
      'module-a/garden.yml': execRun('a'),
      'module-b/garden.yml': execRun('b'),
      'module-c/garden.yml': execRun('c'),
      'module-c/previous.old.garden.yml': execRun('previous'),
      'legacy/garden.yml': execRun('legacy'),
      'legacy/kept.garden.yml': execRun('kept'),
    });
    expect((await load(root)).actions.map((a) => a.ref).sort()).toEqual(['run.a', 'run.c', 'run.kept']);
  });

  it('scan.include keeps only the files it matches', async () => {
    const root = makeProject({
      'project.garden.yml': `${gardenProject}scan:\n  include: [services/**/*]\n`,
      'services/api/garden.yml': execRun('api'),
      'experiments/garden.yml': execRun('experiment'),
    });
    expect((await load(root)).actions.map((a) => a.ref)).toEqual(['run.api']);
  });

  it('a tend.yml Project beside a project.garden.yml Project is an error naming both', async () => {
    const root = makeProject({
      'tend.yml': 'kind: Project\nname: shop\nenvironments: [{ name: dev }]\n',
      'project.garden.yml': gardenProject,
    });
    const error = await loadError(root);
    expect(error.message).toContain('tend.yml and project.garden.yml both declare the project');
    expect(error.location).toMatchObject({ file: 'project.garden.yml', line: 1 });
  });

  it('source: { path }, dependencies as objects and Kind.name, apiVersion garden.io/v0–v2', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': `apiVersion: garden.io/v1
kind: Build
type: exec
name: api
source:
  path: ../src
spec:
  command: [make]
---
apiVersion: garden.io/v0
kind: Run
type: exec
name: seed
dependencies:
  - { kind: Build, name: api }
  - Run.migrate
spec:
  command: [echo]
  shell: true
---
kind: Run
type: exec
name: migrate
spec:
  command: [echo, "$HOME"]
  shell: true
`,
      'src/Makefile': 'all:\n',
    });
    const loaded = await load(root);
    const byRef = new Map(loaded.actions.map((a) => [a.ref, a]));
    expect(byRef.get('build.api')!.sourceDir).toBe(path.join(root, 'src'));
    expect(byRef.get('run.seed')!.dependencies).toEqual(['build.api', 'run.migrate']);
    expect(byRef.get('run.migrate')!.spec).toEqual({ command: ['sh', '-c', 'echo $HOME'] });
  });

  it("kustomize without a path is the action's directory, as in Garden; null runs none (an action's, a module's)", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': `kind: Deploy
type: kubernetes
name: here
spec: { kustomize: {} }
---
kind: Deploy
type: kubernetes
name: none
spec:
  kustomize: { path: null }
  manifests: [{ apiVersion: v1, kind: ConfigMap, metadata: { name: none } }]
`,
      'mod/garden.yml':
        'kind: Module\ntype: kubernetes\nname: mod\nkustomize: { extraArgs: [--enable-helm] }\n',
    });
    const { actions } = await load(root);
    const spec = (ref: string) => actions.find((a) => a.ref === ref)?.spec as Record<string, unknown>;
    expect(spec('deploy.here')).toEqual({ kustomize: { path: '.' } });
    expect(spec('deploy.none')).toEqual({
      manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'none' } }],
    });
    expect(spec('deploy.mod')).toEqual({ kustomize: { path: '.', extraArgs: ['--enable-helm'] } });
  });

  it('a container module with neither image nor Dockerfile is the error at its name, as in Garden; what refers to it is no further error', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml':
        'kind: Module\ntype: container\nname: api\nservices: [{ name: api, ports: [{ name: http, containerPort: 80 }] }]\n',
      'web/garden.yml':
        'kind: Module\ntype: exec\nname: web\ntasks: [{ name: seed, command: [echo], dependencies: [api] }]\n',
    });
    const errors = messages(await loadError(root));
    expect(errors.map((e) => `${e.location.file}:${e.location.line} ${e.message}`)).toEqual([
      'api/garden.yml:3 container module api neither specifies image nor has a Dockerfile (Dockerfile) among its files; set image, or add the Dockerfile',
    ]);
  });

  it('tend validate names the type the Garden file says, and what tend runs it as where that is another', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': `kind: Run
type: container
name: migrate
spec: { image: alpine, command: [echo] }
---
kind: Deploy
type: persistentvolumeclaim
name: data
spec: { spec: { accessModes: [ReadWriteOnce], resources: { requests: { storage: 1Gi } } } }
---
${execRun('smoke')}`,
    });
    const result = await validateCommand({ root, var: [] });
    expect(result.data.actions.map(({ ref, type, writtenType }) => ({ ref, type, writtenType }))).toEqual([
      { ref: 'run.migrate', type: 'kubernetes-pod', writtenType: 'container' },
      { ref: 'deploy.data', type: 'kubernetes', writtenType: 'persistentvolumeclaim' },
      { ref: 'run.smoke', type: 'exec', writtenType: undefined },
    ]);
    expect(result.human).toMatch(/run\.migrate +container \(kubernetes-pod\) +garden\.yml:1 /);
    expect(result.human).toMatch(/deploy\.data +persistentvolumeclaim \(kubernetes\) +garden\.yml:6 /);
    expect(result.human).toMatch(/run\.smoke +exec +garden\.yml:11 /);
  });

  it("a container Deploy, Test or Run with build: and no image runs the Build's image", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': `kind: Build
type: container
name: api
---
kind: Deploy
type: container
name: api
build: api
spec:
  ports: [{ name: http, containerPort: 8080 }]
---
kind: Test
type: container
name: unit
build: api
spec:
  args: [go, test]
---
kind: Run
type: container
name: seed
build: api
spec:
  image: busybox
  command: [echo]
`,
      'api/Dockerfile': 'FROM scratch\n',
    });
    const byRef = new Map((await load(root)).actions.map((a) => [a.ref, a]));
    const image = '${actions.build.api.outputs.deploymentImageId}';
    expect(byRef.get('deploy.api')!.spec).toMatchObject({ image });
    expect(byRef.get('test.unit')!.spec).toMatchObject({ image, args: ['go', 'test'] });
    // An image given stays the one run.
    expect(byRef.get('run.seed')!.spec).toMatchObject({ image: 'busybox' });
    expect(byRef.get('deploy.api')!.build).toBe('api');
  });

  it("what tend says in a Garden project names the project's files and the Garden page, not tend.yml", async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: plain
environments:
  - name: local
---
kind: Deploy
type: exec
name: app
spec:
  deployCommand: [echo, "\${var.nope}"]
`,
    });
    const nothing = await runTend(['run'], { cwd: root });
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toContain('Declare one in a *.garden.yml file: kind: Run, type: exec');
    expect(nothing.stdout).toContain('see docs/garden.md');
    const environment = await runTend(['--env', 'nope', 'validate'], { cwd: root });
    expect(environment.stderr).toContain('add it under environments: in project.garden.yml');
    const variable = await runTend(['deploy'], { cwd: root });
    expect(variable.stderr).toContain(
      'project.garden.yml:11:25: unknown variable "var.nope"; available: (none); set it with --var nope=<value>, ' +
        "or under the Project's variables: (or environment local's variables:)",
    );
    const flag = await runTend(['--var', 'nop=1', 'deploy'], { cwd: root });
    expect(flag.stderr).toContain("must be declared under the Project's variables:");
    for (const run of [nothing, environment, variable, flag])
      expect(run.stdout + run.stderr).not.toContain('tend.yml');
  });

  it('a container env value that is a number, a boolean or empty is its text, as Garden deploys it (empty: "null")', async () => {
    // As bolabaden/bolabaden-infra (`EMPTY:` in a container Deploy's env).
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml':
        'kind: Deploy\ntype: container\nname: web\nspec:\n  image: nginx\n  env:\n    PORT: 8080\n    DEBUG: false\n    EMPTY:\n    NAME: web\n',
    });
    const [web] = (await load(root)).actions;
    expect(web!.spec).toMatchObject({ env: { PORT: '8080', DEBUG: 'false', EMPTY: 'null', NAME: 'web' } });
  });

  it('a remote source with a path is one error, its own; a source.path with ${…} is resolved in the environment', async () => {
    // As bolabaden/bolabaden-infra: `source: { repository: { url }, path: apps/api }`, and
    // `source.path: ${var.src-path || "./src"}/proxy`.
    const remote = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': `kind: Build
type: exec
name: remote
source:
  repository:
    url: https://github.com/example/apps.git#main
  path: apps/api
spec:
  command: [make]
`,
    });
    expect(
      messages(await loadError(remote)).map((e) => `${e.location.file}:${e.location.line} ${e.message}`),
    ).toEqual(['garden.yml:5 a remote source repository is not fetched by tend; clone it into the project']);

    const build = (source: string) =>
      `kind: Build\ntype: exec\nname: app\nsource:\n  path: ${source}\nspec:\n  command: [ls]\n`;
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'infra/garden.yml': build('${var.src-dir || "../app"}/proxy'),
      'app/proxy/main.sh': 'echo hi\n',
    });
    const configuration = await configure({
      cwd: root,
      plugins: builtinPlugins(),
      secrets: () => Promise.resolve(undefined),
    });
    expect(configuration.actions.map((a) => [a.ref, path.relative(root, a.sourceDir)])).toEqual([
      ['build.app', 'app/proxy'],
    ]);
    expect((await validateCommand({ root, var: [] })).exitCode).toBe(0);
    // `--var` chooses another directory; one that does not exist, or outside the project, is the error at the line.
    for (const [dir, message] of [
      [
        '../nowhere',
        'source directory "../nowhere/proxy" does not exist (resolved to nowhere/proxy in the project) (from "${var.src-dir || "../app"}/proxy")',
      ],
      ['../..', 'source "../../proxy" is outside the project root (from "${var.src-dir || "../app"}/proxy")'],
    ]) {
      const run = await runTend(['--var', `src-dir=${dir}`, 'validate'], { cwd: root });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`infra/garden.yml:5:9: ${message}`);
    }
  });

  it('the actions of an environment whose provider tend cannot run (ephemeral-kubernetes) get its error, not "comes from provider kubernetes"', async () => {
    // As garden-io/garden-coder-example: ephemeral-kubernetes, which Garden builds on kubernetes.
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: eph
defaultEnvironment: ephemeral
environments:
  - name: ephemeral
providers:
  - name: ephemeral-kubernetes
    environments: [ephemeral]
`,
      'garden.yml': 'kind: Deploy\nname: web\ntype: kubernetes\nspec:\n  manifests: []\n',
    });
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code).toBe(2);
    expect(validated.stderr).toContain(
      'project.garden.yml:8:11: provider ephemeral-kubernetes is not supported by tend; use the kubernetes provider with a cluster of your own',
    );
    expect(validated.stderr).not.toContain('comes from provider');
  });

  it('a Garden environments: list naming an environment the project lacks is a filter, as in Garden; in tend.yml it stays an error', async () => {
    // As bolabaden/bolabaden-infra (`environments: [ha-k8s]` with no such environment).
    const root = makeProject({
      'project.garden.yml': `${gardenProject}  - name: exec\n    environments: [staging]\n`,
      'garden.yml': `${execRun('hello')}environments: [local, ci]\n---\n${execRun('elsewhere')}environments: [ci]\n`,
    });
    const loaded = await load(root);
    expect(loaded.actions.map((a) => [a.ref, a.environments])).toEqual([
      ['run.hello', ['local', 'ci']],
      ['run.elsewhere', ['ci']],
    ]);
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => a.ref)).toEqual(['run.hello']);
    // Garden loads exec in every environment: the entry limited to staging leaves local its default.
    expect(loaded.project!.providers.map((p) => [p.name, p.environments])).toEqual([
      ['kubernetes', undefined],
      ['exec', ['staging']],
      ['exec', ['local']],
    ]);
    expect(providersOf(loaded.project!, 'local').map((p) => p.name)).toEqual(['kubernetes', 'exec']);

    const tendProject = makeProject({
      'tend.yml': 'kind: Project\nname: shop\nenvironments: [{ name: local }]\nproviders: [{ name: exec }]\n',
      'a.tend.yml': `${execRun('hello')}environments: [local, ci]\n`,
    });
    expect(messages(await loadError(tendProject)).map((e) => e.message)).toEqual([
      'unknown environment "ci" in environments of run.hello; expected one of: local',
    ]);
  });

  it("a container Build's extraFlags are kept for the builder; its build secrets are the error at their line", async () => {
    const build = (extra: string) => `kind: Build
type: container
name: api
spec:
  localId: api-local
  extraFlags: [--opt, "build-arg:MODE=ci"]
${extra}`;
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': build(''),
      'api/Dockerfile': 'FROM scratch\n',
    });
    const [api] = (await load(root)).actions;
    expect(api!.spec).toEqual({ extraFlags: ['--opt', 'build-arg:MODE=ci'] });

    // As demokratie-live/democracy-development's 23 Builds (Garden's default local-docker mode):
    // docker's --load and --push are left out with a note at their line; the others go on.
    const docker = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml':
        'kind: Build\ntype: container\nname: api\nspec:\n  extraFlags:\n    - --load\n    - --no-cache\n    - --push\n',
      'api/Dockerfile': 'FROM scratch\n',
    });
    const loaded = await load(docker);
    expect(loaded.actions[0]!.spec).toEqual({ extraFlags: ['--no-cache'] });
    expect(loaded.notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual(
      ['--load', '--push'].map(
        (flag, i) =>
          `api/garden.yml:${6 + 2 * i} extraFlags ${flag}: docker's flag for where the image goes; tend builds in the ` +
          'cluster and pushes the image to the registry; ignored',
      ),
    );

    const withSecrets = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': build('  secrets:\n    token: abc\n'),
      'api/Dockerfile': 'FROM scratch\n',
    });
    expect(
      messages(await loadError(withSecrets)).map(
        (e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message}`,
      ),
    ).toEqual([
      "TEND_CONFIG_UNSUPPORTED api/garden.yml:7 secrets: tend's in-cluster builder takes no build secrets; remove it",
    ]);
    // A flag that is not text is the spec's error, at its line.
    const badFlag = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml': 'kind: Build\ntype: container\nname: api\nspec:\n  extraFlags: [--opt, { a: 1 }]\n',
      'api/Dockerfile': 'FROM scratch\n',
    });
    const [bad] = messages(await loadError(badFlag));
    expect(`${bad!.location.file}:${bad!.location.line}`).toBe('api/garden.yml:5');
    // A lone surrogate is no argument (the exec request could not carry it): refused at its line.
    const surrogate = makeProject({
      'project.garden.yml': gardenProject,
      'api/garden.yml':
        'kind: Build\ntype: container\nname: api\nspec:\n  extraFlags: ["--opt", "a\\ud800"]\n',
      'api/Dockerfile': 'FROM scratch\n',
    });
    const [lone] = messages(await loadError(surrogate));
    expect(`${lone!.location.file}:${lone!.location.line} ${lone!.message.slice(0, 55)}`).toBe(
      'api/garden.yml:5 invalid value for spec.extraFlags[1]: expected a string',
    );
    // Nor is a registry host with a control character a host.
    const registry = makeProject({
      'project.garden.yml': gardenProject.replace(
        'hostname: registry.example.com',
        'hostname: "registry\\u0000.example.com"',
      ),
    });
    const [host] = messages(await loadError(registry));
    expect(`${host!.location.file}:${host!.location.line}`).toBe('project.garden.yml:11');
  });

  it('a provider entry merges the settings a project variable shares ($merge); any other $merge is refused', async () => {
    const project = (merge: string) => `apiVersion: garden.io/v2
kind: Project
name: shop
variables:
  shared:
    context: gke_garden
    deploymentRegistry: { hostname: index.docker.io, namespace: shop }
  templated:
    context: \${local.env.CLUSTER}
environments:
  - name: dev
providers:
  - name: kubernetes
    $merge: ${merge}
    context: own-context
    namespace: shop-dev
`;
    const loaded = await load(makeProject({ 'project.garden.yml': project('${var.shared}') }));
    expect(loaded.project.providers.find((p) => p.name === 'kubernetes')!.config).toEqual({
      context: 'own-context',
      deploymentRegistry: 'index.docker.io/shop',
      namespace: 'shop-dev',
    });
    for (const merge of ['${var.templated}', '${var.missing}', '{ context: x }']) {
      const error = await loadError(makeProject({ 'project.garden.yml': project(merge) }));
      expect(error.message).toMatch(
        /^\$merge in a provider entry is read by tend only from a project variable/,
      );
      expect(error.location).toMatchObject({ file: 'project.garden.yml', line: 14 });
    }
  });

  it('what tend does not do is an error at its line, saying what to do; one error per unsupported action (terraform, docker-compose’s docker-run)', async () => {
    const root = makeProject({
      'project.garden.yml': `${gardenProject}  - name: terraform\n`,
      'infra/garden.yml': `kind: Deploy
type: terraform
name: infra
spec: {}
---
kind: Deploy
type: container
name: api
spec:
  image: nginx
---
kind: Run
type: exec
name: smoke
dependencies: [deploy.api, deploy.infra]
copyFrom: [{ build: x, sourcePath: a, targetPath: b }]
spec:
  command: [echo]
---
kind: Run
type: docker-run
name: seed
spec: { image: postgres }
`,
    });
    const errors = messages(await loadError(root));
    expect(
      errors.map((e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message.split(';')[0]}`),
    ).toEqual([
      'TEND_CONFIG_UNSUPPORTED project.garden.yml:13 provider terraform is not supported by tend',
      'TEND_CONFIG_UNSUPPORTED infra/garden.yml:2 action type terraform is not supported by tend',
      'TEND_CONFIG_INVALID infra/garden.yml:16 copyFrom applies to Build actions, not to Run',
      'TEND_CONFIG_UNSUPPORTED infra/garden.yml:21 action type docker-run is not supported by tend',
    ]);
    expect(errors[1]!.message).toContain('run terraform from an exec action');
    expect(errors[3]!.message).toContain(
      "Garden's docker-compose plugin; run `docker run` from an exec action",
    );
  });

  it("a Project document in a Garden file below the root is left out with a note, as Garden leaves it out; the file's actions load", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'assets/scaffold/project.garden.yml': `apiVersion: garden.io/v2
kind: Project
name: scaffold
environments: [{ name: other }]
---
${execRun('scaffolded')}`,
    });
    const { data } = await validateCommand({ root, var: [] });
    expect(data.project).toBe('shop');
    expect(data.actions.map((a) => a.ref)).toEqual(['run.scaffolded']);
    expect(data.notes).toContainEqual({
      message:
        "a Project document below the project root: ignored, as Garden ignores it (the project is the root's)",
      file: 'assets/scaffold/project.garden.yml',
      line: 1,
      column: 1,
    });
  });

  it('remote sources are the error, at their line; what refers to their actions is no further error', async () => {
    const root = makeProject({
      'project.garden.yml': `${gardenProject}sources:
  - name: shared
    repositoryUrl: https://github.com/example/shared.git#main
`,
      'api/garden.yml': `kind: Run
type: exec
name: migrate
dependencies: [deploy.postgres]
spec:
  command: [echo, "\${actions.deploy.postgres.outputs.host}"]
`,
    });
    const errors = messages(await loadError(root));
    expect(errors.map((e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message}`)).toEqual([
      'TEND_CONFIG_UNSUPPORTED project.garden.yml:13 remote sources are not fetched by tend; clone them into the project',
    ]);
  });

  it('a module tend does not convert (terraform: one Deploy named after it) is the error; what depends on it or reads it is no further error', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'garden.yml': `kind: Module
name: db
type: terraform
root: ./tf
---
kind: Module
name: backend
type: container
image: nginx
services:
  - name: backend
    dependencies: [db]
    env:
      DB_HOST: \${runtime.services.db.outputs.db_host_ip}
      # A terraform output is a map where Garden's is one: tend's outputs are one level.
      BUCKET: \${runtime.services.db.outputs.bucket.name}
tasks:
  - name: init
    args: [echo, "\${runtime.services.db.outputs.db_username}"]
    dependencies: [db]
`,
    });
    const errors = messages(await loadError(root));
    expect(
      errors.map((e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message.split(';')[0]}`),
    ).toEqual(['TEND_CONFIG_UNSUPPORTED garden.yml:3 module type terraform is not converted by tend']);
  });

  it('a provider tend cannot run, limited to other environments, is left out as Garden leaves it out; in its own it is the error, at its line', async () => {
    // The layout of Garden 0.13's `garden create project`: a provider per environment.
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: shop
defaultEnvironment: local
environments: [{ name: ephemeral }, { name: infra }, { name: local }]
providers:
  - name: ephemeral-kubernetes
    environments: [ephemeral]
  - name: terraform
    environments: [infra]
    initRoot: tf
  - name: local-kubernetes
    environments: [local]
    context: kind-kind
`,
      'api/garden.yml': execRun('api'),
    });
    const valid = await validateCommand({ root, var: [] });
    expect(valid.data.providers).toEqual(['kubernetes', 'exec']);
    for (const [env, line, name] of [
      ['ephemeral', 7, 'ephemeral-kubernetes'],
      ['infra', 9, 'terraform'],
    ] as const) {
      const refused = await validateCommand({ root, var: [], env }).then(
        () => undefined,
        (e: unknown) => e as TendError,
      );
      expect(refused, env).toMatchObject({
        code: 'TEND_CONFIG_UNSUPPORTED',
        location: { file: 'project.garden.yml', line },
      });
      expect(refused!.message).toContain(`provider ${name} is not supported by tend; `);
    }
    // Beside an action's problem, it is listed too, not only once that is fixed.
    writeFileSync(path.join(root, 'api', 'garden.yml'), execRun('api').replace('spec:', 'bogus: 1\nspec:'));
    const both = await validateCommand({ root, var: [], env: 'infra' }).then(
      () => undefined,
      (e: unknown) => e as TendError,
    );
    expect(
      messages(both!).map((e) => `${e.location.file}:${e.location.line} ${e.message.split(';')[0]}`),
    ).toEqual([
      'project.garden.yml:9 provider terraform is not supported by tend',
      expect.stringMatching(/^api\/garden.yml:\d+ unknown key "bogus"/),
    ]);
    // Its environments are a filter, as Garden reads them: limited to an environment the project
    // does not have, it is used nowhere, by Garden as by tend.
    const elsewhere = makeProject({
      'project.garden.yml':
        'apiVersion: garden.io/v1\nkind: Project\nname: shop\nenvironments: [{ name: local }]\n' +
        'providers:\n  - name: terraform\n    environments: [infar]\n',
    });
    expect((await validateCommand({ root: elsewhere, var: [] })).exitCode).toBe(0);
  });

  it('a note of a provider entry limited to some environments is said only in those', async () => {
    const root = makeProject({
      'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: shop
defaultEnvironment: local
environments: [{ name: local }, { name: remote }]
providers:
  - name: local-kubernetes
    environments: [local]
  - name: kubernetes
    environments: [remote]
    context: remote-cluster
    setupIngressController: nginx
`,
      'api/garden.yml': execRun('api'),
    });
    const notesIn = async (env: string) =>
      (await validateCommand({ root, var: [], env })).data.notes?.map(
        (n) => `${n.line} ${n.message.split(':')[0]}`,
      );
    expect(await notesIn('local')).toBeUndefined();
    expect(await notesIn('remote')).toEqual([expect.stringMatching(/^12 setupIngressController/)]);
  });

  it('tend validate lists sync mode as ignored, a Workflow to run and a Command outside the root as not offered, and the project is valid', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'k8s/garden.yml': `kind: Deploy
type: kubernetes
name: web
spec:
  manifestFiles: [web.yaml]
  sync:
    paths: [{ sourcePath: ., containerPath: /app }]
  defaultTarget: { kind: Deployment, name: web }
---
kind: Workflow
name: ci
steps:
  - command: [deploy]
---
kind: Command
name: hello
exec:
  command: [echo, hello]
`,
      'k8s/web.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: web }\n',
    });
    const cwd = process.cwd();
    process.chdir(root);
    try {
      const result = await validateCommand({ var: [] } as never);
      expect(result.exitCode).toBe(0);
      expect(result.data.actions.map((a) => a.ref)).toEqual(['deploy.web']);
      expect(result.data.workflows?.map((w) => w.name)).toEqual(['ci']);
      const notes = result.human.split('\n').filter((line) => line.startsWith('note: '));
      expect(notes).toEqual([
        'note: k8s/garden.yml:6:3: sync and defaultTarget: sync mode, local mode and port forwarding that tend accepts and ignores',
        'note: k8s/garden.yml:15:1: Command hello: custom commands are read from the files at the project root only (as Garden reads them); not offered',
      ]);
    } finally {
      process.chdir(cwd);
    }
  });

  it('0.12 modules become actions as Garden 0.13 converts them: exec with services, tasks and tests', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'tools/garden.yml': `kind: Module
type: exec
name: tools
build:
  command: [make, tools]
env: { A: "1" }
services:
  - name: api-dev
    deployCommand: [./run.sh, --dev]
    env: { B: "2" }
    dependencies: [migrate]
tasks:
  - name: migrate
    command: [echo, migrate]
tests:
  - name: unit
    command: [echo, test]
    dependencies: [api-dev]
`,
    });
    const loaded = await load(root);
    expect(loaded.actions.map((a) => [a.ref, a.type, a.dependencies, a.spec])).toEqual([
      ['build.tools', 'exec', [], { command: ['sh', '-c', 'make tools'], env: { A: '1' } }],
      [
        'deploy.api-dev',
        'exec',
        ['build.tools', 'run.migrate'],
        { command: ['sh', '-c', './run.sh --dev'], env: { A: '1', B: '2' } },
      ],
      ['run.migrate', 'exec', ['build.tools'], { command: ['sh', '-c', 'echo migrate'], env: { A: '1' } }],
      [
        'test.tools-unit',
        'exec',
        ['build.tools', 'deploy.api-dev'],
        { command: ['sh', '-c', 'echo test'], env: { A: '1' } },
      ],
    ]);
    expect(
      loaded.actions.every((a) => a.file === 'tools/garden.yml' && a.sourceDir === path.join(root, 'tools')),
    ).toBe(true);
  });

  it('a container module: its Build (a Dockerfile), tasks and tests run its image; a service is a container Deploy, hotReload (of the module, of a service, its hotReloadArgs) and allowPublish noted', async () => {
    const module = `kind: Module
type: container
name: web
tests:
  - name: unit
    args: [npm, test]
tasks:
  - name: seed
    command: [node, seed.js]
`;
    const root = makeProject({
      'project.garden.yml': gardenProject,
      'web/garden.yml': module,
      'web/Dockerfile': 'FROM node:22\n',
    });
    const image = '${actions.build.web.outputs.deploymentImageId}';
    expect((await load(root)).actions.map((a) => [a.ref, a.type, a.dependencies, a.spec])).toEqual([
      ['build.web', 'container', [], { dockerfile: 'Dockerfile' }],
      ['run.seed', 'kubernetes-pod', ['build.web'], { command: ['node', 'seed.js'], image }],
      ['test.web-unit', 'kubernetes-pod', ['build.web'], { args: ['npm', 'test'], image }],
    ]);

    const withService = makeProject({
      'project.garden.yml': gardenProject,
      'web/garden.yml': `${module}hotReload: { sync: [{ target: /app/src, source: src }] }
allowPublish: false
services:
  - name: web
    hotReload: { sync: [{ target: /app }] }
    hotReloadArgs: [npm, run, dev]
    ports: [{ name: http, containerPort: 8080 }]
`,
      'web/Dockerfile': 'FROM node:22\n',
    });
    const withDeploy = await load(withService);
    expect(withDeploy.actions.find((a) => a.ref === 'deploy.web')).toMatchObject({
      type: 'container',
      dependencies: ['build.web'],
      spec: { image, ports: [{ name: 'http', containerPort: 8080 }] },
    });
    expect(withDeploy.notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual([
      'web/garden.yml:10 hotReload: tend deploys what is on disk; ignored',
      'web/garden.yml:11 allowPublish: tend has no publish command; ignored',
      'web/garden.yml:14 hotReload: tend deploys what is on disk; ignored',
      'web/garden.yml:15 hotReloadArgs: tend deploys what is on disk; ignored',
    ]);
  });
});
