import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { removeProjects } from '../../helpers/project.js';
import {
  execute,
  kubectlJson,
  namespaceEvents,
  sessionEvents,
  shopProject,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

async function tendPods(): Promise<string[]> {
  const list = await kubectlJson<{ items: { metadata: { namespace: string; name: string } }[] }>(
    h.kubeconfig,
    'get',
    'pods',
    '--all-namespaces',
    '-l',
    'app.kubernetes.io/managed-by=tend',
  );
  return list.items.map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
}

describe.each(['cluster-buildkit', 'kaniko'] as const)('container builds with %s', (buildMode) => {
  const ns = `build-${buildMode === 'kaniko' ? 'kaniko' : 'bk'}`;

  it('builds the context in the cluster and pushes the image tagged with the version', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: ns,
      buildMode,
      repository: `r-${buildMode}`,
    });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(0);
    const build = result.data.actions[0]!;
    expect(build.outputs.image).toBe(`${h.sim.registryHost}/r-${buildMode}/api:${build.version}`);
    expect(build.outputs.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Garden's names of the same image, which Garden projects' actions read.
    expect(build.outputs.deploymentImageId).toBe(build.outputs.image);
    expect(build.outputs.deploymentImageName).toBe(`${h.sim.registryHost}/r-${buildMode}/api`);
    // The registry has the tag, with the digest tend reported.
    const head = await fetch(`${h.sim.registryUrl}/v2/r-${buildMode}/api/manifests/${build.version}`, {
      method: 'HEAD',
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('docker-content-digest')).toBe(build.outputs.digest);
    // The context honoured exclude (README.md) and .dockerignore (secret.txt), and configuration
    // (api.tend.yml) is not a source file: 4 files were sent.
    const manifest = JSON.parse(h.sim.registry.get(`r-${buildMode}/api`, build.version)!.body.toString()) as {
      annotations: Record<string, string>;
    };
    expect(manifest.annotations['dev.tend.kube-sim.files']).toBe('4');
    // Build output lines are log events of the build handler.
    const events = sessionEvents(root, result.data.sessionId);
    const lines = events
      .filter((e) => e.type === 'log' && e.payload.handler === 'build')
      .map((e) => String((e.payload as { message?: string }).message));
    expect(lines.some((l) => (buildMode === 'kaniko' ? /Pushed/.test(l) : /pushing manifest/.test(l)))).toBe(
      true,
    );
    // No builder pod left behind.
    expect(await tendPods()).toEqual([]);
    // The app namespace is recorded (role app, with uid) in this builds-only session.
    const app = namespaceEvents(events).filter((e) => e.namespaceName === ns);
    expect(app.some((e) => e.role === 'app' && e.state === 'ready' && e.namespaceUid)).toBe(true);
  });

  it('asks the registry for the status: a built version is cached, a changed one rebuilt', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: ns, buildMode });
    expect((await execute('build', root)).data.actions[0]!.state).toBe('ready');
    const again = await execute('build', root);
    expect(again.data.actions[0]!.state).toBe('cached');
    expect(again.data.actions[0]!.outputs.image).toContain(again.data.actions[0]!.version);
    const forced = await execute('build', root, [], { force: true });
    expect(forced.data.actions[0]!.state).toBe('ready');
  });

  it('a failing Dockerfile is a clear error with the build output; the namespace is still recorded', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: ns,
      buildMode,
      files: { 'api/Dockerfile': 'FROM alpine\n# kube-sim: fail npm ci exploded\nRUN npm ci\n' },
    });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(1);
    const error = result.data.actions[0]!.error!;
    expect(error.code).toBe('TEND_K8S_BUILD_FAILED');
    expect(error.message).toMatch(/build\.api: the image build failed/);
    const events = sessionEvents(root, result.data.sessionId);
    const logged = events.filter((e) => e.type === 'log').map((e) => JSON.stringify(e.payload));
    expect(logged.some((l) => /npm ci exploded/.test(l))).toBe(true);
    expect(namespaceEvents(events).some((e) => e.namespaceName === ns && e.role === 'app')).toBe(true);
    expect(await tendPods()).toEqual([]);
  });

  it("gives extraFlags to the builder as they are: an extra image is pushed, a flag it refuses fails the build in the builder's words", async () => {
    const buildOnly = (flags: string[]) =>
      `kind: Build\ntype: container\nname: api\nspec:\n  extraFlags: ${JSON.stringify(flags)}\n`;
    const extra = `${h.sim.registryHost}/extra-${buildMode}/api:one`;
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: ns,
      buildMode,
      files: {
        'api/api.tend.yml': buildOnly(
          buildMode === 'kaniko'
            ? [`--destination=${extra}`]
            : ['--output', `type=image,name=${extra},push=true`],
        ),
      },
    });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(0);
    const head = await fetch(`${h.sim.registryUrl}/v2/extra-${buildMode}/api/manifests/one`, {
      method: 'HEAD',
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('docker-content-digest')).toBe(result.data.actions[0]!.outputs.digest);

    // `--load` is docker buildx's: buildctl and Kaniko refuse it, and the build says so.
    const refused = shopProject({
      registry: h.sim.registryHost,
      namespace: ns,
      buildMode,
      files: { 'api/api.tend.yml': buildOnly(['--load']) },
    });
    const failed = await execute('build', refused);
    expect(failed.exitCode).toBe(1);
    const error = failed.data.actions[0]!.error!;
    expect(error.code).toBe('TEND_K8S_BUILD_FAILED');
    expect(error.message).toMatch(/build\.api: the image build failed/);
    const logged = sessionEvents(refused, failed.data.sessionId)
      .filter((e) => e.type === 'log')
      .map((e) => JSON.stringify(e.payload));
    const refusal = buildMode === 'kaniko' ? /unknown flag: --load/ : /flag provided but not defined: -load/;
    expect(logged.some((l) => refusal.test(l))).toBe(true);
    expect(await tendPods()).toEqual([]);
  });

  it('a missing Dockerfile is a clear error before anything runs in the cluster', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: ns,
      buildMode,
      files: {
        'api/api.tend.yml': 'kind: Build\ntype: container\nname: api\nspec: { dockerfile: docker/Nope }\n',
      },
    });
    const result = await execute('build', root);
    expect(result.data.actions[0]!.error).toMatchObject({ code: 'TEND_K8S_BUILD_FAILED' });
    expect(result.data.actions[0]!.error!.message).toMatch(/no Dockerfile at .*docker\/Nope/);
    const events = sessionEvents(root, result.data.sessionId);
    expect(namespaceEvents(events).some((e) => e.namespaceName === ns && e.role === 'app')).toBe(true);
  });
});

describe('a missing context directory', () => {
  it('is a configuration error naming the directory when it is missing at load time', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'build-nocontext',
      files: { 'api/api.tend.yml': 'kind: Build\ntype: container\nname: api\nsource: ./does-not-exist\n' },
    });
    await expect(execute('build', root)).rejects.toMatchObject({
      code: 'TEND_CONFIG_INVALID',
      message: expect.stringMatching(/does-not-exist.*does not exist/),
    });
  });

  it('is a clear build error when it is gone by the time the build runs; the namespace is still recorded', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'build-context-gone',
      providerExtra: '  - name: exec\n',
      files: {
        'api/api.tend.yml': `kind: Run
type: exec
name: prune
spec: { command: [rm, -rf, gen] }
---
kind: Build
type: container
name: api
source: ./gen
dependencies: [run.prune]
`,
        'api/gen/Dockerfile': 'FROM alpine\n',
      },
    });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(1);
    const build = result.data.actions.find((a) => a.ref === 'build.api')!;
    expect(build.error?.code).toBe('TEND_K8S_BUILD_FAILED');
    expect(build.error?.message).toMatch(/the build context directory .*gen does not exist/);
    const events = sessionEvents(root, result.data.sessionId);
    expect(
      namespaceEvents(events).some(
        (e) => e.namespaceName === 'build-context-gone' && e.role === 'app' && e.namespaceUid,
      ),
    ).toBe(true);
  });
});

it('a build without deploymentRegistry says what to configure', async () => {
  const root = shopProject({ registry: h.sim.registryHost, namespace: 'build-noregistry' });
  const { readFileSync, writeFileSync } = await import('node:fs');
  const file = `${root}/tend.yml`;
  writeFileSync(file, readFileSync(file, 'utf8').replace(/ {4}deploymentRegistry: .*\n/, ''));
  const result = await execute('build', root);
  expect(result.data.actions[0]!.error?.message).toMatch(/needs `deploymentRegistry`/);
});
