/**
 * The kubernetes plugin: a provider whose environment is a namespace in a cluster, with the action
 * types `container` (Build, in the cluster; Deploy: a Deployment, Service and Ingresses),
 * `kubernetes` (Deploy: manifests), `helm` (Deploy: a chart rendered by `helm template`),
 * `kubernetes-pod` and `helm-pod` (Test/Run: a pod) and `kubernetes-exec` (Test/Run: a command in
 * a running pod). Every API call goes through the namespace-tracking client
 * (./client/), which records each namespace it touches as `namespaceStatus` events.
 *
 * This module stays light: handlers import their implementation (and through it
 * @kubernetes/client-node) only when called, so `tend --version` and exec-only projects never
 * load the Kubernetes client.
 */
import { withCleanupChecks } from '../../plugin/cleanup-wrap.js';
import type {
  ActionHandlerParams,
  ActionTypeDefinition,
  CheckActionParams,
  CleanupHandlers,
  LogsParams,
  PluginContext,
  PluginDefinition,
} from '../../plugin/types.js';
import {
  HelmDeploySpec,
  HelmPodSpec,
  KubernetesDeploySpec,
  KubernetesExecSpec,
  KubernetesPodSpec,
  KubernetesExecutorSettings,
  KubernetesProviderConfig,
  settingsFromFlags,
} from './config.js';
import { ContainerBuildSpec, ContainerDeploySpec } from './container/spec.js';

const provider = () => import('./provider.js');
const builds = () => import('./container/index.js');
const containerDeploys = () => import('./container/deploy.js');
const deploys = () => import('./deploy.js');
const manifests = () => import('./manifests.js');
const manifestNamespaces = () => import('./manifest-namespaces.js');
const logs = () => import('./logs.js');
const pods = () => import('./run.js');
const charts = () => import('./helm.js');
const execs = () => import('./exec-in-pod.js');
/** Garden's `namespace` key, of the types that have no other check (namespace-key.ts). */
const namespaceKeyCheck = async (p: CheckActionParams) =>
  (await import('./namespace-key.js')).checkNamespaceKey(p);
const cleanup = () => import('./cleanup.js');

type P<S> = ActionHandlerParams<S>;

const containerType: ActionTypeDefinition = {
  name: 'container',
  description:
    "a container image built in the cluster and pushed to the provider's deploymentRegistry, and deployed as a Deployment with a Service and Ingresses",
  kinds: {
    Build: {
      specSchema: ContainerBuildSpec,
      handlers: {
        getStatus: async (ctx: PluginContext, p: P<ContainerBuildSpec>) => (await builds()).getStatus(ctx, p),
        build: async (ctx: PluginContext, p: P<ContainerBuildSpec>) => (await builds()).build(ctx, p),
      },
    },
    Deploy: {
      specSchema: ContainerDeploySpec,
      handlers: {
        getStatus: async (ctx: PluginContext, p: P<ContainerDeploySpec>) =>
          (await containerDeploys()).getStatus(ctx, p),
        deploy: async (ctx: PluginContext, p: P<ContainerDeploySpec>) =>
          (await containerDeploys()).deploy(ctx, p),
        delete: async (ctx: PluginContext, p: P<ContainerDeploySpec>) =>
          (await containerDeploys()).remove(ctx, p),
        getLogs: async (ctx: PluginContext, p: LogsParams<ContainerDeploySpec>) =>
          (await containerDeploys()).getLogs(ctx, p),
      },
    },
  },
};

const kubernetesType: ActionTypeDefinition = {
  name: 'kubernetes',
  description: 'Kubernetes manifests applied into the environment namespace',
  kinds: {
    Deploy: {
      specSchema: KubernetesDeploySpec,
      handlers: {
        getStatus: async (ctx: PluginContext, p: P<KubernetesDeploySpec>) =>
          (await deploys()).getStatus(ctx, p),
        deploy: async (ctx: PluginContext, p: P<KubernetesDeploySpec>) => (await deploys()).deploy(ctx, p),
        delete: async (ctx: PluginContext, p: P<KubernetesDeploySpec>) => (await deploys()).remove(ctx, p),
        getLogs: async (ctx: PluginContext, p: LogsParams<KubernetesDeploySpec>) =>
          (await logs()).getLogs(ctx, p),
      },
      versionInputs: async (p) => (await manifests()).versionInputs(p),
      templateFiles: async (p) => (await manifests()).templateFilesOf(p),
      checkAction: async (p) => (await manifestNamespaces()).namespaceProblems(p),
    },
  },
};

const podHandlers = {
  getResult: async (ctx: PluginContext, p: P<KubernetesPodSpec>) => (await pods()).getResult(ctx, p),
  run: async (ctx: PluginContext, p: P<KubernetesPodSpec>) => (await pods()).run(ctx, p),
};

const podType: ActionTypeDefinition = {
  name: 'kubernetes-pod',
  description: 'a pod with an image and a command, run to completion in the environment namespace',
  kinds: {
    Test: {
      specSchema: KubernetesPodSpec,
      handlers: podHandlers,
      versionInputs: async (p) => (await manifests()).versionInputs(p),
      templateFiles: async (p) => (await manifests()).templateFilesOf(p),
      checkAction: namespaceKeyCheck,
    },
    Run: {
      specSchema: KubernetesPodSpec,
      handlers: podHandlers,
      versionInputs: async (p) => (await manifests()).versionInputs(p),
      templateFiles: async (p) => (await manifests()).templateFilesOf(p),
      checkAction: namespaceKeyCheck,
    },
  },
};

const helmType: ActionTypeDefinition = {
  name: 'helm',
  description: 'a Helm chart rendered by `helm template` and applied into the environment namespace',
  kinds: {
    Deploy: {
      specSchema: HelmDeploySpec,
      handlers: {
        getStatus: async (ctx: PluginContext, p: P<HelmDeploySpec>) =>
          (await deploys()).getStatus(ctx, p, (await charts()).loadChartManifests),
        deploy: async (ctx: PluginContext, p: P<HelmDeploySpec>) =>
          (await deploys()).deploy(ctx, p, (await charts()).loadChartManifests),
        delete: async (ctx: PluginContext, p: P<HelmDeploySpec>) =>
          (await deploys()).remove(ctx, p, (await charts()).loadChartManifests),
      },
      versionInputs: async (p) => (await charts()).versionInputs(p),
      checkAction: namespaceKeyCheck,
    },
  },
};

const helmPodHandlers = {
  getResult: async (ctx: PluginContext, p: P<HelmPodSpec>) => (await pods()).getResult(ctx, p),
  run: async (ctx: PluginContext, p: P<HelmPodSpec>) => (await pods()).run(ctx, p),
};

const helmPodType: ActionTypeDefinition = {
  name: 'helm-pod',
  description: 'a pod made from a workload of a Helm chart (its `resource`), run to completion',
  kinds: {
    Test: {
      specSchema: HelmPodSpec,
      handlers: helmPodHandlers,
      versionInputs: async (p) => (await charts()).versionInputs(p),
      checkAction: namespaceKeyCheck,
    },
    Run: {
      specSchema: HelmPodSpec,
      handlers: helmPodHandlers,
      versionInputs: async (p) => (await charts()).versionInputs(p),
      checkAction: namespaceKeyCheck,
    },
  },
};

const execHandlers = {
  getResult: async (ctx: PluginContext, p: P<KubernetesExecSpec>) => (await pods()).getResult(ctx, p),
  run: async (ctx: PluginContext, p: P<KubernetesExecSpec>) => (await execs()).run(ctx, p),
};

const execType: ActionTypeDefinition = {
  name: 'kubernetes-exec',
  description: 'a command run in a running pod of a workload (`resource`), as `kubectl exec` runs it',
  kinds: {
    Test: { specSchema: KubernetesExecSpec, handlers: execHandlers, checkAction: namespaceKeyCheck },
    Run: { specSchema: KubernetesExecSpec, handlers: execHandlers, checkAction: namespaceKeyCheck },
  },
};

export const kubernetesPlugin: PluginDefinition<unknown, unknown, KubernetesExecutorSettings> & {
  cleanup: CleanupHandlers<KubernetesExecutorSettings>;
} = {
  name: 'kubernetes',
  description: 'builds, deploys, tests and runs in a Kubernetes namespace per environment',
  configSchema: KubernetesProviderConfig,
  emits: ['namespaceStatus', 'log'],
  provider: {
    init: async (ctx) => (await provider()).init(ctx as PluginContext),
    getEnvironmentStatus: async (ctx) => (await provider()).getEnvironmentStatus(ctx),
    prepareEnvironment: async (ctx) => (await provider()).prepareEnvironment(ctx),
    cleanupEnvironment: async (ctx) => (await provider()).cleanupEnvironment(ctx),
    resumeEnvironment: async (ctx) => (await provider()).resumeEnvironment(ctx),
    restoreEnvironment: async (ctx, request) =>
      (await import('./restore.js')).restoreEnvironment(ctx as PluginContext, request),
  },
  checkEnvironment: async (params) => {
    const problem = (await import('./app-namespace.js')).appNamespaceProblem(params);
    return problem ? [problem] : [];
  },
  actionTypes: [containerType, kubernetesType, podType, helmType, helmPodType, execType],
  cleanup: withCleanupChecks({
    targetKind: 'kubernetes',
    words: { resource: 'namespace', target: 'cluster' },
    settingsSchema: KubernetesExecutorSettings,
    settingsFromFlags,
    targets: async (ctx) => (await cleanup()).targets(ctx),
    inventory: async (ctx, target) => (await cleanup()).inventory(ctx, target),
    read: async (ctx, target, ref) => (await cleanup()).read(ctx, target, ref),
    delete: async (ctx, target, resource, precondition) =>
      (await cleanup()).remove(ctx, target, resource, precondition),
    pause: async (ctx, target, resource, precondition) =>
      (await cleanup()).change('pause', ctx, target, resource, precondition),
    resume: async (ctx, target, resource, precondition) =>
      (await cleanup()).change('resume', ctx, target, resource, precondition),
    preview: async (ctx, target, resource, action) =>
      (await cleanup()).preview(ctx, target, resource, action),
    archive: async (ctx, target, resource, o) => (await cleanup()).archive(ctx, target, resource, o),
    restore: async (ctx, target, job, request) => (await cleanup()).restore(ctx, target, job, request),
  }),
};
