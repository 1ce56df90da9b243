/**
 * `tend init` through the real CLI, in directories the tests build: what it finds and writes,
 * that `tend validate` accepts what it wrote, that an exec project it wrote really deploys and a
 * Kubernetes one deploys into kube-sim, and every refusal (nothing overwritten, nothing written).
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { InitData } from '../../src/commands/init.js';
import { freePort, makeProject, removeProjects, repoRoot, runTend, waitFor } from '../helpers/project.js';
import { kubectlJson, startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';

beforeAll(() => {
  if (!existsSync(path.join(repoRoot, 'dist', 'cli', 'tend.cjs'))) {
    throw new Error('run `npm run build` first: this test runs the built CLI');
  }
});
afterEach(removeProjects);

/** Every file below `dir` (not .tend), relative, sorted. */
function filesOf(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !path.relative(dir, e.parentPath).startsWith('.tend'))
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

async function init(root: string, ...args: string[]): Promise<InitData> {
  const run = await runTend(['init', '--json', ...args], { cwd: root });
  expect(run.code, run.stdout + run.stderr).toBe(0);
  return JSON.parse(run.stdout) as InitData;
}

async function validate(root: string, env: Record<string, string> = {}) {
  const run = await runTend(['validate', '--json'], { cwd: root, env });
  expect(run.code, run.stdout + run.stderr).toBe(0);
  return JSON.parse(run.stdout) as {
    project: string;
    namespace: string;
    actions: { ref: string; dependencies: string[] }[];
  };
}

describe('tend init, exec', () => {
  it('a package.json start script becomes an exec Deploy that tend deploy runs', async () => {
    const port = await freePort();
    // The project is named after its directory, made a name.
    const project = path.join(makeProject({}), 'My_Shop.v2');
    mkdirSync(project);
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'shop', scripts: { start: 'node server.js' } }),
    );
    writeFileSync(
      path.join(project, 'server.js'),
      `require('node:http').createServer((q, s) => s.end('up')).listen(${port}, '127.0.0.1');\n`,
    );
    const data = await init(project);
    expect(data.project).toBe('my-shop-v2');
    expect(data.actions).toEqual([
      expect.objectContaining({ ref: 'deploy.my-shop-v2', type: 'exec', file: 'tend.yml' }),
    ]);
    expect(data.actions[0]!.because).toMatch(/package\.json has a start script \(node server\.js\)/);
    expect(data.files.map((f) => [f.path, f.written])).toEqual([['tend.yml', true]]);
    // The Project document: environment dev, the namespace per user, a cleanup policy.
    const [projectDoc] = parseAllDocuments(readFileSync(path.join(project, 'tend.yml'), 'utf8')).map((d) =>
      d.toJS(),
    ) as Record<string, unknown>[];
    expect(projectDoc).toMatchObject({
      kind: 'Project',
      name: 'my-shop-v2',
      defaultEnvironment: 'dev',
      environments: [
        {
          name: 'dev',
          defaultNamespace: 'my-shop-v2-${local.username}',
          cleanup: { afterInactivity: '8h', action: 'delete' },
        },
      ],
      providers: [{ name: 'exec' }],
    });

    const valid = await validate(project);
    expect(valid.namespace).toBe(`my-shop-v2-${os.userInfo().username}`);
    expect(valid.actions.map((a) => a.ref)).toEqual(['deploy.my-shop-v2']);

    const deploy = await runTend(['deploy'], { cwd: project, timeoutMs: 60_000 });
    expect(deploy.code, deploy.stdout + deploy.stderr).toBe(0);
    const answer = await waitFor(
      async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined))?.text(),
      'the deployed server',
    );
    expect(answer).toBe('up');
    const cleanup = await runTend(['cleanup', 'env'], { cwd: project });
    expect(cleanup.code, cleanup.stderr).toBe(0);
    await waitFor(
      async () =>
        await fetch(`http://127.0.0.1:${port}/`).then(
          () => false,
          () => true,
        ),
      'the server to stop',
    );
  }, 90_000);

  it('an empty directory gets a tend.yml with the project and its environment only', async () => {
    const root = makeProject({ 'README.md': '# nothing here\n' });
    const run = await runTend(['init'], { cwd: root });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Found nothing to build or deploy/);
    expect(run.stdout).toMatch(/Wrote:\n {2}tend\.yml/);
    const valid = await validate(root);
    expect(valid.actions).toEqual([]);
  });

  it('--help explains what it detects and that it never overwrites', async () => {
    const run = await runTend(['init', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Dockerfile is a container Build/);
    expect(run.stdout).toMatch(/never overwrites/);
    expect(run.stdout).toMatch(/--dry-run/);
  });
});

describe('tend init refuses, and writes nothing', () => {
  it('an existing tend.yml: exit 2 naming it, the file unchanged', async () => {
    const text = 'kind: Project\nname: mine\nenvironments: [{ name: dev }]\n';
    const root = makeProject({ 'tend.yml': text, Dockerfile: 'FROM scratch\n' });
    const run = await runTend(['init'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: tend\.yml: tend configuration exists already in /);
    expect(readFileSync(path.join(root, 'tend.yml'), 'utf8')).toBe(text);
    expect(filesOf(root)).toEqual(['Dockerfile', 'tend.yml']);
  });

  it('an action file without a tend.yml: exit 2 naming it (TEND_INIT_EXISTS under --json)', async () => {
    const root = makeProject({ 'api/api.tend.yml': 'kind: Build\ntype: exec\nname: api\n' });
    const run = await runTend(['init', '--json'], { cwd: root });
    expect(run.code).toBe(2);
    const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('TEND_INIT_EXISTS');
    expect(error.message).toMatch(/^api\/api\.tend\.yml: /);
    expect(filesOf(root)).toEqual(['api/api.tend.yml']);
  });

  it('inside a tend project: exit 2 naming its tend.yml', async () => {
    const root = makeProject({ 'tend.yml': 'kind: Project\n', 'sub/Dockerfile': 'FROM scratch\n' });
    const run = await runTend(['init', '--root', path.join(root, 'sub')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `${path.join(root, 'tend.yml')}: ${path.join(root, 'sub')} is inside that tend project`,
    );
    expect(filesOf(root)).toEqual(['sub/Dockerfile', 'tend.yml']);
  });

  it('a --root that is not a directory: exit 2', async () => {
    const root = makeProject({ file: 'x' });
    for (const where of [path.join(root, 'nope'), path.join(root, 'file')]) {
      const run = await runTend(['init', '--root', where]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/no such directory/);
    }
    expect(filesOf(root)).toEqual(['file']);
  });

  it('a Garden project: exit 2 saying tend is to read it, nothing written; --dry-run shows the rest', async () => {
    const root = makeProject({
      'project.garden.yml':
        'apiVersion: garden.io/v1\nkind: Project\nname: shop\nenvironments: [{ name: local }]\n',
      'api/garden.yml': 'kind: Build\ntype: container\nname: api\n',
      'api/Dockerfile': 'FROM scratch\n',
    });
    const run = await runTend(['init'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /api\/garden\.yml, project\.garden\.yml: a Garden project\. tend is to read Garden projects/,
    );
    expect(run.stderr).toMatch(/tend init --dry-run shows what it would write/);
    const dry = await init(root, '--dry-run');
    expect(dry.garden).toEqual(['api/garden.yml', 'project.garden.yml']);
    expect(dry.files.map((f) => [f.path, f.written])).toEqual([
      ['tend.yml', false],
      ['api/api.tend.yml', false],
    ]);
    expect(filesOf(root)).toEqual(['api/Dockerfile', 'api/garden.yml', 'project.garden.yml']);
  });
});

describe('tend init, Kubernetes', () => {
  let h: SimHandle;
  beforeAll(async () => {
    h = await startSim();
  });
  afterAll(async () => {
    await h?.stop();
  });

  const deployment = (name: string, image?: string, namespace?: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}${namespace ? `\n  namespace: ${namespace}` : ''}
spec:
  replicas: 1
  selector: { matchLabels: { app: ${name} } }
  template:
    metadata: { labels: { app: ${name} } }
    spec:
      containers:
        - name: ${name}${image ? `\n          image: ${image}` : ''}
`;

  it('Dockerfiles, manifests and a kustomization: init, validate, then tend deploy into kube-sim', async () => {
    const root = makeProject({
      // A service with its image built from its Dockerfile, its manifests under k8s/.
      'api/Dockerfile': 'FROM node:20-alpine\nCOPY . /app\nCMD ["node", "/app/main.js"]\n',
      'api/main.js': 'console.log("hello")\n',
      'api/k8s/deployment.yaml': `${deployment('api')}---\napiVersion: v1\nkind: Service\nmetadata: { name: api }\nspec:\n  selector: { app: api }\n  ports: [{ port: 8080 }]\n`,
      // A dependency with a public image; a Namespace that tend must leave out.
      'cache/cache.yaml': deployment('cache', 'redis:7'),
      'k8s/namespace.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata: { name: shop }\n',
      // A kustomization with a base and two overlays: the dev one is deployed.
      'web/kustomize/base/kustomization.yaml': 'resources: [deployment.yaml]\n',
      'web/kustomize/base/deployment.yaml': deployment('web', 'nginx:1.27'),
      'web/kustomize/overlays/dev/kustomization.yaml': 'namespace: web\nresources: [../../base]\n',
      'web/kustomize/overlays/prod/kustomization.yaml': 'namespace: web-prod\nresources: [../../base]\n',
      // Not manifests: a broken one, a docker-compose file, a chart.
      'broken/bad.yaml': 'apiVersion: v1\nkind: [\n',
      'docker-compose.yml': 'services: { api: { build: ./api } }\n',
      'chart/Chart.yaml': 'apiVersion: v2\nname: chart\nversion: 0.1.0\n',
      'chart/templates/deployment.yaml': 'apiVersion: apps/v1\nkind: {{ .Values.kind }}\n',
    });
    const data = await init(root);
    const refs = data.actions.map((a) => [a.ref, a.type, a.file, a.dependencies]);
    expect(refs).toEqual([
      ['build.api', 'container', 'api/api.tend.yml', []],
      ['deploy.web', 'kubernetes', 'web/web.tend.yml', []],
      ['deploy.api', 'kubernetes', 'api/api.tend.yml', ['build.api']],
      ['deploy.cache', 'kubernetes', 'cache/cache.tend.yml', []],
    ]);
    expect(data.providers).toEqual(['kubernetes']);
    const web = data.actions.find((a) => a.ref === 'deploy.web')!;
    expect(web.because).toMatch(/the overlay for development among dev, prod/);
    expect(web.notes.join('\n')).toMatch(/sets namespace: web; overrideNamespace: true/);
    const leftOut = Object.fromEntries(data.leftOut.map((l) => [l.path, l.because]));
    expect(leftOut['k8s/namespace.yaml']).toMatch(/Namespace shop: cluster-scoped/);
    expect(leftOut['web/kustomize/overlays/prod/kustomization.yaml']).toMatch(/another overlay/);
    expect(leftOut['broken/bad.yaml']).toMatch(/not valid YAML/);
    expect(leftOut.chart).toMatch(/a Helm chart/);
    expect(Object.keys(leftOut)).not.toContain('docker-compose.yml');
    const apiFile = readFileSync(path.join(root, 'api/api.tend.yml'), 'utf8');
    expect(apiFile).toContain('image: ${actions.build.api.outputs.image}');
    expect(apiFile).toContain('files: [k8s/deployment.yaml]');

    const env = { KUBECONFIG: h.kubeconfig };
    const valid = await validate(root, env);
    expect(valid.actions.map((a) => a.ref).sort()).toEqual([
      'build.api',
      'deploy.api',
      'deploy.cache',
      'deploy.web',
    ]);

    const deploy = await runTend(['deploy', '--var', `registry=${h.sim.registryHost}`], {
      cwd: root,
      env,
      timeoutMs: 120_000,
    });
    expect(deploy.code, deploy.stdout + deploy.stderr).toBe(0);
    const namespace = valid.namespace;
    const image = (name: string) =>
      kubectlJson<{ spec: { template: { spec: { containers: { image: string }[] } } } }>(
        h.kubeconfig,
        '-n',
        namespace,
        'get',
        'deployment',
        name,
      ).then((d) => d.spec.template.spec.containers[0]!.image);
    expect(await image('api')).toMatch(
      new RegExp(`^${h.sim.registryHost}/${valid.project}/api:v-[0-9a-f]+$`),
    );
    expect(await image('cache')).toBe('redis:7');
    expect(await image('web')).toBe('nginx:1.27');
  }, 180_000);
});
