/**
 * The namespace-tracking client: the one way the kubernetes plugin reaches the Kubernetes API
 * (docs/design.md#events; eslint forbids importing @kubernetes/client-node anywhere else in the plugin, and
 * a test scans the imports).
 *
 * One client per handler call, bound to that call's context (`ctx.events`). Its calls are
 * grouped by concern — `namespaces` (namespaces.ts), `pods` (pods.ts: pods, logs, exec, attach),
 * `objects` (objects.ts: manifests' objects) — and all of them go through one request gate
 * (gate.ts), which reports every namespace on first contact.
 */
import type { ProviderSettings } from '../config.js';
import { ArchiveCalls } from './archive.js';
import { connect, type Connection } from './connection.js';
import { describeFailure } from './errors.js';
import { RequestGate, type ClusterIdentity, type GateContext } from './gate.js';
import { NamespaceCalls } from './namespaces.js';
import { ObjectCalls } from './objects.js';
import { PodCalls } from './pods.js';
import { RequestCalls } from './requests.js';
import { WorkloadCalls } from './workloads.js';
import type { TendError } from '../../../errors.js';

export class KubeClient {
  readonly namespaces: NamespaceCalls;
  readonly pods: PodCalls;
  readonly objects: ObjectCalls;
  readonly workloads: WorkloadCalls;
  /** What the pods of namespaces request (the cleanup inventory). */
  readonly requests: RequestCalls;
  readonly archives: ArchiveCalls;
  private readonly gate: RequestGate;

  private constructor(
    connection: Connection,
    ctx: GateContext,
    settings: ProviderSettings,
    identity: ClusterIdentity,
  ) {
    this.gate = new RequestGate(connection, ctx, settings, identity);
    this.namespaces = new NamespaceCalls(this.gate);
    this.pods = new PodCalls(this.gate);
    this.objects = new ObjectCalls(this.gate);
    this.workloads = new WorkloadCalls(this.gate);
    this.requests = new RequestCalls(this.gate);
    this.archives = new ArchiveCalls(this.gate);
  }

  get settings(): ProviderSettings {
    return this.gate.settings;
  }

  get identity(): ClusterIdentity {
    return this.gate.identity;
  }

  /** The API server's time now, as its last answer said (undefined before one). */
  serverTime(): number | undefined {
    return this.gate.connection.serverTime();
  }

  /**
   * The host of the registry a local cluster advertises for images pushed from the developer's
   * machine: `host` of the `local-registry-hosting` ConfigMap in kube-public (KEP-1755, as kind,
   * k3d and minikube write it), or undefined. Like `identify`'s read of kube-system, a read of
   * the cluster's public information, in no environment: not reported as a namespace.
   */
  async localRegistryHost(): Promise<string | undefined> {
    let configMap: { data?: Record<string, string> };
    try {
      configMap = await this.gate.connection.request<{ data?: Record<string, string> }>({
        method: 'GET',
        path: '/api/v1/namespaces/kube-public/configmaps/local-registry-hosting',
      });
    } catch (error) {
      const f = describeFailure(error);
      if (f.status === 404 || f.status === 403) return undefined;
      throw error;
    }
    const text = configMap.data?.['localRegistryHosting.v1'];
    if (!text) return undefined;
    const host = /^host:\s*["']?([^"'\s]+)["']?\s*$/m.exec(text)?.[1];
    return host || undefined;
  }

  /** A client for one handler call. `identity` comes from the provider state that `init` returned. */
  static async forCall(
    ctx: GateContext,
    settings: ProviderSettings,
    identity: ClusterIdentity,
  ): Promise<KubeClient> {
    return new KubeClient(await connect(settings.context, settings.kubeconfig), ctx, settings, identity);
  }

  /**
   * For the provider's `init`: connects and finds the cluster identity, the uid of kube-system (or
   * the server URL, flagged `clusterIdFallback`, when that cannot be read). This cluster-scoped read
   * of the kube-system Namespace object is the one namespace read that is not reported: it works in
   * no namespace, and kube-system is never an environment.
   */
  static async identify(ctx: GateContext, settings: ProviderSettings): Promise<KubeClient> {
    const connection = await connect(settings.context, settings.kubeconfig);
    const base = { server: connection.server, context: connection.context };
    const probe = new KubeClient(connection, ctx, settings, { clusterId: connection.server, ...base });
    let identity: ClusterIdentity;
    try {
      const info = await probe.gate.readNamespace('kube-system');
      identity = info?.uid
        ? { clusterId: info.uid, ...base }
        : { clusterId: connection.server, ...base, clusterIdFallback: true };
    } catch (error) {
      const f = describeFailure((error as TendError).cause ?? error);
      if (f.status !== 403 && f.status !== 404) throw error;
      identity = { clusterId: connection.server, ...base, clusterIdFallback: true };
    }
    if (identity.clusterIdFallback) {
      ctx.log.debug(
        `cannot read the uid of kube-system; using the server URL ${connection.server} as cluster id`,
      );
    }
    return new KubeClient(connection, ctx, settings, identity);
  }
}
