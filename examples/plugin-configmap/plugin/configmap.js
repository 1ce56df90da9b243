// @ts-check
/**
 * An example third-party tend plugin: the provider `configmap` keeps the environment's namespace,
 * and the Deploy action type `configmap` writes one ConfigMap into it. Every cluster call goes
 * through `ctx.kubernetes()`, tend's namespace-tracking client, so every namespace it touches is
 * reported (`namespaceStatus`) before the work — which the contract harness (`tend/testing`)
 * checks against what the cluster saw. See docs/plugin-api.md.
 */
import { Type } from 'typebox';

/** The provider entry's own keys (beyond name, plugin, environments). */
const ProviderConfig = Type.Object(
  {
    context: Type.Optional(Type.String({ minLength: 1, description: 'kubeconfig context' })),
    namespace: Type.Optional(
      Type.String({ minLength: 1, description: "app namespace (default: the environment's)" }),
    ),
  },
  { additionalProperties: false },
);

/** A Deploy action's spec. */
const ConfigMapSpec = Type.Object(
  { data: Type.Record(Type.String({ minLength: 1 }), Type.String()) },
  { additionalProperties: false },
);

const versionAnnotation = 'tend.dev/version';

/** @param {{ action: { name: string } }} params */
const refOf = ({ action }) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: action.name });

/** @type {Record<string, (ctx: any, params: any) => Promise<any>>} */
const deployHandlers = {
  // Read-only: whether the ConfigMap is there for this version.
  async getStatus(ctx, params) {
    const kube = await ctx.kubernetes();
    const current = await kube.objects.read(kube.appNamespace, refOf(params));
    const deployed = current?.metadata?.annotations?.[versionAnnotation];
    return { state: deployed === params.action.version ? 'ready' : 'not-ready' };
  },
  async deploy(ctx, params) {
    const kube = await ctx.kubernetes();
    // The namespace may not exist yet (a deploy without prepare): create or adopt it, reported.
    await kube.namespaces.ensure(kube.appNamespace);
    const applied = await kube.objects.apply(kube.appNamespace, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: params.action.name, annotations: { [versionAnnotation]: params.action.version } },
      data: params.action.spec.data,
    });
    ctx.log.info(`ConfigMap ${params.action.name} applied in ${kube.appNamespace}`);
    return { outputs: { name: String(applied.metadata?.name), namespace: kube.appNamespace } };
  },
  async delete(ctx, params) {
    const kube = await ctx.kubernetes();
    await kube.objects.delete(kube.appNamespace, refOf(params));
    return { state: 'not-ready' };
  },
};

export default {
  name: 'configmap',
  description: 'deploys ConfigMaps into a Kubernetes namespace per environment',
  configSchema: ProviderConfig,
  // ctx.kubernetes() emits namespaceStatus; ctx.log emits log.
  emits: ['namespaceStatus', 'log'],
  provider: {
    // Nothing to compute: ctx.kubernetes() finds the cluster identity itself.
    async init() {
      return {};
    },
    /** @param {any} ctx */
    async getEnvironmentStatus(ctx) {
      const kube = await ctx.kubernetes();
      const namespace = await kube.namespaces.observe(kube.appNamespace);
      return { ready: namespace?.state === 'ready', detail: { namespace: kube.appNamespace } };
    },
    /** @param {any} ctx */
    async prepareEnvironment(ctx) {
      const kube = await ctx.kubernetes();
      const { created, adopted } = await kube.namespaces.ensure(kube.appNamespace);
      return { ready: true, detail: { namespace: kube.appNamespace, created, adopted } };
    },
    /** @param {any} ctx */
    async cleanupEnvironment(ctx) {
      const kube = await ctx.kubernetes();
      // Deletes the namespace only when tend created it for this project.
      return kube.namespaces.deleteOwned(kube.appNamespace);
    },
  },
  actionTypes: [
    {
      name: 'configmap',
      description: 'a ConfigMap with the given data, in the environment namespace',
      kinds: { Deploy: { specSchema: ConfigMapSpec, handlers: deployHandlers } },
    },
  ],
};
