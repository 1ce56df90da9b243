/**
 * The namespace-tracking client: the one way the kubernetes plugin reaches the Kubernetes API
 * (DESIGN §4; eslint forbids importing @kubernetes/client-node anywhere else in the plugin, and
 * a test scans the imports).
 *
 * One client per handler call, bound to that call's context (`ctx.events`). Every call that
 * targets a namespace goes through `request()`, which on the first contact with the namespace in
 * this call reads it and emits `namespaceStatus` — before the work that can fail — and stamps
 * `tend.dev/last-activity` (at most once a minute per namespace and process). A state change
 * noticed later (the namespace went missing or is terminating) is emitted again. Namespaces
 * other than the app namespace and the system namespaces are refused: tend never touches a
 * namespace it cannot name a role for.
 */
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { TendError } from '../../../errors.js';
import type {
  NamespaceRole,
  NamespaceState,
  NamespaceStatusPayload,
  Target,
} from '../../../events/catalog.js';
import type { PluginContext } from '../../types.js';
import type { ProviderSettings } from '../config.js';
import { connect, type Connection } from './connection.js';
import { apiError, describeFailure, withRetry } from './errors.js';

export const labels = {
  managedBy: 'app.kubernetes.io/managed-by',
  action: 'tend.dev/action',
} as const;
export const annotations = {
  project: 'tend.dev/project',
  environment: 'tend.dev/environment',
  createdAt: 'tend.dev/created-at',
  lastActivity: 'tend.dev/last-activity',
  adopted: 'tend.dev/adopted',
  role: 'tend.dev/role',
  version: 'tend.dev/version',
  requestId: 'tend.dev/request-id',
} as const;

/** Who the plugin is talking to; the provider's `init` computes it, every event carries it. */
export interface ClusterIdentity {
  clusterId: string;
  server: string;
  context: string;
  /** True when kube-system could not be read and the server URL stands in for the cluster id. */
  clusterIdFallback?: boolean;
}

export interface NamespaceInfo {
  name: string;
  uid?: string;
  state: NamespaceState;
  resourceVersion?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** `managed-by=tend` and the project annotation of this project: tend created it for this project. */
export function ownedBy(info: NamespaceInfo, project: string): boolean {
  return (
    info.labels[labels.managedBy] === 'tend' &&
    info.annotations[annotations.project] === project &&
    info.annotations[annotations.adopted] !== 'true'
  );
}

const activityIntervalMs = 60_000;
/** How often a deleted namespace is read again until it is gone. */
const goneIntervalMs = 100;

/** What `deleteOwnedNamespace` checks beyond the ownership proof (the cleanup executors know them). */
export interface DeletionChecks {
  /** The `tend.dev/environment` annotation must name this environment. */
  environment?: string;
  /** The recorded uid: a namespace re-created under the same name is another namespace. */
  uid?: string | null;
  /** ISO time the decision was based on: a `tend.dev/last-activity` after it means the namespace was used since. */
  notActiveAfter?: string;
  /** Names never deleted: returns why (e.g. the matching glob), or undefined. */
  protectedName?: (name: string) => string | undefined;
  /** Every check, no DELETE. */
  dryRun?: boolean;
}

/**
 * `deleted`: tend deleted it (or it was terminating) and it is gone; `gone`: it did not exist;
 * `refused`: a check failed, nothing was done; `changed`: the DELETE precondition failed (409).
 */
export interface NamespaceDeletion {
  outcome: 'deleted' | 'gone' | 'refused' | 'changed';
  message: string;
}

export interface ManagedNamespaceList {
  complete: boolean;
  error?: string;
  items: NamespaceInfo[];
}
/** Last `tend.dev/last-activity` stamp per cluster and namespace, for this process. */
const lastStamped = new Map<string, number>();

export interface ExecStreams {
  /** A fresh stdin for each attempt (a retried exec sends it again). */
  stdin?: () => Readable;
  onStdout?: (line: string) => void;
  onStderr?: (line: string) => void;
}

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
}

export type KubeObject = k8s.KubernetesObject & { spec?: unknown; status?: unknown; [key: string]: unknown };

export class KubeClient {
  private readonly contacted = new Map<string, NamespaceInfo | undefined>();
  private readonly namespacedCache = new Map<string, boolean>();

  private constructor(
    private readonly connection: Connection,
    private readonly ctx: PluginContext,
    readonly settings: ProviderSettings,
    readonly identity: ClusterIdentity,
  ) {}

  /** A client for one handler call. `identity` comes from the provider state that `init` returned. */
  static async forCall(
    ctx: PluginContext,
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
  static async identify(ctx: PluginContext, settings: ProviderSettings): Promise<KubeClient> {
    const connection = await connect(settings.context, settings.kubeconfig);
    const base = { server: connection.server, context: connection.context };
    const probe = new KubeClient(connection, ctx, settings, { clusterId: connection.server, ...base });
    let identity: ClusterIdentity;
    try {
      const info = await probe.readNamespace('kube-system');
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

  get target(): Target {
    return {
      kind: 'kubernetes',
      clusterId: this.identity.clusterId,
      server: this.identity.server,
      context: this.identity.context,
    };
  }

  roleOf(namespace: string): NamespaceRole {
    if (namespace === this.settings.appNamespace) return 'app';
    if (namespace === this.settings.systemNamespace || namespace === 'kube-system') return 'system';
    throw new TendError(
      'TEND_K8S_NAMESPACE',
      `refusing to touch namespace "${namespace}": tend works only in the app namespace ` +
        `"${this.settings.appNamespace}" and the system namespace "${this.settings.systemNamespace}"`,
      { detail: { namespace } },
    );
  }

  /** Emits `namespaceStatus` for what is known of the namespace. */
  private report(
    info: NamespaceInfo,
    cause: NamespaceStatusPayload['cause'],
    extra: Record<string, unknown> = {},
  ): void {
    const role = this.roleOf(info.name);
    const detail: Record<string, unknown> = { ...extra };
    if (this.identity.clusterIdFallback) detail.clusterIdFallback = true;
    if (info.uid) {
      detail.managedBy = info.labels[labels.managedBy] ?? null;
      detail.projectAnnotation = info.annotations[annotations.project] ?? null;
      detail.adopted = info.annotations[annotations.adopted] === 'true';
    }
    const payload: NamespaceStatusPayload = {
      pluginName: 'kubernetes',
      providerName: this.ctx.provider.name,
      namespaceName: info.name,
      state: info.state,
      role,
      cause,
      target: this.target,
      project: this.ctx.environment.project,
      environment: this.ctx.environment.name,
    };
    if (info.uid) payload.namespaceUid = info.uid;
    if (Object.keys(detail).length > 0) payload.detail = detail;
    this.ctx.events.emit('namespaceStatus', payload);
    this.contacted.set(info.name, info);
  }

  private describe(what: string, namespace?: string) {
    return {
      what,
      server: this.identity.server,
      context: this.identity.context,
      ...(namespace ? { namespace } : {}),
    };
  }

  private retry<T>(what: string, fn: () => Promise<T>, idempotent: boolean): Promise<T> {
    return withRetry(fn, {
      retries: this.settings.retries,
      idempotent,
      onRetry: (f, attempt, waitMs) =>
        this.ctx.log.debug(
          `${what}: ${f.status ?? f.networkCode ?? 'error'} ${f.message}; retry ${attempt} in ${waitMs} ms`,
        ),
    });
  }

  /** Reads a namespace without reporting it; undefined when it does not exist. */
  private async readNamespace(name: string): Promise<NamespaceInfo | undefined> {
    try {
      const ns = await this.retry(
        `read namespace ${name}`,
        () => this.connection.core.readNamespace({ name }),
        true,
      );
      return toInfo(ns);
    } catch (error) {
      if (describeFailure(error).status === 404) return undefined;
      throw apiError(error, this.describe(`read namespace ${name}`));
    }
  }

  /**
   * First contact with a namespace in this call: read it and report it. If it cannot be read,
   * it is still reported (as `ready`, marked unverified) before the error surfaces.
   */
  private async enter(namespace: string, stamp = true): Promise<NamespaceInfo | undefined> {
    if (this.contacted.has(namespace)) return this.contacted.get(namespace);
    this.roleOf(namespace);
    let info: NamespaceInfo | undefined;
    try {
      info = await this.readNamespace(namespace);
    } catch (error) {
      this.report({ name: namespace, state: 'ready', labels: {}, annotations: {} }, 'observed', {
        unverified: (error as Error).message.slice(0, 500),
      });
      const f = describeFailure((error as TendError).cause ?? error);
      // Without permission to read namespaces, work inside it may still be allowed.
      if (f.status === 403) return undefined;
      throw error;
    }
    this.report(info ?? missing(namespace), 'observed');
    if (info && stamp) await this.stampActivity(info);
    return info;
  }

  /** Reads the namespace again after an error that says it changed, and reports the change. */
  private async noticeNamespaceChange(namespace: string, error: unknown): Promise<void> {
    const f = describeFailure(error);
    const gone = f.status === 404 && f.detailsKind === 'namespaces';
    const terminating = f.causes?.some((c) => c.reason === 'NamespaceTerminating') ?? false;
    if (!gone && !terminating) return;
    const info = await this.readNamespace(namespace).catch(() => undefined);
    this.report(info ?? missing(namespace), 'observed');
  }

  /** Stamps `tend.dev/last-activity` on app namespaces tend manages or adopted, at most once a minute. */
  private async stampActivity(info: NamespaceInfo, force = false): Promise<void> {
    if (info.state !== 'ready' || this.roleOf(info.name) !== 'app') return;
    const ours = info.labels[labels.managedBy] === 'tend' || info.annotations[annotations.adopted] === 'true';
    if (!ours) return;
    const key = `${this.identity.clusterId}\0${info.name}`;
    const now = Date.now();
    if (!force && now - (lastStamped.get(key) ?? 0) < activityIntervalMs) return;
    lastStamped.set(key, now);
    try {
      await this.patchNamespaceAnnotations(info.name, {
        [annotations.lastActivity]: new Date(now).toISOString(),
      });
    } catch (error) {
      // Best effort: the events record the activity; the annotation is the cluster-side copy.
      lastStamped.delete(key);
      this.ctx.log.debug(
        `could not stamp ${annotations.lastActivity} on ${info.name}: ${(error as Error).message}`,
      );
    }
  }

  private async patchNamespaceAnnotations(
    name: string,
    values: Record<string, string>,
  ): Promise<NamespaceInfo> {
    const { k8s } = this.connection;
    const ns = await this.retry(
      `annotate namespace ${name}`,
      () =>
        this.connection.core.patchNamespace(
          { name, body: { metadata: { annotations: values } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        ),
      true,
    ).catch((error: unknown) => {
      throw apiError(error, this.describe(`annotate namespace ${name}`));
    });
    return toInfo(ns);
  }

  /** Read-only: reports the namespace as it is (`ready`, `terminating` or `missing`); never creates it. */
  async observeNamespace(name: string, stamp = true): Promise<NamespaceInfo | undefined> {
    this.roleOf(name);
    this.contacted.delete(name);
    return this.enter(name, stamp);
  }

  /**
   * Ensures the namespace exists: an existing one is reported and, for the app namespace, adopted
   * unless tend created it for this project; a terminating one is waited for (bounded) and then
   * re-created; a missing one is reported `missing` before it is created, then `ready`/`created`.
   */
  async ensureNamespace(name: string): Promise<{ info: NamespaceInfo; created: boolean; adopted: boolean }> {
    const role = this.roleOf(name);
    const project = this.ctx.environment.project;
    let info = await this.observeNamespace(name);
    if (info?.state === 'terminating') info = await this.waitUntilGone(name, info);
    if (info && info.state === 'ready') {
      let adopted = false;
      if (role === 'app' && !ownedBy(info, project) && info.annotations[annotations.adopted] !== 'true') {
        info = await this.patchNamespaceAnnotations(name, {
          [annotations.adopted]: 'true',
          [annotations.lastActivity]: new Date().toISOString(),
        });
        adopted = true;
        this.report(info, 'observed', { adoptedNow: true });
      }
      await this.stampActivity(info);
      return { info, created: false, adopted };
    }
    const now = new Date().toISOString();
    const metadata: k8s.V1ObjectMeta = {
      name,
      labels: { [labels.managedBy]: 'tend' },
      annotations:
        role === 'app'
          ? {
              [annotations.project]: project,
              [annotations.environment]: this.ctx.environment.name,
              [annotations.createdAt]: now,
              [annotations.lastActivity]: now,
            }
          : { [annotations.role]: 'system', [annotations.createdAt]: now },
    };
    let created: NamespaceInfo;
    try {
      created = toInfo(
        await this.retry(
          `create namespace ${name}`,
          () => this.connection.core.createNamespace({ body: { metadata } }),
          false,
        ),
      );
    } catch (error) {
      const f = describeFailure(error);
      if (f.status !== 409) throw apiError(error, this.describe(`create namespace ${name}`));
      // Created concurrently (another tend, or a retried request that had succeeded).
      const again = await this.readNamespace(name);
      if (!again || again.state !== 'ready') throw apiError(error, this.describe(`create namespace ${name}`));
      this.report(again, 'observed');
      return { info: again, created: false, adopted: false };
    }
    lastStamped.set(`${this.identity.clusterId}\0${name}`, Date.now());
    this.report(created, 'created');
    return { info: created, created: true, adopted: false };
  }

  private async waitUntilGone(name: string, info: NamespaceInfo): Promise<undefined> {
    const deadline = Date.now() + this.settings.namespaceTimeoutMs;
    this.ctx.log.info(`namespace ${name} is terminating; waiting for it to be gone before re-creating it`);
    for (;;) {
      const now = await this.readNamespace(name);
      if (!now) {
        this.report(missing(name), 'observed');
        return undefined;
      }
      if (Date.now() > deadline) {
        throw new TendError(
          'TEND_K8S_NAMESPACE',
          `namespace ${name} is still terminating after ${Math.round(this.settings.namespaceTimeoutMs / 1000)} s; ` +
            'something holds its finalizers (check `kubectl get namespace ' +
            `${name} -o yaml\`)`,
          { detail: { namespace: name, uid: info.uid } },
        );
      }
      if (this.ctx.signal.aborted)
        throw new TendError('TEND_INTERRUPTED', `interrupted while waiting for ${name}`);
      await delay(250);
    }
  }

  /**
   * The one way tend deletes a namespace (`tend cleanup env` and the cleanup executors): a fresh
   * read; the ownership proof (managed-by label, project annotation, not adopted, not a system
   * namespace — and, when the caller knows them, the environment annotation, the recorded uid, no
   * `tend.dev/last-activity` after the decision, not a protected name); then DELETE with
   * `preconditions: {uid, resourceVersion}` of that read; then wait until it is gone and report
   * `missing`/`deleted`. Cleanup is not activity: nothing is stamped (a stamp would also change the
   * resourceVersion).
   */
  async deleteOwnedNamespace(name: string, checks: DeletionChecks = {}): Promise<NamespaceDeletion> {
    const role = this.roleOf(name);
    const project = this.ctx.environment.project;
    let info: NamespaceInfo | undefined;
    try {
      // Not enter(): a namespace that cannot be read must not pass for one that does not exist.
      info = await this.readNamespace(name);
    } catch (error) {
      this.report({ name, state: 'ready', labels: {}, annotations: {} }, 'observed', {
        unverified: (error as Error).message.slice(0, 500),
      });
      throw error;
    }
    this.report(info ?? missing(name), 'observed');
    if (!info) return { outcome: 'gone', message: `namespace ${name} does not exist (already gone)` };
    const refusal = role === 'app' ? this.refusal(info, project, checks) : 'it is a system namespace';
    if (refusal) return { outcome: 'refused', message: `namespace ${name} left alone: ${refusal}` };
    if (checks.dryRun) {
      return { outcome: 'refused', message: `dry run: namespace ${name} passed every check; not deleted` };
    }
    if (info.state === 'ready') {
      try {
        await this.retry(
          `delete namespace ${name}`,
          () =>
            this.connection.core.deleteNamespace({
              name,
              body: { preconditions: { uid: info.uid!, resourceVersion: info.resourceVersion! } },
            }),
          true,
        );
      } catch (error) {
        const status = describeFailure(error).status;
        if (status === 404) {
          this.report(missing(name), 'observed');
          return { outcome: 'gone', message: `namespace ${name} was already gone` };
        }
        if (status === 409) {
          return {
            outcome: 'changed',
            message: `namespace ${name} changed since the check (uid or resourceVersion); not deleted`,
          };
        }
        throw apiError(error, this.describe(`delete namespace ${name}`));
      }
      this.report({ ...info, state: 'terminating' }, 'deleted');
    }
    const deadline = Date.now() + this.settings.namespaceTimeoutMs;
    for (;;) {
      const now = await this.readNamespace(name);
      if (!now || now.uid !== info.uid) break;
      if (Date.now() > deadline) {
        throw new TendError(
          'TEND_K8S_TIMEOUT',
          `namespace ${name} is still terminating after ${Math.round(this.settings.namespaceTimeoutMs / 1000)} s`,
          { detail: { namespace: name, uid: info.uid } },
        );
      }
      await delay(goneIntervalMs);
    }
    this.report({ ...info, state: 'missing' }, 'deleted');
    return {
      outcome: 'deleted',
      message:
        info.state === 'ready'
          ? `deleted namespace ${name}`
          : `namespace ${name} was already terminating; now gone`,
    };
  }

  /** Why a namespace fails the ownership proof or a caller's check; undefined when it passes. */
  private refusal(info: NamespaceInfo, project: string, checks: DeletionChecks): string | undefined {
    if (info.annotations[annotations.adopted] === 'true') return 'it existed before tend used it (adopted)';
    if (info.labels[labels.managedBy] !== 'tend')
      return `it is not managed by tend (no ${labels.managedBy}=tend label)`;
    if (info.annotations[annotations.role] === 'system') return 'it is a tend system namespace';
    if (info.annotations[annotations.project] !== project)
      return `it belongs to project "${info.annotations[annotations.project] ?? '(none)'}"`;
    if (
      checks.environment !== undefined &&
      info.annotations[annotations.environment] !== checks.environment
    ) {
      return `it belongs to environment "${info.annotations[annotations.environment] ?? '(none)'}", not "${checks.environment}"`;
    }
    if (checks.uid && info.uid !== checks.uid)
      return `it was re-created (uid ${info.uid}, the recorded one is ${checks.uid})`;
    const protectedBy = checks.protectedName?.(info.name);
    if (protectedBy) return `its name is protected (${protectedBy})`;
    if (checks.notActiveAfter !== undefined) {
      const stamped = info.annotations[annotations.lastActivity];
      const at = stamped ? Date.parse(stamped) : NaN;
      if (stamped && !Number.isFinite(at))
        return `its ${annotations.lastActivity} "${stamped}" is not a time`;
      if (at > Date.parse(checks.notActiveAfter))
        return `it was used at ${stamped}, after the decision (activity ${checks.notActiveAfter})`;
    }
    return undefined;
  }

  /**
   * Every namespace labelled `managed-by=tend`, in pages. `complete` only if every page arrived
   * and the count agrees with what the API announced: a failed page, an expired continue token or
   * a list that came back shorter than announced (`remainingItemCount`, or a one-item probe) is
   * incomplete, with the reason. Cluster-scoped reads: no namespace is entered or stamped.
   */
  async listManagedNamespaces(pageSize = 500): Promise<ManagedNamespaceList> {
    const items: NamespaceInfo[] = [];
    const labelSelector = `${labels.managedBy}=tend`;
    const list = (limit: number, cont?: string) =>
      this.retry(
        'list namespaces',
        () =>
          this.connection.core.listNamespace({ labelSelector, limit, ...(cont ? { _continue: cont } : {}) }),
        true,
      );
    try {
      let cont: string | undefined;
      let announced: number | undefined;
      do {
        const page = await list(pageSize, cont);
        for (const ns of page.items) items.push(toInfo(ns));
        cont = page.metadata?._continue || undefined;
        const remaining = page.metadata?.remainingItemCount;
        if (cont && remaining !== undefined && remaining !== null)
          announced = items.length + Number(remaining);
        if (this.ctx.signal.aborted) return { complete: false, error: 'interrupted', items };
      } while (cont);
      if (announced !== undefined && items.length < announced) {
        return {
          complete: false,
          error: `the list was truncated: ${announced} namespaces announced, ${items.length} arrived`,
          items,
        };
      }
      // A short last page looks like a complete list: one more question, asked differently, must
      // agree where it can count (a real API server leaves out remainingItemCount with selectors).
      const probe = await list(1);
      const more = probe.metadata?.remainingItemCount;
      const probed = probe.metadata?._continue
        ? more !== undefined && more !== null
          ? probe.items.length + Number(more)
          : undefined
        : probe.items.length;
      if (probed !== undefined && probed !== items.length) {
        return {
          complete: false,
          error: `the list was truncated or changed while listing: ${items.length} namespaces listed, ${probed} counted`,
          items,
        };
      }
      return { complete: true, items };
    } catch (error) {
      const f = describeFailure(error);
      const why =
        f.status === 410
          ? 'the continue token expired'
          : `${f.status ?? f.networkCode ?? 'error'} ${f.message}`;
      return { complete: false, error: `listing namespaces failed after ${items.length}: ${why}`, items };
    }
  }

  /** Every namespaced call: first contact reported, retries, namespace changes noticed, clear errors. */
  private async request<T>(
    namespace: string,
    what: string,
    fn: () => Promise<T>,
    idempotent = true,
  ): Promise<T> {
    await this.enter(namespace);
    try {
      return await this.retry(what, fn, idempotent);
    } catch (error) {
      await this.noticeNamespaceChange(namespace, error);
      throw apiError(error, this.describe(what, namespace));
    }
  }

  /** Like request(), but a 404 of the object itself is `undefined`. */
  private async requestOptional<T>(
    namespace: string,
    what: string,
    fn: () => Promise<T>,
  ): Promise<T | undefined> {
    try {
      return await this.request(namespace, what, fn);
    } catch (error) {
      if (describeFailure((error as TendError).cause).status === 404) return undefined;
      throw error;
    }
  }

  /** Creates a pod; a retried create that had already succeeded is recognised by its request id. */
  async createPod(namespace: string, pod: k8s.V1Pod): Promise<k8s.V1Pod> {
    const requestId = randomBytes(8).toString('hex');
    const body: k8s.V1Pod = {
      ...pod,
      metadata: {
        ...pod.metadata,
        namespace,
        annotations: { ...pod.metadata?.annotations, [annotations.requestId]: requestId },
      },
    };
    const name = body.metadata!.name!;
    let attempt = 0;
    return this.request(
      namespace,
      `create pod ${name} in ${namespace}`,
      async () => {
        attempt++;
        try {
          return await this.connection.core.createNamespacedPod({ namespace, body });
        } catch (error) {
          if (attempt > 1 && describeFailure(error).status === 409) {
            const existing = await this.connection.core.readNamespacedPod({ name, namespace });
            if (existing.metadata?.annotations?.[annotations.requestId] === requestId) return existing;
          }
          throw error;
        }
      },
      true,
    );
  }

  readPod(namespace: string, name: string): Promise<k8s.V1Pod | undefined> {
    return this.requestOptional(namespace, `read pod ${name} in ${namespace}`, () =>
      this.connection.core.readNamespacedPod({ name, namespace }),
    );
  }

  async deletePod(namespace: string, name: string): Promise<void> {
    await this.requestOptional(namespace, `delete pod ${name} in ${namespace}`, () =>
      this.connection.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }),
    );
  }

  /** Deletes the pod and waits (bounded) until it is gone, so nothing is left behind. */
  async removePod(namespace: string, name: string, timeoutMs = 30_000): Promise<void> {
    await this.deletePod(namespace, name);
    const deadline = Date.now() + timeoutMs;
    while ((await this.readPod(namespace, name)) && Date.now() < deadline) await delay(100);
  }

  async listPods(namespace: string, labelSelector?: string): Promise<k8s.V1Pod[]> {
    const list = await this.request(namespace, `list pods in ${namespace}`, () =>
      this.connection.core.listNamespacedPod({ namespace, ...(labelSelector ? { labelSelector } : {}) }),
    );
    return list.items;
  }

  async listEvents(namespace: string, fieldSelector?: string): Promise<k8s.CoreV1Event[]> {
    const list = await this.request(namespace, `list events in ${namespace}`, () =>
      this.connection.core.listNamespacedEvent({ namespace, ...(fieldSelector ? { fieldSelector } : {}) }),
    );
    return list.items;
  }

  /**
   * Follows a container's log, line by line, until it ends or `stop` aborts. Resolves when the
   * stream ends; a log that cannot be opened rejects.
   */
  async streamLog(
    namespace: string,
    pod: string,
    container: string,
    onLine: (line: string) => void,
  ): Promise<{ done: Promise<void>; stop: () => void }> {
    const sink = lineWriter(onLine);
    const done = new Promise<void>((resolve) => {
      sink.on('finish', resolve);
      sink.on('close', resolve);
      sink.on('error', () => resolve());
    });
    const controller = await this.request(namespace, `read the log of pod ${pod} in ${namespace}`, () =>
      this.connection.log.log(namespace, pod, container, sink, { follow: true }),
    );
    return {
      done,
      stop: () => {
        controller.abort();
        sink.end();
      },
    };
  }

  /** Runs a command in a container (pods/exec) and returns its exit code. */
  async exec(
    namespace: string,
    pod: string,
    container: string,
    command: string[],
    streams: ExecStreams,
    idempotent = false,
  ): Promise<number> {
    const what = `exec \`${command.join(' ')}\` in pod ${pod} (${namespace})`;
    return this.request(
      namespace,
      what,
      async () => {
        const out = lineWriter(streams.onStdout ?? (() => {}));
        const err = lineWriter(streams.onStderr ?? (() => {}));
        let status: k8s.V1Status | undefined;
        const ws = await this.connection.exec.exec(
          namespace,
          pod,
          container,
          command,
          out,
          err,
          streams.stdin ? streams.stdin() : null,
          false,
          (s) => (status = s),
        );
        await new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) resolve();
          ws.on('close', () => resolve());
        });
        out.end();
        err.end();
        if (!status) {
          throw Object.assign(new Error(`${what}: the connection closed before the command finished`), {
            code: 'ECONNRESET',
          });
        }
        return exitCodeOf(status);
      },
      idempotent,
    );
  }

  /** Attaches to a running container, feeding it stdin and reading its output until it ends. */
  async attach(namespace: string, pod: string, container: string, streams: ExecStreams): Promise<void> {
    const what = `attach to pod ${pod} (${namespace})`;
    await this.request(
      namespace,
      what,
      async () => {
        const out = lineWriter(streams.onStdout ?? (() => {}));
        const err = lineWriter(streams.onStderr ?? (() => {}));
        const ws = await this.connection.attach.attach(
          namespace,
          pod,
          container,
          out,
          err,
          streams.stdin ? streams.stdin() : null,
          false,
        );
        await new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) resolve();
          ws.on('close', () => resolve());
        });
        out.end();
        err.end();
      },
      false,
    );
  }

  /** Whether a kind is namespaced (discovery, cached per call). Unknown kinds are a manifest error. */
  async isNamespaced(apiVersion: string, kind: string): Promise<boolean> {
    const key = `${apiVersion}/${kind}`;
    const cached = this.namespacedCache.get(key);
    if (cached !== undefined) return cached;
    const objects = this.connection.objects as unknown as {
      resource(apiVersion: string, kind: string): Promise<k8s.V1APIResource | undefined>;
    };
    let resource: k8s.V1APIResource | undefined;
    try {
      resource = await this.retry(`discover ${key}`, () => objects.resource(apiVersion, kind), true);
    } catch (error) {
      const f = describeFailure(error);
      if (f.status !== 404) throw apiError(error, this.describe(`discover ${key}`));
    }
    if (!resource) {
      throw new TendError(
        'TEND_K8S_MANIFEST_INVALID',
        `the cluster does not know kind ${kind} in apiVersion ${apiVersion}`,
        { detail: { apiVersion, kind } },
      );
    }
    this.namespacedCache.set(key, resource.namespaced);
    return resource.namespaced;
  }

  /** Server-side apply (field manager `tend`, forcing conflicts) of one object into the namespace. */
  async apply(namespace: string, object: KubeObject): Promise<KubeObject> {
    const { k8s } = this.connection;
    const body = { ...object, metadata: { ...object.metadata, namespace } };
    return this.request(
      namespace,
      `apply ${object.kind} ${object.metadata?.name} in ${namespace}`,
      () =>
        this.connection.objects.patch(
          body,
          undefined,
          undefined,
          'tend',
          true,
          k8s.PatchStrategy.ServerSideApply,
        ) as Promise<KubeObject>,
    );
  }

  readObject(namespace: string, ref: ObjectRef): Promise<KubeObject | undefined> {
    return this.requestOptional(
      namespace,
      `read ${ref.kind} ${ref.name} in ${namespace}`,
      () =>
        this.connection.objects.read({
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          metadata: { name: ref.name, namespace },
        }) as Promise<KubeObject>,
    );
  }

  async deleteObject(namespace: string, ref: ObjectRef): Promise<boolean> {
    const result = await this.requestOptional(
      namespace,
      `delete ${ref.kind} ${ref.name} in ${namespace}`,
      () =>
        this.connection.objects.delete(
          { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace } },
          undefined,
          undefined,
          undefined,
          undefined,
          'Background',
        ),
    );
    return result !== undefined;
  }
}

function missing(name: string): NamespaceInfo {
  return { name, state: 'missing', labels: {}, annotations: {} };
}

function toInfo(ns: k8s.V1Namespace): NamespaceInfo {
  const meta = ns.metadata ?? {};
  const terminating = ns.status?.phase === 'Terminating' || meta.deletionTimestamp !== undefined;
  const info: NamespaceInfo = {
    name: meta.name ?? '',
    state: terminating ? 'terminating' : 'ready',
    labels: { ...meta.labels },
    annotations: { ...meta.annotations },
  };
  if (meta.uid) info.uid = meta.uid;
  if (meta.resourceVersion) info.resourceVersion = meta.resourceVersion;
  return info;
}

function exitCodeOf(status: k8s.V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  if (Number.isInteger(code)) return code;
  throw new TendError('TEND_K8S_API', `exec failed: ${status.message ?? status.reason ?? 'unknown error'}`);
}

/** A writable that calls `onLine` for each complete line (and the rest at the end). */
function lineWriter(onLine: (line: string) => void): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      const text = rest + chunk.toString();
      const lines = text.split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
      callback();
    },
    final(callback) {
      if (rest) onLine(rest);
      rest = '';
      callback();
    },
  });
}
