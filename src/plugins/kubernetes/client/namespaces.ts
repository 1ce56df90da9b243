/**
 * Namespaces: observe (read-only), ensure (create or adopt), delete the app namespace when tend
 * owns it for this project (the one delete path, for `tend cleanup env` and the cleanup
 * executors), and list the tend-labelled ones for an inventory. Through the request gate, which
 * reports each namespace it enters.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../../errors.js';
import { apiError, describeFailure } from './errors.js';
import { lastStamped, type RequestGate } from './gate.js';
import { annotations, labels, missing, ownedBy, toInfo, type NamespaceInfo } from './namespace-info.js';
import type { List, V1Namespace, V1ObjectMeta } from './wire.js';

export class NamespaceCalls {
  constructor(private readonly gate: RequestGate) {}

  /**
   * Read-only: reports the namespace as it is (`ready`, `terminating` or `missing`); never creates
   * it. A read of this session a moment old serves, unless `fresh`.
   */
  async observe(name: string, stamp = true, fresh = false): Promise<NamespaceInfo | undefined> {
    this.gate.roleOf(name);
    this.gate.contacted.delete(name);
    return this.gate.enter(name, stamp, fresh);
  }

  /**
   * Ensures the namespace exists: an existing one is reported and, for the app namespace, adopted
   * unless tend created it for this project; a terminating one is waited for (bounded) and then
   * re-created; a missing one is reported `missing` before it is created, then `ready`/`created`.
   */
  async ensure(name: string): Promise<{ info: NamespaceInfo; created: boolean; adopted: boolean }> {
    const role = this.gate.roleOf(name);
    const project = this.gate.ctx.environment.project;
    let info = await this.observe(name, true, true);
    if (info?.state === 'terminating') info = await this.waitUntilGone(name, info);
    if (info && info.state === 'ready') {
      let adopted = false;
      if (role === 'app' && !ownedBy(info, project) && info.annotations[annotations.adopted] !== 'true') {
        info = await this.gate.patchNamespaceAnnotations(name, {
          [annotations.adopted]: 'true',
          [annotations.lastActivity]: new Date().toISOString(),
        });
        adopted = true;
        this.gate.report(info, 'observed', { adoptedNow: true });
      }
      await this.gate.stampActivity(info);
      return { info, created: false, adopted };
    }
    const now = new Date().toISOString();
    const metadata: V1ObjectMeta = {
      name,
      labels: { [labels.managedBy]: 'tend' },
      annotations:
        role === 'app'
          ? {
              [annotations.project]: project,
              [annotations.environment]: this.gate.ctx.environment.name,
              [annotations.createdAt]: now,
              [annotations.lastActivity]: now,
            }
          : { [annotations.role]: 'system', [annotations.createdAt]: now },
    };
    let created: NamespaceInfo;
    try {
      created = toInfo(
        await this.gate.retry(
          `create namespace ${name}`,
          () =>
            this.gate.connection.request<V1Namespace>({
              method: 'POST',
              path: '/api/v1/namespaces',
              body: { metadata },
            }),
          false,
        ),
      );
    } catch (error) {
      const f = describeFailure(error);
      if (f.status !== 409) throw apiError(error, this.gate.describe(`create namespace ${name}`));
      // Created concurrently (another tend, or a retried request that had succeeded).
      const again = await this.gate.readNamespace(name);
      if (!again || again.state !== 'ready')
        throw apiError(error, this.gate.describe(`create namespace ${name}`));
      this.gate.refuseAsApp(again);
      this.gate.report(again, 'observed');
      return { info: again, created: false, adopted: false };
    }
    lastStamped.set(`${this.gate.identity.clusterId}\0${name}`, Date.now());
    this.gate.remember(name, created);
    this.gate.report(created, 'created');
    return { info: created, created: true, adopted: false };
  }

  private async waitUntilGone(name: string, info: NamespaceInfo): Promise<undefined> {
    const deadline = Date.now() + this.gate.settings.namespaceTimeoutMs;
    this.gate.ctx.log.info(
      `namespace ${name} is terminating; waiting for it to be gone before re-creating it`,
    );
    for (;;) {
      const now = await this.gate.readNamespace(name);
      if (!now) {
        this.gate.report(missing(name), 'observed');
        return undefined;
      }
      if (Date.now() > deadline) {
        throw new TendError(
          'TEND_K8S_NAMESPACE',
          `namespace ${name} is still terminating after ${Math.round(this.gate.settings.namespaceTimeoutMs / 1000)} s; ` +
            'something holds its finalizers (check `kubectl get namespace ' +
            `${name} -o yaml\`)`,
          { detail: { namespace: name, uid: info.uid } },
        );
      }
      if (this.gate.ctx.signal.aborted)
        throw new TendError('TEND_INTERRUPTED', `interrupted while waiting for ${name}`);
      await delay(250);
    }
  }

  /**
   * A fresh read, what the cleanup executors' checks look at first: reported as observed, as
   * every namespace a call reaches is, but never stamped with activity (an executor's look is no
   * use); a read that fails reports the namespace unverified, never as missing.
   */
  async read(name: string): Promise<NamespaceInfo | undefined> {
    let info: NamespaceInfo | undefined;
    try {
      info = await this.gate.readNamespace(name);
    } catch (error) {
      this.gate.report({ name, state: 'ready', labels: {}, annotations: {} }, 'observed', {
        unverified: (error as Error).message.slice(0, 500),
      });
      throw error;
    }
    this.gate.report(info ?? missing(name), 'observed');
    return info;
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
  async deleteOwned(name: string, checks: DeletionChecks = {}): Promise<NamespaceDeletion> {
    const role = this.gate.roleOf(name);
    const project = this.gate.ctx.environment.project;
    let info: NamespaceInfo | undefined;
    try {
      // Not enter(): a namespace that cannot be read must not pass for one that does not exist.
      info = await this.gate.readNamespace(name);
    } catch (error) {
      this.gate.report({ name, state: 'ready', labels: {}, annotations: {} }, 'observed', {
        unverified: (error as Error).message.slice(0, 500),
      });
      throw error;
    }
    this.gate.report(info ?? missing(name), 'observed');
    if (!info) return { outcome: 'gone', message: `namespace ${name} does not exist (already gone)` };
    const refusal = role === 'app' ? refusalOf(info, project, checks) : 'it is a system namespace';
    if (refusal) return { outcome: 'refused', message: `namespace ${name} left alone: ${refusal}` };
    if (checks.dryRun) {
      return { outcome: 'refused', message: `dry run: namespace ${name} passed every check; not deleted` };
    }
    const stop = info.state === 'ready' ? await checks.confirm?.() : undefined;
    if (stop) return { outcome: 'refused', message: `namespace ${name} left alone: ${stop}` };
    if (info.state === 'ready') {
      // The archive is stored before the DELETE, or nothing is deleted (its error is the job's).
      await checks.beforeDelete?.(info);
      try {
        await this.gate.retry(
          `delete namespace ${name}`,
          () =>
            this.gate.connection.request({
              method: 'DELETE',
              path: `/api/v1/namespaces/${encodeURIComponent(name)}`,
              body: { preconditions: { uid: info.uid!, resourceVersion: info.resourceVersion! } },
            }),
          true,
        );
      } catch (error) {
        const status = describeFailure(error).status;
        if (status !== 404 && status !== 409)
          throw apiError(error, this.gate.describe(`delete namespace ${name}`));
        // A 409 or 404 may answer a retry of a DELETE whose first answer was lost: what happened
        // is read again, never guessed (a deletion reported as "changed" would be retried for
        // ever; a namespace that changed must not be reported deleted).
        const now = await this.gate.readNamespace(name);
        if (!now) {
          this.gate.report(missing(name), 'observed');
          return { outcome: 'gone', message: `namespace ${name} is gone` };
        }
        if (now.uid !== info.uid || now.state !== 'terminating') {
          this.gate.report(now, 'observed');
          return {
            outcome: 'changed',
            message: `namespace ${name} changed since the check (uid or resourceVersion); not deleted`,
          };
        }
      }
      this.gate.remember(name, { ...info, state: 'terminating' });
      this.gate.report({ ...info, state: 'terminating' }, 'deleted');
    }
    const deadline = Date.now() + this.gate.settings.namespaceTimeoutMs;
    for (;;) {
      const now = await this.gate.readNamespace(name);
      if (!now || now.uid !== info.uid) break;
      if (Date.now() > deadline) {
        throw new TendError(
          'TEND_K8S_TIMEOUT',
          `namespace ${name} is still terminating after ${Math.round(this.gate.settings.namespaceTimeoutMs / 1000)} s`,
          { detail: { namespace: name, uid: info.uid } },
        );
      }
      await delay(goneIntervalMs);
    }
    this.gate.report({ ...info, state: 'missing' }, 'deleted');
    return {
      outcome: 'deleted',
      message:
        info.state === 'ready'
          ? `deleted namespace ${name}`
          : `namespace ${name} was already terminating; now gone`,
    };
  }

  /**
   * Every namespace labelled `managed-by=tend`, in pages. `complete` only if every page arrived
   * and the count agrees with what the API announced: a failed page, an expired continue token or
   * a list that came back shorter than announced (`remainingItemCount`, or a one-item probe) is
   * incomplete, with the reason. Every namespace is listed and the label checked here: an API
   * server announces no count for a list with a label selector, so a truncated one would look
   * whole. Cluster-scoped reads: no namespace is entered or stamped.
   */
  async listManaged(pageSize = 500): Promise<ManagedNamespaceList> {
    const items: NamespaceInfo[] = [];
    let listed = 0;
    const list = (limit: number, cont?: string) =>
      this.gate.retry(
        'list namespaces',
        () =>
          this.gate.connection.request<List<V1Namespace>>({
            method: 'GET',
            path: '/api/v1/namespaces',
            query: { limit, continue: cont },
          }),
        true,
      );
    try {
      let cont: string | undefined;
      let announced: number | undefined;
      do {
        const page = await list(pageSize, cont);
        listed += page.items.length;
        for (const ns of page.items) {
          if (ns.metadata?.labels?.[labels.managedBy] === 'tend') items.push(toInfo(ns));
        }
        cont = page.metadata?.continue || undefined;
        const remaining = page.metadata?.remainingItemCount;
        if (cont && remaining !== undefined && remaining !== null) announced = listed + Number(remaining);
        if (this.gate.ctx.signal.aborted) return { complete: false, error: 'interrupted', items };
      } while (cont);
      if (announced !== undefined && listed < announced) {
        return {
          complete: false,
          error: `the list was truncated: ${announced} namespaces announced, ${listed} arrived`,
          items,
        };
      }
      // A short last page looks like a complete list: one more question, asked differently, must agree.
      const probe = await list(1);
      const more = probe.metadata?.remainingItemCount;
      const probed = probe.metadata?.continue
        ? more !== undefined && more !== null
          ? probe.items.length + Number(more)
          : undefined
        : probe.items.length;
      if (probed !== undefined && probed !== listed) {
        return {
          complete: false,
          error: `the list was truncated or changed while listing: ${listed} namespaces listed, ${probed} counted`,
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
}

/** How often a deleted namespace is read again until it is gone. */
const goneIntervalMs = 100;

/** What `deleteOwned` checks beyond the ownership proof (the cleanup executors know them). */
export interface DeletionChecks {
  /** The `tend.dev/environment` annotation must name this environment. */
  environment?: string;
  /** The recorded uid: a namespace re-created under the same name is another namespace. */
  uid?: string | null;
  /**
   * The window of the claim that tend created it (ISO times, the server's tolerance included):
   * a `creationTimestamp` outside it, or none, means the claim is not this namespace's.
   */
  createdWithin?: { from: string; until: string };
  /**
   * The resourceVersion the caller checked: another one means the namespace changed since (a
   * use, a relabel), and nothing is done.
   */
  version?: string;
  /** ISO time the decision was based on: a `tend.dev/last-activity` after it means the namespace was used since. */
  notActiveAfter?: string;
  /** Names never deleted: returns why (e.g. the matching glob), or undefined. */
  protectedName?: (name: string) => string | undefined;
  /** Every check, no DELETE. */
  dryRun?: boolean;
  /** The last word before the DELETE (the server's, at an executor): why to stop, or undefined. */
  confirm?: () => Promise<string | undefined>;
  /**
   * Right before the DELETE, after every check and `confirm` (the executor's archive): what it
   * throws stops the deletion and is the caller's error.
   */
  beforeDelete?: (info: NamespaceInfo) => Promise<void>;
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

/** Why a namespace fails the ownership proof or a caller's check; undefined when it passes. */
export function refusalOf(info: NamespaceInfo, project: string, checks: DeletionChecks): string | undefined {
  if (info.annotations[annotations.adopted] === 'true') return 'it existed before tend used it (adopted)';
  if (info.labels[labels.managedBy] !== 'tend')
    return `it is not managed by tend (no ${labels.managedBy}=tend label)`;
  if (info.annotations[annotations.role] === 'system') return 'it is a tend system namespace';
  if (info.annotations[annotations.project] !== project)
    return `it belongs to project "${info.annotations[annotations.project] ?? '(none)'}"`;
  if (checks.environment !== undefined && info.annotations[annotations.environment] !== checks.environment) {
    return `it belongs to environment "${info.annotations[annotations.environment] ?? '(none)'}", not "${checks.environment}"`;
  }
  if (checks.uid && info.uid !== checks.uid)
    return `it was re-created (uid ${info.uid}, the recorded one is ${checks.uid})`;
  if (checks.version !== undefined && info.resourceVersion !== checks.version)
    return `it changed since the check (resourceVersion ${info.resourceVersion ?? '(none)'}, checked ${checks.version})`;
  if (checks.createdWithin) {
    const outside = createdOutside(info.createdAt, checks.createdWithin);
    if (outside) return outside;
  }
  const protectedBy = checks.protectedName?.(info.name);
  if (protectedBy) return `its name is protected (${protectedBy})`;
  if (checks.notActiveAfter !== undefined) {
    const stamped = info.annotations[annotations.lastActivity];
    const at = stamped ? Date.parse(stamped) : NaN;
    if (stamped && !Number.isFinite(at)) return `its ${annotations.lastActivity} "${stamped}" is not a time`;
    if (at > Date.parse(checks.notActiveAfter))
      return `it was used at ${stamped}, after the decision (activity ${checks.notActiveAfter})`;
  }
  return undefined;
}

/**
 * Why the cluster's creation time of a namespace contradicts the claim that tend created it:
 * before the claiming session started, or after the server received the claim (each bound
 * already widened by the server's tolerance); undefined when it agrees.
 */
function createdOutside(createdAt: string | undefined, window: { from: string; until: string }) {
  const created = Date.parse(createdAt ?? '');
  const from = Date.parse(window.from);
  const until = Date.parse(window.until);
  if (!Number.isFinite(from) || !Number.isFinite(until))
    return `the window of the claim that tend created it (${window.from} to ${window.until}) is not a time`;
  if (!Number.isFinite(created))
    return 'the cluster does not say when it created it, so the claim that tend did cannot be checked';
  if (created < from) {
    return `the cluster created it at ${createdAt}, before the session that claims to have created it started (${window.from} with the clock skew tolerated)`;
  }
  if (created > until) {
    return `the cluster created it at ${createdAt}, after the server received the claim that tend created it (${window.until} with the clock skew tolerated)`;
  }
  return undefined;
}
