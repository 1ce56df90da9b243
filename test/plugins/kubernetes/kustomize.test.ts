/**
 * `kustomize:` on the kubernetes Deploy, against kube-sim with the real kubectl (`kubectl
 * kustomize`): a base and its overlays as projects ship them (fixtures/kustomize), the version
 * over the rendered manifests, namespaces the overlays name, and what goes wrong.
 */
import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  appendFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../../src/config/pipeline.js';
import type { TendError } from '../../../src/errors.js';
import { kustomizeMessage } from '../../../src/plugins/kubernetes/kustomize.js';
import { makeProject, removeProjects, startTend, waitFor } from '../../helpers/project.js';
import {
  execute,
  fixtureFiles,
  kubectlJson,
  plugins,
  projectYaml,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

const deployYaml = (spec: string) => `kind: Deploy
type: kubernetes
name: web
spec:
${spec}
  timeout: 20
`;

/** A project whose Deploy `web` (in web/) renders a kustomization of fixtures/kustomize, copied to `k8sDir`. */
function kustomizeProject(
  namespace: string,
  spec: string,
  k8sDir = 'web/k8s',
  extra: Record<string, string> = {},
) {
  return makeProject({
    'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
    'web/web.tend.yml': deployYaml(spec),
    ...fixtureFiles('kustomize', k8sDir),
    ...extra,
  });
}

interface Container {
  image: string;
  env?: { name: string; value: string }[];
  envFrom?: { configMapRef: { name: string } }[];
}
interface DeploymentJson {
  metadata: { namespace: string; labels: Record<string, string> };
  spec: {
    replicas: number;
    template: { spec: { containers: Container[]; volumes: { configMap: { name: string } }[] } };
  };
  status: { availableReplicas?: number };
}
interface ConfigMapJson {
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  data: Record<string, string>;
}

const get = <T>(namespace: string, ...what: string[]) =>
  kubectlJson<T>(h.kubeconfig, '-n', namespace, 'get', ...what);

/** The name of the generated ConfigMap the Deployment uses, and that ConfigMap. */
async function generatedConfig(namespace: string) {
  const deployment = await get<DeploymentJson>(namespace, 'deployment', 'web');
  const name = deployment.spec.template.spec.containers[0]!.envFrom![0]!.configMapRef.name;
  return { deployment, name, configMap: await get<ConfigMapJson>(namespace, 'configmap', name) };
}

describe('kustomize', () => {
  it('renders base + overlay (kubectl kustomize) and applies it into the environment namespace: image override, patches, generated ConfigMap', async () => {
    const root = kustomizeProject('kz-dev', '  kustomize: { path: k8s/overlays/dev }');
    const result = await execute('deploy', root);
    expect(result.data.actions.map((a) => [a.ref, a.state, a.error?.message])).toEqual([
      ['deploy.web', 'ready', undefined],
    ]);
    const { deployment, name, configMap } = await generatedConfig('kz-dev');
    // images: newTag
    const container = deployment.spec.template.spec.containers[0]!;
    expect(container.image).toBe('ghcr.io/example/web:1.1.0-dev');
    // The strategic merge patch: two replicas, DEBUG added to the container the base defines.
    expect(deployment.spec.replicas).toBe(2);
    expect(container.env).toEqual([{ name: 'DEBUG', value: 'true' }]);
    expect(deployment.status.availableReplicas).toBe(2);
    // configMapGenerator: a name with the hash of its content, used by envFrom and the volume alike.
    expect(name).toMatch(/^web-config-[a-z0-9]{10}$/);
    expect(deployment.spec.template.spec.volumes[0]!.configMap.name).toBe(name);
    expect(configMap.data).toEqual({ LOG_LEVEL: 'debug', 'app.properties': 'greeting=hello\n' });
    // The JSON 6902 patch.
    const service = await get<{ spec: { ports: { port: number }[] } }>('kz-dev', 'service', 'web');
    expect(service.spec.ports[0]!.port).toBe(8080);
    // Everything in the environment's namespace, labelled as the action's.
    for (const object of [deployment, configMap]) {
      expect(object.metadata.namespace).toBe('kz-dev');
      expect(object.metadata.labels).toMatchObject({
        'tend.dev/action': 'deploy.web',
        'app.kubernetes.io/name': 'web',
      });
    }
  });

  it("the version covers the rendered manifests: a change to the base outside the action's source redeploys, a comment does not", async () => {
    // The Deploy lives in web/, its kustomization in k8s/: no source file of the action.
    const root = kustomizeProject('kz-version', '  kustomize: { path: ../k8s/overlays/dev }', 'k8s');
    const first = await execute('deploy', root);
    expect(first.data.actions[0]!.state).toBe('ready');
    const before = await generatedConfig('kz-version');
    expect((await execute('deploy', root)).data.actions[0]).toMatchObject({
      state: 'cached',
      version: first.data.actions[0]!.version,
    });

    // The same rendering: the same version.
    appendFileSync(path.join(root, 'k8s', 'base', 'kustomization.yaml'), '# reviewed\n');
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('cached');

    writeFileSync(path.join(root, 'k8s', 'base', 'config', 'app.properties'), 'greeting=hi\n');
    const changed = await execute('deploy', root);
    expect(changed.data.actions[0]!.state).toBe('ready');
    expect(changed.data.actions[0]!.version).not.toBe(first.data.actions[0]!.version);
    const after = await generatedConfig('kz-version');
    expect(after.name).not.toBe(before.name);
    expect(after.configMap.data['app.properties']).toBe('greeting=hi\n');
  });

  it('a kept rendering that was damaged (edited, cut short) is rendered again: what is deployed is what kustomize prints', async () => {
    const root = kustomizeProject('kz-kept', '  kustomize: { path: k8s/overlays/dev }');
    const first = await execute('deploy', root);
    expect(first.data.actions[0]!.state).toBe('ready');
    const keptDir = path.join(root, '.tend', 'cache', 'kustomize');
    const [kept] = readdirSync(keptDir);
    const file = path.join(keptDir, kept!);
    const whole = readFileSync(file, 'utf8');
    expect(whole).toContain('ghcr.io/example/web:1.1.0-dev');
    for (const damaged of [whole.replace('1.1.0-dev', '6.6.6-evil'), whole.slice(0, whole.length / 2)]) {
      writeFileSync(file, damaged);
      const again = await execute('deploy', root, [], { force: true });
      expect(again.data.actions[0]).toMatchObject({
        state: 'ready',
        version: first.data.actions[0]!.version,
      });
      const { deployment, configMap } = await generatedConfig('kz-kept');
      expect(deployment.spec.template.spec.containers[0]!.image).toBe('ghcr.io/example/web:1.1.0-dev');
      expect(deployment.spec.replicas).toBe(2);
      expect(configMap.data['app.properties']).toBe('greeting=hello\n');
      // Replaced by the rendering kustomize printed.
      expect(readFileSync(file, 'utf8')).toBe(whole);
    }
  });

  it('an overlay that names its namespace is refused; with overrideNamespace it lands in the environment namespace, its RoleBinding subject too', async () => {
    const refused = kustomizeProject('kz-staging', '  kustomize: { path: k8s/overlays/staging }');
    const result = await execute('deploy', refused);
    expect(result.exitCode).toBe(2);
    expect(result.data.actions[0]!.error).toMatchObject({ code: 'TEND_K8S_MANIFEST_INVALID' });
    expect(result.data.actions[0]!.error!.message).toBe(
      'deploy.web: kustomize k8s/overlays/staging#1: ServiceAccount web sets namespace "web-staging", ' +
        'but tend deploys into "kz-staging"; remove metadata.namespace, or set `overrideNamespace: true`',
    );

    const root = kustomizeProject(
      'kz-staging',
      '  kustomize: { path: k8s/overlays/staging }\n  overrideNamespace: true',
    );
    const deployed = await execute('deploy', root);
    expect(deployed.data.actions.map((a) => [a.state, a.error?.message])).toEqual([['ready', undefined]]);
    const { deployment, configMap } = await generatedConfig('kz-staging');
    expect(deployment.spec.template.spec.containers[0]!.image).toBe('registry.example.com/web:1.1.0');
    expect(configMap.data.LOG_LEVEL).toBe('info');
    const binding = await get<{ subjects: { kind: string; name: string; namespace: string }[] }>(
      'kz-staging',
      'rolebinding',
      'web-reader',
    );
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'web', namespace: 'kz-staging' }]);
    await get('kz-staging', 'serviceaccount', 'web');
    await get('kz-staging', 'role', 'web-reader');
    expect(h.sim.store.get('namespaces', '', 'web-staging')).toBeUndefined();
  });

  it('extraArgs reach kustomize: a file outside the kustomization needs --load-restrictor LoadRestrictionsNone', async () => {
    const files = {
      'web/k8s/app/kustomization.yaml':
        'configMapGenerator:\n  - name: regional\n    files: [../settings/settings.properties]\n',
      'web/k8s/settings/settings.properties': 'region=eu\n',
    };
    const restricted = kustomizeProject('kz-args', '  kustomize: { path: k8s/app }', 'web/k8s', files);
    const refused = await execute('deploy', restricted);
    expect(refused.exitCode).toBe(2);
    expect(refused.data.actions[0]!.error!.message).toMatch(
      /^deploy\.web: kubectl kustomize k8s\/app failed: .*settings\.properties.*is not in or below/s,
    );

    const root = kustomizeProject(
      'kz-args',
      '  kustomize: { path: k8s/app, extraArgs: [--load-restrictor, LoadRestrictionsNone] }',
      'web/k8s',
      files,
    );
    expect((await execute('deploy', root)).data.actions[0]!.state).toBe('ready');
    const configMaps = await get<{ items: ConfigMapJson[] }>(
      'kz-args',
      'configmaps',
      '-l',
      'tend.dev/action=deploy.web',
    );
    expect(configMaps.items.map((c) => c.data)).toEqual([{ 'settings.properties': 'region=eu\n' }]);
  });

  it("a kustomization kustomize cannot build is a configuration error (exit 2) with kustomize's message", async () => {
    const root = kustomizeProject('kz-bad', '  kustomize: { path: k8s/broken }', 'web/k8s', {
      'web/k8s/broken/kustomization.yaml': 'resources: [../base, missing.yaml]\n',
    });
    const result = await execute('deploy', root);
    expect(result.exitCode).toBe(2);
    expect(result.data.actions[0]!.error!.code).toBe('TEND_K8S_MANIFEST_INVALID');
    // kubectl's log line around the message is left out.
    expect(result.data.actions[0]!.error!.message).toMatch(
      /^deploy\.web: kubectl kustomize k8s\/broken failed: accumulating resources: accumulation err='accumulating resources from 'missing\.yaml': .*no such file or directory/,
    );

    const notYaml = kustomizeProject('kz-bad', '  kustomize: { path: k8s/broken }', 'web/k8s', {
      'web/k8s/broken/kustomization.yaml': 'resources: [\n',
    });
    const yamlError = await execute('deploy', notYaml);
    expect(yamlError.exitCode).toBe(2);
    expect(yamlError.data.actions[0]!.error!.message).toBe(
      'deploy.web: kubectl kustomize k8s/broken failed: invalid Kustomization: yaml: line 1: did not find expected node content',
    );

    const nowhere = kustomizeProject('kz-bad', '  kustomize: { path: k8s/nowhere }');
    const missing = await execute('deploy', nowhere);
    expect(missing.exitCode).toBe(2);
    expect(missing.data.actions[0]!.error!.message).toBe(
      `deploy.web: kustomize.path k8s/nowhere is not a directory (looked in ${path.join(nowhere, 'web')})`,
    );
  });

  it("--watch redeploys when a base outside the action's source changes, though no action has it as a source", async () => {
    const root = kustomizeProject('kz-watch', '  kustomize: { path: ../k8s/overlays/dev }', 'k8s');
    const tend = startTend(['deploy', '--watch', '--json'], {
      cwd: root,
      env: { KUBECONFIG: h.kubeconfig },
      timeoutMs: 120_000,
    });
    const rounds = () =>
      tend
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{"changed"'))
        .map((line) => JSON.parse(line) as { changed: string[]; actions: { ref: string; state: string }[] });
    const round = (n: number) => waitFor(() => rounds()[n - 1], `round ${n}\n${tend.stderr()}`, 60_000);
    expect((await round(1)).actions.map((a) => [a.ref, a.state])).toEqual([['deploy.web', 'ready']]);
    await tend.waitForOutput(/watch: watching /, 'the watch to start');
    const before = await generatedConfig('kz-watch');

    writeFileSync(path.join(root, 'k8s', 'base', 'config', 'app.properties'), 'greeting=hi\n');
    const second = await round(2);
    expect(second.changed).toEqual([path.join('k8s', 'base', 'config', 'app.properties')]);
    expect(second.actions.map((a) => [a.ref, a.state])).toEqual([['deploy.web', 'ready']]);
    const after = await generatedConfig('kz-watch');
    expect(after.name).not.toBe(before.name);
    expect(after.configMap.data['app.properties']).toBe('greeting=hi\n');

    tend.signal('SIGINT');
    const ended = await tend.exited;
    expect(ended.code, ended.stderr).toBe(130);
    expect(tend.stderr()).not.toMatch(/ignored k8s/);
  }, 120_000);

  it('a kustomize spec that does not match its schema is a configuration error at its line', async () => {
    const errorOf = async (spec: string) => {
      const root = kustomizeProject('kz-schema', spec);
      const thrown = await loadProjectConfig({ cwd: root, plugins }).catch((e: unknown) => e);
      expect(thrown).toMatchObject({ exitCode: 2 });
      return (thrown as TendError).toString().split('\n');
    };
    expect(await errorOf('  kustomize: { paht: k8s/overlays/dev }')).toEqual([
      'web/web.tend.yml:5:14: missing required key "path" in spec.kustomize',
      'web/web.tend.yml:5:16: unknown key "paht" in spec.kustomize; did you mean "path"? expected one of: path, extraArgs, version',
      '(2 configuration errors)',
    ]);
    expect(await errorOf('  kustomize: { path: k8s }\n  overrideNamespace: sure')).toEqual([
      'web/web.tend.yml:6:22: invalid value for spec.overrideNamespace: expected true or false, got "sure"',
    ]);
    // A NUL or a lone surrogate in a path or an argument names no file and is no argument: refused
    // here, not at run time.
    const pattern = '/^(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])+$/';
    expect(await errorOf('  kustomize: { path: k8s, extraArgs: ["a\\u0000b"] }')).toEqual([
      `web/web.tend.yml:5:39: invalid value for spec.kustomize.extraArgs[0]: expected a string matching ${pattern}, got "a\\u0000b"`,
    ]);
    expect(await errorOf('  kustomize: { path: k8s, extraArgs: ["a\\ud800b"] }')).toEqual([
      `web/web.tend.yml:5:39: invalid value for spec.kustomize.extraArgs[0]: expected a string matching ${pattern}, got "a\\ud800b"`,
    ]);
    // A surrogate pair is text.
    const emoji = kustomizeProject('kz-schema', '  kustomize: { path: k8s, extraArgs: ["--flag=😀"] }');
    await expect(loadProjectConfig({ cwd: emoji, plugins })).resolves.toBeDefined();
    expect(await errorOf('  files: ["k8s/\\u0000.yaml"]')).toHaveLength(1);
    expect(await errorOf('  files: ["k8s/\\udc00.yaml"]')).toHaveLength(1);
    // Garden's kustomize major version: 4 or 5 are accepted (and loaded), nothing else.
    expect(await errorOf('  kustomize: { path: k8s, version: 3 }')).toEqual([
      'web/web.tend.yml:5:36: invalid value for spec.kustomize.version: expected one of: 4, 5, got number 3',
    ]);
    await loadProjectConfig({
      cwd: kustomizeProject('kz-schema', '  kustomize: { path: k8s, version: 5 }'),
      plugins,
    });
  });

  it("kustomize's message without kubectl's log line around it", () => {
    expect(
      kustomizeMessage(
        'E1202 11:27:12.153703   20810 run.go:72] "command failed" err="invalid Kustomization: \\"x\\" is not \'y\'"\n',
      ),
    ).toBe('invalid Kustomization: "x" is not \'y\'');
    // The kustomize program's own form.
    expect(kustomizeMessage("Error: accumulating resources: 'missing.yaml'\n")).toBe(
      "accumulating resources: 'missing.yaml'",
    );
  });

  describe('which program renders', () => {
    const originalPath = process.env.PATH;
    const dirs: string[] = [];
    afterEach(() => {
      process.env.PATH = originalPath;
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    });
    const tempDir = () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-path-'));
      dirs.push(dir);
      return dir;
    };

    it('the kustomize program when it is on PATH (`kustomize build <path>`)', async () => {
      // No kustomize release is installed here: a `kustomize` that records its arguments and
      // renders with kubectl's built-in kustomize, as `kustomize build` would.
      const bin = tempDir();
      writeFileSync(
        path.join(bin, 'kustomize'),
        `#!/bin/sh\necho "$@" >> "${bin}/calls"\nshift\nexec /usr/bin/kubectl kustomize "$@"\n`,
      );
      chmodSync(path.join(bin, 'kustomize'), 0o755);
      process.env.PATH = `${bin}${path.delimiter}${originalPath}`;
      const root = kustomizeProject('kz-program', '  kustomize: { path: k8s/overlays/dev }');
      expect((await execute('deploy', root)).data.actions[0]!.state).toBe('ready');
      const calls = readFileSync(path.join(bin, 'calls'), 'utf8').trim().split('\n');
      // Once for the command: the version, the status and the deploy read the same rendering.
      expect(calls).toEqual([`build ${path.join(root, 'web', 'k8s', 'overlays', 'dev')}`]);
    });

    it('neither kustomize nor kubectl on PATH: TEND_TOOL_NOT_FOUND naming what to install, exit 2', async () => {
      process.env.PATH = tempDir();
      const root = kustomizeProject('kz-no-tool', '  kustomize: { path: k8s/overlays/dev }');
      const result = await execute('deploy', root);
      expect(result.exitCode).toBe(2);
      expect(result.data.actions[0]!.error).toMatchObject({
        code: 'TEND_TOOL_NOT_FOUND',
        message: expect.stringMatching(
          /^deploy\.web: kustomize: neither kustomize nor kubectl is on PATH; install kubectl/,
        ),
      });
    });
  });
});
