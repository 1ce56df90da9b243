/**
 * Namespaces: observe (read-only), ensure (create or adopt), and delete the app namespace when
 * tend owns it for this project. Through the request gate, which reports each of them.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { TendError } from '../../../errors.js';
import { apiError, describeFailure } from './errors.js';
import { lastStamped, type RequestGate } from './gate.js';
import { annotations, labels, missing, ownedBy, toInfo, type NamespaceInfo } from './namespace-info.js';

export class NamespaceCalls {
  constructor(private readonly gate: RequestGate) {}

  /** Read-only: reports the namespace as it is (`ready`, `terminating` or `missing`); never creates it. */
  async observe(name: string, stamp = true): Promise<NamespaceInfo | undefined> {
    this.gate.roleOf(name);
    this.gate.contacted.delete(name);
    return this.gate.enter(name, stamp);
  }

  /**
   * Ensures the namespace exists: an existing one is reported and, for the app namespace, adopted
   * unless tend created it for this project; a terminating one is waited for (bounded) and then
   * re-created; a missing one is reported `missing` before it is created, then `ready`/`created`.
   */
  async ensure(name: string): Promise<{ info: NamespaceInfo; created: boolean; adopted: boolean }> {
    const role = this.gate.roleOf(name);
    const project = this.gate.ctx.environment.project;
    let info = await this.observe(name);
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
    const metadata: k8s.V1ObjectMeta = {
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
          () => this.gate.connection.core.createNamespace({ body: { metadata } }),
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
      this.gate.refuseSystemAsApp(again);
      this.gate.report(again, 'observed');
      return { info: again, created: false, adopted: false };
    }
    lastStamped.set(`${this.gate.identity.clusterId}\0${name}`, Date.now());
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
   * Deletes the app namespace if tend owns it for this project (managed-by label and matching
   * project annotation, not adopted), waits until it is gone and reports `missing`/`deleted`.
   */
  async deleteOwned(name: string): Promise<{ deleted: boolean; message: string }> {
    const role = this.gate.roleOf(name);
    const project = this.gate.ctx.environment.project;
    // Cleanup is not activity: no last-activity stamp (which would also change the resourceVersion).
    const info = await this.observe(name, false);
    if (!info) return { deleted: false, message: `namespace ${name} does not exist` };
    if (role !== 'app')
      return { deleted: false, message: `namespace ${name} is a system namespace; left alone` };
    if (!ownedBy(info, project)) {
      const why =
        info.annotations[annotations.adopted] === 'true'
          ? 'it existed before tend used it (adopted)'
          : info.labels[labels.managedBy] !== 'tend'
            ? `it is not managed by tend (no ${labels.managedBy}=tend label)`
            : `it belongs to project "${info.annotations[annotations.project] ?? '(none)'}"`;
      return { deleted: false, message: `namespace ${name} left alone: ${why}` };
    }
    if (info.state === 'ready') {
      try {
        await this.gate.retry(
          `delete namespace ${name}`,
          () =>
            this.gate.connection.core.deleteNamespace({
              name,
              body: { preconditions: { uid: info.uid!, resourceVersion: info.resourceVersion! } },
            }),
          true,
        );
      } catch (error) {
        if (describeFailure(error).status !== 404)
          throw apiError(error, this.gate.describe(`delete namespace ${name}`));
      }
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
      await delay(200);
    }
    this.gate.report({ ...info, state: 'missing' }, 'deleted');
    return { deleted: true, message: `deleted namespace ${name}` };
  }
}
