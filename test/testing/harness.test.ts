/**
 * The plugin contract harness (`tend/testing`, src/testing/): the example third-party plugin
 * (examples/plugin-configmap) keeps the contract against kube-sim; a plugin that writes into a
 * namespace with its own Kubernetes client is caught from kube-sim's request log, by namespace.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../../tools/kube-sim/src/index.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import {
  checkPluginContract,
  kubeSimWire,
  PluginContractError,
  runPluginContract,
} from '../../src/testing/index.js';
import { copyExample, makeProject, removeProjects, repoRoot } from '../helpers/project.js';

let handle: SimHandle;
let sim: KubeSim;
let kubeconfig: string;
/** A directory for the tests' plugin files: the simulator's own, removed with it. */
let dir: string;

beforeAll(async () => {
  handle = await startSim();
  ({ sim, kubeconfig } = handle);
  dir = path.dirname(kubeconfig);
});

afterAll(async () => {
  await handle.stop();
  removeProjects();
});

const exampleProject = () => copyExample('plugin-configmap', { dependencies: true });

const wire = () => kubeSimWire({ url: sim.url, token: sim.token, caPem: sim.caPem });

describe('the plugin contract harness', () => {
  it('passes the example configmap plugin, each namespace it touched reported', async () => {
    const root = exampleProject();
    const report = await checkPluginContract({ root, plugin: 'configmap', wire: wire(), kubeconfig });
    expect(report.failures).toEqual([]);
    expect(report.calls.map((c) => c.handler)).toEqual([
      'provider.init',
      'provider.getEnvironmentStatus',
      'provider.prepareEnvironment',
      'Deploy.configmap.getStatus',
      'Deploy.configmap.deploy',
      'Deploy.configmap.delete',
      'provider.cleanupEnvironment',
    ]);
    const deploy = report.calls.find((c) => c.handler === 'Deploy.configmap.deploy')!;
    const namespace = deploy.touched[0]!;
    expect(namespace).toMatch(/^greeter-/);
    expect(deploy).toMatchObject({ touched: [namespace], reported: [namespace], unreported: [] });
    // The wire really saw the ConfigMap written there, through the tracked client.
    const writes = sim.requests
      .list()
      .filter((r) => r.namespace === namespace && r.resource === 'configmaps' && r.verb === 'patch');
    expect(writes.length).toBeGreaterThan(0);
    // cleanupEnvironment deleted the namespace tend created.
    expect(sim.store.get('namespaces', '', namespace)).toBeUndefined();
  });

  it('passes the built-in kubernetes plugin: its wire matches its events too', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: builtin
environments: [{ name: dev, defaultNamespace: builtin-app }]
providers: [{ name: kubernetes, context: kube-sim }]
---
kind: Deploy
type: kubernetes
name: d
spec:
  manifests:
    - { apiVersion: v1, kind: ConfigMap, metadata: { name: settings }, data: { a: b } }
---
kind: Test
type: kubernetes-pod
name: t
spec: { image: alpine, command: [sh, -c, "echo ok"] }
`,
    });
    const report = await checkPluginContract({ root, plugin: 'kubernetes', wire: wire(), kubeconfig });
    expect(report.calls.map((c) => [c.handler, c.touched])).toEqual([
      ['provider.init', []],
      ['provider.getEnvironmentStatus', ['builtin-app']],
      ['provider.prepareEnvironment', ['builtin-app']],
      ['Deploy.kubernetes.getStatus', ['builtin-app']],
      ['Deploy.kubernetes.deploy', ['builtin-app']],
      ['Test.kubernetes-pod.getResult', ['builtin-app']],
      ['Test.kubernetes-pod.run', ['builtin-app']],
      ['Deploy.kubernetes.getLogs', ['builtin-app']],
      ['Deploy.kubernetes.delete', ['builtin-app']],
      ['provider.cleanupEnvironment', ['builtin-app']],
    ]);
  });

  it('fails a plugin that writes into a namespace with its own client, naming the namespace', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: rogue
environments:
  - name: dev
    defaultNamespace: rogue-app
providers:
  - name: rogue
    plugin: ${path.join(repoRoot, 'test/fixtures/plugins/rogue-configmap.js')}
---
kind: Deploy
type: rogue-configmap
name: settings
spec: { data: { a: b } }
`,
    });
    const error = await checkPluginContract({ root, plugin: 'rogue', wire: wire(), kubeconfig }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PluginContractError);
    const { report } = error as PluginContractError;
    expect(report.failures).toEqual([
      'Deploy.rogue-configmap.deploy (deploy.settings) touched namespace "rogue-shared" without reporting it in a namespaceStatus event',
    ]);
    expect((error as Error).message).toContain('"rogue-shared"');
    // What the plugin did through ctx.kubernetes() was reported as usual.
    const deploy = report.calls.find((c) => c.handler === 'Deploy.rogue-configmap.deploy')!;
    expect(deploy).toMatchObject({ touched: ['rogue-app', 'rogue-shared'], reported: ['rogue-app'] });
  });

  it('reports a namespace outside the environment as refused: ctx.kubernetes() cannot touch it', async () => {
    const pluginFile = path.join(dir, 'elsewhere.js');
    const example = path.join(repoRoot, 'examples/plugin-configmap/plugin/configmap.js');
    writeFileSync(
      pluginFile,
      `import example from ${JSON.stringify(example)};
const deploy = example.actionTypes[0].kinds.Deploy;
export const plugin = {
  ...example,
  name: 'elsewhere',
  actionTypes: [{ ...example.actionTypes[0], name: 'elsewhere', kinds: { Deploy: { ...deploy, handlers: {
    ...deploy.handlers,
    async deploy(ctx) {
      const kube = await ctx.kubernetes();
      await kube.objects.apply('kube-public', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
      return { outputs: {} };
    },
  } } } }],
};
`,
    );
    const root = makeProject({
      'tend.yml': `kind: Project
name: elsewhere
environments: [{ name: dev, defaultNamespace: elsewhere-app }]
providers: [{ name: elsewhere, plugin: ${pluginFile} }]
---
kind: Deploy
type: elsewhere
name: settings
spec: { data: {} }
`,
    });
    const mark = sim.requests.latest();
    const report = await runPluginContract({ root, plugin: 'elsewhere', wire: wire(), kubeconfig });
    const deploy = report.calls.find((c) => c.handler === 'Deploy.elsewhere.deploy')!;
    expect(deploy.error).toMatch(/refusing to touch namespace "kube-public"/);
    expect(sim.requests.namespacesTouched({ since: mark })).not.toContain('kube-public');
  });

  it('refuses ctx.kubernetes() to a plugin that does not declare namespaceStatus', async () => {
    const pluginFile = path.join(dir, 'quiet.js');
    const example = path.join(repoRoot, 'examples/plugin-configmap/plugin/configmap.js');
    writeFileSync(
      pluginFile,
      `import example from ${JSON.stringify(example)};
export default { ...example, name: 'quiet', emits: ['log'], actionTypes: [] };
`,
    );
    const root = makeProject({
      'tend.yml': `kind: Project
name: quiet
environments: [{ name: dev, defaultNamespace: quiet-app }]
providers: [{ name: quiet, plugin: ${pluginFile} }]
`,
    });
    const mark = sim.requests.latest();
    const report = await runPluginContract({ root, plugin: 'quiet', wire: wire(), kubeconfig });
    expect(report.calls.find((c) => c.handler === 'provider.prepareEnvironment')!.error).toBe(
      'plugin "quiet" uses ctx.kubernetes() but does not declare "namespaceStatus" in emits: ' +
        'the client reports every namespace it touches',
    );
    expect(sim.requests.namespacesTouched({ since: mark })).toEqual([]);
  });

  it('is exported as tend/testing (and the contract types as tend), built from src/', () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; default: string }>;
    };
    const build = JSON.parse(readFileSync(path.join(repoRoot, 'tsconfig.build.json'), 'utf8')) as {
      compilerOptions: { declaration?: boolean };
    };
    expect(build.compilerOptions.declaration).toBe(true);
    // tsc compiles src/x.ts to dist/src/x.js (rootDir is the repository).
    for (const [entry, source] of [
      ['./testing', 'src/testing/index.ts'],
      ['.', 'src/index.ts'],
    ] as const) {
      const base = source.replace(/^src\//, './dist/src/').replace(/\.ts$/, '');
      expect(pkg.exports[entry]).toEqual({ types: `${base}.d.ts`, default: `${base}.js` });
      expect(existsSync(path.join(repoRoot, source))).toBe(true);
    }
  });
});
