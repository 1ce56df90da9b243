/**
 * Contract rows of the kubernetes plugin, against one kube-sim for all rows. Every project a row
 * creates gets its own app namespace (the fixture's `files` make a fresh one on each read), so
 * `fresh` means a namespace that does not exist yet. The system namespace is created up front.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startKubeSim } from '../../../tools/kube-sim/src/index.js';
import { resetConnections } from '../../../src/plugins/kubernetes/client/index.js';
import type { ExpectedNamespaceEvent, PluginContract, PluginFixture } from './types.js';

function files(registry: string, buildMode: string): Record<string, string> {
  const namespace = `contract-${randomBytes(4).toString('hex')}`;
  return {
    'tend.yml': `kind: Project
name: contract
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${namespace}
providers:
  - name: kubernetes
    context: kube-sim
    buildMode: ${buildMode}
    deploymentRegistry: ${registry}/contract
    podStartTimeout: 20
---
kind: Build
type: container
name: b
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
---
kind: Run
type: kubernetes-pod
name: r
spec: { image: alpine, command: [sh, -c, "echo ok"] }
---
kind: Deploy
type: container
name: c
spec: { image: alpine, ports: [{ name: http, containerPort: 80 }] }
---
kind: Test
type: kubernetes-exec
name: x
spec: { resource: { kind: Deployment, name: c }, command: [echo, ok] }
---
kind: Run
type: kubernetes-exec
name: xr
spec: { resource: { kind: Deployment, name: c }, command: [echo, ok] }
---
# No helm binary here: these fail (TEND_TOOL_NOT_FOUND) before any call to the cluster.
kind: Deploy
type: helm
name: h
spec: { chart: { path: chart } }
---
kind: Test
type: helm-pod
name: hp
spec: { chart: { path: chart }, resource: { kind: Deployment, name: h }, command: [echo, ok] }
---
kind: Run
type: helm-pod
name: hpr
spec: { chart: { path: chart }, resource: { kind: Deployment, name: h }, command: [echo, ok] }
`,
    Dockerfile: 'FROM alpine\n',
  };
}

function fixture(
  registry: string,
  buildMode: string,
  env: Record<string, string>,
  teardown?: () => Promise<void>,
): PluginFixture {
  return {
    // A getter, not a value: each row's project gets a namespace of its own.
    get files() {
      return files(registry, buildMode);
    },
    env,
    ...(teardown ? { teardown } : {}),
  };
}

const app = (state: ExpectedNamespaceEvent['state'], cause: ExpectedNamespaceEvent['cause']) =>
  ({ namespace: 'app', state, cause, role: 'app' }) as const;
const created = [app('missing', 'observed'), app('ready', 'created')];
const system = { namespace: 'tend-system', state: 'ready', cause: 'observed', role: 'system' } as const;

export const kubernetesContract: PluginContract = {
  plugin: 'kubernetes',
  executor: (recorded) => ({
    flags: {
      local: false,
      contexts: recorded.target.kind === 'kubernetes' ? [recorded.target.context] : [],
      clustersByDefault: false,
    },
  }),
  fixtures: async () => {
    const sim = await startKubeSim();
    sim.store.create('namespaces', '', {
      metadata: { name: 'tend-system', labels: { 'app.kubernetes.io/managed-by': 'tend' } },
    });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-contract-kube-'));
    const kubeconfig = path.join(dir, 'config');
    await sim.writeKubeconfig(kubeconfig);
    resetConnections();
    const env = { KUBECONFIG: kubeconfig };
    const teardown = async () => {
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
      resetConnections();
    };
    return {
      default: fixture(sim.registryHost, 'cluster-buildkit', env, teardown),
      kaniko: fixture(sim.registryHost, 'kaniko', env),
    };
  },
  rows: [
    // init reads the cluster identity (kube-system's uid) and touches no environment.
    { handler: 'provider.init', given: 'fresh', expect: [] },
    { handler: 'provider.getEnvironmentStatus', given: 'fresh', expect: [app('missing', 'observed')] },
    { handler: 'provider.getEnvironmentStatus', given: 'prepared', expect: [app('ready', 'observed')] },
    { handler: 'provider.prepareEnvironment', given: 'fresh', expect: created },
    { handler: 'provider.prepareEnvironment', given: 'prepared', expect: [app('ready', 'observed')] },
    {
      handler: 'provider.cleanupEnvironment',
      given: 'prepared',
      expect: [app('ready', 'observed'), app('terminating', 'deleted'), app('missing', 'deleted')],
    },
    // Build status is the registry's answer: no namespace is touched.
    { handler: 'Build.container.getStatus', action: 'build.b', given: 'fresh', expect: [] },
    {
      handler: 'Build.container.getStatus',
      action: 'build.b',
      given: 'fresh',
      variant: 'kaniko',
      expect: [],
    },
    // cluster-buildkit builds in the app namespace; Kaniko in the system namespace (role system).
    { handler: 'Build.container.build', action: 'build.b', given: 'fresh', expect: created },
    {
      handler: 'Build.container.build',
      action: 'build.b',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Build.container.build',
      action: 'build.b',
      given: 'fresh',
      variant: 'kaniko',
      expect: [system],
    },
    {
      handler: 'Build.container.build',
      action: 'build.b',
      given: 'prepared',
      variant: 'kaniko',
      expect: [system],
    },
    {
      handler: 'Deploy.kubernetes.getStatus',
      action: 'deploy.d',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    {
      handler: 'Deploy.kubernetes.getStatus',
      action: 'deploy.d',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    { handler: 'Deploy.kubernetes.deploy', action: 'deploy.d', given: 'fresh', expect: created },
    {
      handler: 'Deploy.kubernetes.deploy',
      action: 'deploy.d',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Deploy.kubernetes.delete',
      action: 'deploy.d',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Deploy.kubernetes.delete',
      action: 'deploy.d',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    {
      handler: 'Deploy.kubernetes.getLogs',
      action: 'deploy.d',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    {
      handler: 'Deploy.kubernetes.getLogs',
      action: 'deploy.d',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Test.kubernetes-pod.getResult',
      action: 'test.t',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    { handler: 'Test.kubernetes-pod.run', action: 'test.t', given: 'fresh', expect: created },
    {
      handler: 'Run.kubernetes-pod.getResult',
      action: 'run.r',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Run.kubernetes-pod.run',
      action: 'run.r',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    // A container Deploy goes the kubernetes Deploy's way: its Deployment and Service.
    { handler: 'Deploy.container.deploy', action: 'deploy.c', given: 'fresh', expect: created },
    {
      handler: 'Deploy.container.getStatus',
      action: 'deploy.c',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    {
      handler: 'Deploy.container.delete',
      action: 'deploy.c',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Deploy.container.getLogs',
      action: 'deploy.c',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    // kubernetes-exec reads the workload where it runs: the app namespace, observed.
    {
      handler: 'Test.kubernetes-exec.run',
      action: 'test.x',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Test.kubernetes-exec.getResult',
      action: 'test.x',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    {
      handler: 'Run.kubernetes-exec.run',
      action: 'run.xr',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    {
      handler: 'Run.kubernetes-exec.getResult',
      action: 'run.xr',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    // Without helm: deploy fails before any call; the others observe the namespace first (and a
    // helm-pod run prepares it, recorded), then fail on the missing tool.
    { handler: 'Deploy.helm.deploy', action: 'deploy.h', given: 'fresh', expect: [] },
    {
      handler: 'Deploy.helm.getStatus',
      action: 'deploy.h',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    {
      handler: 'Deploy.helm.delete',
      action: 'deploy.h',
      given: 'prepared',
      expect: [app('ready', 'observed')],
    },
    { handler: 'Test.helm-pod.run', action: 'test.hp', given: 'fresh', expect: created },
    {
      handler: 'Test.helm-pod.getResult',
      action: 'test.hp',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
    { handler: 'Run.helm-pod.run', action: 'run.hpr', given: 'fresh', expect: created },
    {
      handler: 'Run.helm-pod.getResult',
      action: 'run.hpr',
      given: 'fresh',
      expect: [app('missing', 'observed')],
    },
  ],
};
