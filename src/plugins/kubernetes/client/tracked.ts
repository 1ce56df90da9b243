/**
 * `ctx.kubernetes()`: the namespace-tracking client offered to every plugin through its context
 * (the router builds it; docs/plugin-api.md). It is the kubernetes plugin's own client — one per
 * handler call, every request through the request gate (gate.ts) — so a plugin that uses it
 * cannot touch a namespace without its `namespaceStatus` being emitted first.
 */
import { TendError } from '../../../errors.js';
import type {
  KubernetesClientOptions,
  KubernetesObject,
  PluginContext,
  TrackedKubernetesClient,
} from '../../../plugin/types.js';
import { settingsOf } from '../config.js';
import { KubeClient } from './client.js';
import { connect, type Connection } from './connection.js';
import type { ClusterIdentity } from './gate.js';
import type { KubeObject } from './objects.js';

/** The cluster identity per connection: read once per process (a kube-system read), like `init` does. */
const identities = new WeakMap<Connection, Promise<ClusterIdentity>>();

const configString = (config: unknown, key: string): string | undefined => {
  const value = (config as Record<string, unknown> | undefined)?.[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

export async function trackedKubernetesClient(
  ctx: PluginContext,
  emits: readonly string[],
  options: KubernetesClientOptions = {},
): Promise<TrackedKubernetesClient> {
  if (!emits.includes('namespaceStatus')) {
    throw new TendError(
      'TEND_PLUGIN_INVALID',
      `plugin "${ctx.provider.name}" uses ctx.kubernetes() but does not declare "namespaceStatus" in emits: ` +
        'the client reports every namespace it touches',
      { plugin: ctx.provider.name },
    );
  }
  const config = ctx.provider.config;
  const context = options.context ?? ctx.cluster?.context ?? configString(config, 'context');
  const namespace = options.namespace ?? configString(config, 'namespace');
  const systemNamespace = options.systemNamespace ?? configString(config, 'systemNamespace');
  const settings = {
    ...settingsOf(
      {
        ...(context ? { context } : {}),
        ...(namespace ? { namespace } : {}),
        ...(systemNamespace ? { systemNamespace } : {}),
      },
      ctx.environment.namespace,
    ),
    ...(ctx.cluster?.kubeconfig ? { kubeconfig: ctx.cluster.kubeconfig } : {}),
  };
  const connection = await connect(settings.context, settings.kubeconfig);
  let identity = identities.get(connection);
  if (!identity) {
    identity = KubeClient.identify(ctx, settings).then((c) => c.identity);
    identities.set(connection, identity);
    identity.catch(() => identities.delete(connection));
  }
  const client = await KubeClient.forCall(ctx, settings, await identity);
  return {
    appNamespace: settings.appNamespace,
    systemNamespace: settings.systemNamespace,
    clusterId: client.identity.clusterId,
    namespaces: {
      observe: (name) => client.namespaces.observe(name),
      ensure: (name) => client.namespaces.ensure(name),
      deleteOwned: async (name) => {
        const result = await client.namespaces.deleteOwned(name);
        return { deleted: result.outcome === 'deleted', message: result.message };
      },
    },
    objects: {
      apply: (ns, object) => client.objects.apply(ns, object as KubeObject) as Promise<KubernetesObject>,
      read: (ns, ref) => client.objects.read(ns, ref) as Promise<KubernetesObject | undefined>,
      delete: (ns, ref) => client.objects.delete(ns, ref),
    },
  };
}
