/**
 * The kubernetes provider's environment handlers: connect and identify the cluster (`init`),
 * report the app namespace (`getEnvironmentStatus`, read-only), create or adopt it
 * (`prepareEnvironment`), delete it when tend owns it (`cleanupEnvironment`).
 */
import path from 'node:path';
import { TendError } from '../../errors.js';
import { removeResults } from '../../plugin/results.js';
import type { EnvironmentStatus, PluginContext, ResumeResult } from '../../plugin/types.js';
import {
  describeChanges,
  KubeClient,
  ownedBy,
  type ClusterIdentity,
  type NamespaceInfo,
} from './client/index.js';
import {
  settingsOf,
  withClusterOverride,
  type KubernetesProviderConfig,
  type ProviderSettings,
} from './config.js';
import { appNamespaceProblem } from './app-namespace.js';

/** The provider's settings, with the command line's `--kubeconfig` / `--context` over its own. */
export function settings(ctx: PluginContext): ProviderSettings {
  const config = ctx.provider.config as KubernetesProviderConfig;
  const own = settingsOf(config, ctx.environment.namespace);
  // As Garden reads its `kubeconfig`: relative to the project root.
  if (config.kubeconfig) own.kubeconfig = path.resolve(ctx.projectRoot, config.kubeconfig);
  return withClusterOverride(own, ctx.cluster);
}

/** The client for one handler call. */
export async function clientFor(ctx: PluginContext): Promise<KubeClient> {
  const identity = ctx.provider.state as ClusterIdentity | undefined;
  if (!identity?.clusterId) {
    throw new TendError('TEND_INTERNAL', 'the kubernetes provider was used before its init', {
      plugin: 'kubernetes',
    });
  }
  return KubeClient.forCall(ctx, settings(ctx), identity);
}

export async function init(ctx: PluginContext): Promise<ClusterIdentity> {
  const refused = appNamespaceProblem({
    providerConfig: ctx.provider.config as Record<string, unknown>,
    environment: ctx.environment,
  });
  if (refused) throw new TendError('TEND_CONFIG_INVALID', refused.message, { plugin: 'kubernetes' });
  const client = await KubeClient.identify(ctx, settings(ctx));
  return client.identity;
}

function describe(info: NamespaceInfo | undefined, project: string): Record<string, unknown> {
  if (!info) return { state: 'missing' };
  return {
    namespace: info.name,
    uid: info.uid,
    state: info.state,
    owned: ownedBy(info, project),
    adopted: info.annotations['tend.dev/adopted'] === 'true',
  };
}

export async function getEnvironmentStatus(ctx: PluginContext): Promise<EnvironmentStatus> {
  const client = await clientFor(ctx);
  const info = await client.namespaces.observe(client.settings.appNamespace);
  return {
    ready: info?.state === 'ready',
    detail: { namespace: client.settings.appNamespace, ...describe(info, ctx.environment.project) },
  };
}

export async function prepareEnvironment(ctx: PluginContext): Promise<EnvironmentStatus> {
  const client = await clientFor(ctx);
  const { info, created, adopted } = await client.namespaces.ensure(client.settings.appNamespace);
  if (adopted) {
    ctx.log.info(
      `namespace ${info.name} existed before tend used it: adopted (tracked, never deleted by tend)`,
    );
  }
  // Garden's kubernetes provider outputs (core/src/plugins/kubernetes/init.ts), read as
  // `${providers.local-kubernetes.outputs.default-hostname}`; without defaultHostname there is none.
  const { defaultHostname } = ctx.provider.config as KubernetesProviderConfig;
  return {
    ready: true,
    detail: { ...describe(info, ctx.environment.project), created },
    outputs: {
      'app-namespace': info.name,
      ...(defaultHostname ? { 'default-hostname': defaultHostname } : {}),
    },
  };
}

/** Restores what a pause recorded on the workloads tend deployed into the app namespace. */
export async function resumeEnvironment(ctx: PluginContext): Promise<ResumeResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  if (info?.state !== 'ready') return { resumed: false, message: `namespace ${namespace} does not exist` };
  const result = await client.workloads.resume(namespace);
  return {
    resumed: result.changed.length > 0,
    message:
      result.changed.length > 0
        ? `resumed namespace ${namespace}: ${describeChanges(result)}`
        : `namespace ${namespace} is not paused`,
  };
}

export async function cleanupEnvironment(ctx: PluginContext): Promise<{ deleted: boolean; message: string }> {
  const client = await clientFor(ctx);
  const result = await client.namespaces.deleteOwned(client.settings.appNamespace);
  const deleted = result.outcome === 'deleted';
  if (deleted) {
    removeResults(ctx.tendDir, client.settings.appNamespace);
  } else {
    ctx.log.info(result.message);
  }
  return { deleted, message: result.message };
}
