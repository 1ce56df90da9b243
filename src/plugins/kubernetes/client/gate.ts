/**
 * The request gate: every call the client makes goes through it. On the first contact with a
 * namespace in this handler call it reads the namespace and emits `namespaceStatus` — before the
 * work that can fail — and stamps `tend.dev/last-activity` (at most once a minute per namespace
 * and process). A state change noticed later by any call (a 404, a refusal because the namespace
 * is terminating) is checked and emitted again. Namespaces other than the app namespace and the
 * system namespaces are refused: tend never touches a namespace it cannot name a role for, and
 * never takes one annotated `tend.dev/role=system` as the app namespace. Retries and clear errors too.
 */
import { TendError } from '../../../errors.js';
import type { NamespaceRole, NamespaceStatusPayload, Target } from '../../../events/catalog.js';
import type { EnvironmentInfo, PluginContext, PluginPayload } from '../../../plugin/types.js';
import type { ProviderSettings } from '../config.js';
import { requestSignal, type Connection } from './connection.js';
import { apiError, describeFailure, withRetry } from './errors.js';
import { monotonicMs } from '../../../monotonic.js';
import { annotations, labels, missing, toInfo, type NamespaceInfo } from './namespace-info.js';
import type { V1Namespace } from './wire.js';

/** The content type of a JSON merge patch (RFC 7386). */
export const mergePatch = 'application/merge-patch+json';

/**
 * What the gate needs of a call: its broker, log and signal, and the project and environment it
 * reports namespaces for — a handler's PluginContext, or a cleanup call's with its job's.
 */
export type GateContext = Pick<PluginContext, 'events' | 'log' | 'signal'> & {
  environment: Pick<EnvironmentInfo, 'project' | 'name'>;
  /** A command's session: its calls share a namespace read of a moment ago (none: every look reads). */
  sessionId?: string;
};

/** Who the plugin is talking to; the provider's `init` computes it, every event carries it. */
export interface ClusterIdentity {
  clusterId: string;
  server: string;
  context: string;
  /** True when kube-system could not be read and the server URL stands in for the cluster id. */
  clusterIdFallback?: boolean;
}

const activityIntervalMs = 60_000;
/** Last `tend.dev/last-activity` stamp per cluster and namespace, for this process. */
export const lastStamped = new Map<string, number>();

/**
 * The last read of each namespace per session and cluster, and when (monotonic ms). A command's
 * calls look at the namespace within milliseconds of each other (`tend status` of two Deploys:
 * the provider and each Deploy), and a session records a namespace on its first contact: a
 * call's first contact takes a read of this session younger than `sharedReadMs` rather than
 * asking again, and is reported as ever. Only sessions share (a cleanup job's calls read afresh),
 * and whatever would create or adopt the namespace reads it afresh.
 */
const sessionReads = new Map<string, { info: NamespaceInfo | undefined; at: number }>();
const sharedReadMs = 1_000;

/** One per handler call: the namespaces contacted in this call, and the way every request goes. */
export class RequestGate {
  /** Namespaces contacted in this call, as last read. */
  readonly contacted = new Map<string, NamespaceInfo | undefined>();

  constructor(
    readonly connection: Connection,
    readonly ctx: GateContext,
    readonly settings: ProviderSettings,
    readonly identity: ClusterIdentity,
  ) {}

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
  report(
    info: NamespaceInfo,
    cause: NamespaceStatusPayload['cause'],
    extra: Record<string, unknown> = {},
    role: NamespaceRole = this.roleOf(info.name),
  ): void {
    const detail: Record<string, unknown> = { ...extra };
    if (this.identity.clusterIdFallback) detail.clusterIdFallback = true;
    if (info.uid) {
      detail.managedBy = info.labels[labels.managedBy] ?? null;
      detail.projectAnnotation = info.annotations[annotations.project] ?? null;
      detail.adopted = info.annotations[annotations.adopted] === 'true';
    }
    const payload: PluginPayload<'namespaceStatus'> = {
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

  describe(what: string, namespace?: string) {
    return {
      what,
      server: this.identity.server,
      context: this.identity.context,
      ...(namespace ? { namespace } : {}),
    };
  }

  /**
   * Runs a request with retries. Ctrl-C (the call's signal) aborts a request in flight and ends
   * its retries; a request made after Ctrl-C (stopping what the handler started: deleting its
   * pod) runs to its end.
   */
  retry<T>(what: string, fn: () => Promise<T>, idempotent: boolean): Promise<T> {
    const signal = this.ctx.signal.aborted ? undefined : this.ctx.signal;
    return withRetry(() => requestSignal.run(signal, fn), {
      retries: this.settings.retries,
      idempotent,
      ...(signal ? { signal } : {}),
      onRetry: (f, attempt, waitMs) =>
        this.ctx.log.debug(
          `${what}: ${f.status ?? f.networkCode ?? 'error'} ${f.message}; retry ${attempt} in ${waitMs} ms`,
        ),
    }).catch((error: unknown) => {
      // A request Ctrl-C cut off failed because tend stopped it, not because of the cluster.
      if (signal?.aborted && !(error instanceof TendError)) {
        throw new TendError('TEND_INTERRUPTED', `${what}: interrupted`, { cause: error });
      }
      throw error;
    });
  }

  /** Reads a namespace without reporting it; undefined when it does not exist. */
  async readNamespace(name: string): Promise<NamespaceInfo | undefined> {
    let info: NamespaceInfo | undefined;
    try {
      const ns = await this.retry(
        `read namespace ${name}`,
        () =>
          this.connection.request<V1Namespace>({
            method: 'GET',
            path: `/api/v1/namespaces/${encodeURIComponent(name)}`,
          }),
        true,
      );
      info = toInfo(ns);
    } catch (error) {
      if (describeFailure(error).status !== 404)
        throw apiError(error, this.describe(`read namespace ${name}`));
    }
    this.remember(name, info);
    return info;
  }

  /** A read of this session younger than `sharedReadMs`, else a new one. */
  private async sharedRead(name: string): Promise<NamespaceInfo | undefined> {
    const key = this.sessionKey(name);
    const last = key === undefined ? undefined : sessionReads.get(key);
    if (last && monotonicMs() - last.at < sharedReadMs) return last.info;
    return this.readNamespace(name);
  }

  /** What the cluster last said of a namespace (a read, or the answer to a change), for this session. */
  remember(name: string, info: NamespaceInfo | undefined): void {
    const key = this.sessionKey(name);
    if (key === undefined) return;
    const at = monotonicMs();
    // A process that runs many sessions (a test runner, a watch) keeps only the reads that serve.
    if (sessionReads.size >= 64) {
      for (const [k, read] of sessionReads) if (at - read.at >= sharedReadMs) sessionReads.delete(k);
    }
    sessionReads.set(key, { info, at });
  }

  private sessionKey(name: string): string | undefined {
    const { sessionId } = this.ctx;
    return sessionId === undefined ? undefined : `${sessionId}\0${this.identity.clusterId}\0${name}`;
  }

  /**
   * First contact with a namespace in this call: read it and report it. If it cannot be read,
   * it is still reported (as `ready`, marked unverified) before the error surfaces.
   */
  async enter(namespace: string, stamp = true, fresh = false): Promise<NamespaceInfo | undefined> {
    if (this.contacted.has(namespace)) return this.contacted.get(namespace);
    this.roleOf(namespace);
    let info: NamespaceInfo | undefined;
    try {
      info = fresh ? await this.readNamespace(namespace) : await this.sharedRead(namespace);
    } catch (error) {
      this.report({ name: namespace, state: 'ready', labels: {}, annotations: {} }, 'observed', {
        unverified: (error as Error).message.slice(0, 500),
      });
      const f = describeFailure((error as TendError).cause ?? error);
      // Without permission to read namespaces, work inside it may still be allowed.
      if (f.status === 403) return undefined;
      throw error;
    }
    if (info) this.refuseAsApp(info);
    this.report(info ?? missing(namespace), 'observed');
    if (info && stamp) await this.stampActivity(info);
    return info;
  }

  /**
   * The namespaces that can never be this environment's app namespace, refused before anything
   * stamps or adopts them: shared infrastructure, and another project's namespace.
   */
  refuseAsApp(info: NamespaceInfo): void {
    this.refuseSystemAsApp(info);
    this.refuseOtherProject(info);
  }

  /**
   * A namespace whose `tend.dev/project` names another project belongs to that project: reported
   * (role `app`, this environment's view of it), then refused. Its ownership annotations are never
   * rewritten and it is never marked adopted, so the owning project can still clean it up.
   */
  private refuseOtherProject(info: NamespaceInfo): void {
    const owner = info.annotations[annotations.project];
    const project = this.ctx.environment.project;
    if (owner === undefined || owner === project || this.roleOf(info.name) !== 'app') return;
    this.report(info, 'observed', { refused: 'other-project' });
    const environment = info.annotations[annotations.environment];
    throw new TendError(
      'TEND_K8S_NAMESPACE_OTHER_PROJECT',
      `namespace "${info.name}" belongs to project "${owner}"` +
        `${environment ? ` (environment ${environment})` : ''}: its ${annotations.project} annotation ` +
        `names that project, not "${project}". Give environment ${this.ctx.environment.name} of ` +
        `"${project}" another defaultNamespace in tend.yml (or set the provider's namespace:); ` +
        `tend never takes over another project's namespace`,
      { detail: { namespace: info.name, uid: info.uid, owner, project } },
    );
  }

  /**
   * A namespace annotated `tend.dev/role=system` is shared infrastructure, never an app namespace:
   * reported as what it is (role `system`), then refused before anything stamps or adopts it.
   */
  private refuseSystemAsApp(info: NamespaceInfo): void {
    if (info.annotations[annotations.role] !== 'system' || this.roleOf(info.name) !== 'app') return;
    this.report(info, 'observed', {}, 'system');
    throw new TendError(
      'TEND_K8S_SYSTEM_NAMESPACE',
      `namespace "${info.name}" is annotated ${annotations.role}=system (shared tend infrastructure), so it ` +
        `cannot be the app namespace of environment ${this.ctx.environment.name}; choose another ` +
        `defaultNamespace (or the provider's namespace) — tend never adopts a system namespace`,
      { detail: { namespace: info.name, uid: info.uid } },
    );
  }

  /**
   * After any error of a call in a namespace that may mean the namespace changed — a 404 (of the
   * namespace or of an object in it: a pod that "disappeared" because its namespace is being
   * deleted) or a refusal because it is terminating — reads the namespace again and reports it
   * (`missing` or `terminating`, cause `observed`) when it is no longer as this call last saw it.
   */
  async noticeNamespaceChange(namespace: string, error: unknown): Promise<void> {
    const f = describeFailure(error);
    const terminating = f.causes?.some((c) => c.reason === 'NamespaceTerminating') ?? false;
    if (f.status !== 404 && !terminating) return;
    let now: NamespaceInfo;
    try {
      now = (await this.readNamespace(namespace)) ?? missing(namespace);
    } catch {
      return; // The original error is what the caller reports.
    }
    const before = this.contacted.get(namespace);
    if (before && before.state === now.state && before.uid === now.uid) return;
    this.report(now, 'observed');
  }

  /** Stamps `tend.dev/last-activity` on app namespaces tend manages or adopted, at most once a minute. */
  async stampActivity(info: NamespaceInfo, force = false): Promise<void> {
    if (info.state !== 'ready' || this.roleOf(info.name) !== 'app') return;
    const ours = info.labels[labels.managedBy] === 'tend' || info.annotations[annotations.adopted] === 'true';
    if (!ours) return;
    const key = `${this.identity.clusterId}\0${info.name}`;
    const now = Date.now();
    if (!force && now - (lastStamped.get(key) ?? 0) < activityIntervalMs) return;
    // Stamped less than a minute ago by another tend (the namespace was just read): one PATCH fewer
    // for every command run in a row. A stamp ahead of this machine's clock is written over.
    const stamped = Date.parse(info.annotations[annotations.lastActivity] ?? '');
    if (!force && stamped <= now && now - stamped < activityIntervalMs) {
      lastStamped.set(key, stamped);
      return;
    }
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

  async patchNamespaceAnnotations(name: string, values: Record<string, string>): Promise<NamespaceInfo> {
    const ns = await this.retry(
      `annotate namespace ${name}`,
      () =>
        this.connection.request<V1Namespace>({
          method: 'PATCH',
          path: `/api/v1/namespaces/${encodeURIComponent(name)}`,
          body: { metadata: { annotations: values } },
          contentType: mergePatch,
        }),
      true,
    ).catch((error: unknown) => {
      throw apiError(error, this.describe(`annotate namespace ${name}`));
    });
    const info = toInfo(ns);
    this.remember(name, info);
    return info;
  }

  /** Every namespaced call: first contact reported, retries, namespace changes noticed, clear errors. */
  async request<T>(namespace: string, what: string, fn: () => Promise<T>, idempotent = true): Promise<T> {
    await this.enter(namespace);
    try {
      return await this.retry(what, fn, idempotent);
    } catch (error) {
      await this.noticeNamespaceChange(namespace, error);
      throw apiError(error, this.describe(what, namespace));
    }
  }

  /** Like request(), but a 404 of the object itself is `undefined`. */
  async requestOptional<T>(namespace: string, what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await this.request(namespace, what, fn);
    } catch (error) {
      if (describeFailure((error as TendError).cause).status === 404) return undefined;
      throw error;
    }
  }
}
