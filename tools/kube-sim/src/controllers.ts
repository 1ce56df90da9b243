/**
 * Simulated controllers: namespace lifecycle, Deployment → ReplicaSet → Pods, StatefulSet,
 * Job. Store events enqueue reconciles, drained on the next tick, so writes never re-enter.
 */
import { createHash } from 'node:crypto';
import type { Cluster } from './cluster.js';
import { now, randomSuffix } from './cluster.js';
import type { ResourceType } from './resources.js';
import {
  CONFIGMAP,
  DAEMONSET,
  DEPLOYMENT,
  JOB,
  NS,
  POD,
  REPLICASET,
  SERVICE_ACCOUNT,
  STATEFULSET,
} from './resources.js';
import type { PodRuntime } from './runtime.js';
import type { StoreEvent } from './store.js';
import type { KObject, OwnerReference } from './types.js';

export interface ControllerOptions {
  namespaceDeleteDelayMs: number;
  deploymentReadyDelayMs: number;
  /** How long a pod a controller removes (scale-down, rollout) stays terminating before it is gone. */
  podTerminationDelayMs: number;
  caPem: string;
}

const SAFE = 'bcdfghjklmnpqrstvwxz2456789';
function templateHash(template: unknown): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(template ?? {}))
    .digest();
  let s = '';
  for (let i = 0; i < 10; i++) s += SAFE[digest[i]! % SAFE.length];
  return s;
}

function ownerRef(owner: KObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion!,
    kind: owner.kind!,
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

function controllerOf(obj: KObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller);
}

function isReady(pod: KObject): boolean {
  return (pod.status?.conditions ?? []).some(
    (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
  );
}

function readySince(pod: KObject): number {
  const c = (pod.status?.conditions ?? []).find((x: { type: string }) => x.type === 'Ready');
  return c ? Date.parse(c.lastTransitionTime) : Date.now();
}

function isTerminal(pod: KObject): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** A RollingUpdate's maxSurge (rounded up) and maxUnavailable (rounded down), as the API defaults them. */
function rollingBounds(
  rollingUpdate: Record<string, unknown> | undefined,
  replicas: number,
): { maxSurge: number; maxUnavailable: number } {
  const resolve = (value: unknown, fallback: string, round: (n: number) => number): number => {
    const v = value ?? fallback;
    if (typeof v === 'number') return v;
    const percent = /^(\d+)%$/.exec(String(v));
    return percent ? round((Number(percent[1]) * replicas) / 100) : Number(v) || 0;
  };
  const maxSurge = resolve(rollingUpdate?.maxSurge, '25%', Math.ceil);
  const maxUnavailable = Math.min(replicas, resolve(rollingUpdate?.maxUnavailable, '25%', Math.floor));
  // Both zero is refused by a real API server; the controller would then allow one unavailable.
  return { maxSurge, maxUnavailable: maxSurge === 0 && maxUnavailable === 0 ? 1 : maxUnavailable };
}

/**
 * The sizes of the old ReplicaSets (oldest first) after one step of a rolling update, as the
 * deployment controller computes them: first drop their unhealthy (unavailable) replicas, then
 * available ones while at least `minAvailable` stay available overall.
 */
function scaleDownOld(
  old: KObject[],
  newUnavailable: number,
  minAvailable: number,
  newAvailable: number,
): number[] {
  const sizes = old.map((rs) => (rs.spec.replicas ?? 0) as number);
  const availableOf = (i: number): number => (old[i]!.status?.availableReplicas ?? 0) as number;
  const allSize = sizes.reduce((a, n) => a + n, 0) + newUnavailable + newAvailable;
  const maxScaledDown = allSize - minAvailable - Math.max(0, newUnavailable);
  if (maxScaledDown <= 0) return sizes;
  let cleaned = 0;
  for (let i = 0; i < sizes.length && cleaned < maxScaledDown; i++) {
    const unhealthy = sizes[i]! - availableOf(i);
    if (sizes[i] === 0 || unhealthy <= 0) continue;
    const n = Math.min(maxScaledDown - cleaned, unhealthy);
    sizes[i]! -= n;
    cleaned += n;
  }
  const available = newAvailable + old.reduce((a, _rs, i) => a + Math.min(availableOf(i), sizes[i]!), 0);
  let scaleDown = available - minAvailable;
  for (let i = 0; i < sizes.length && scaleDown > 0; i++) {
    const n = Math.min(sizes[i]!, scaleDown);
    sizes[i]! -= n;
    scaleDown -= n;
  }
  return sizes;
}

export class Controllers {
  private readonly queue = new Map<string, () => void>();
  private scheduled = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly runtime: PodRuntime,
    private readonly opts: ControllerOptions,
  ) {
    cluster.store.onEvent((ev) => this.onEvent(ev));
    cluster.onNamespaceTerminating = (name) => this.namespaceTerminating(name);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.queue.clear();
  }

  private later(ms: number, fn: () => void): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) fn();
    }, ms);
    this.timers.add(t);
  }

  private enqueue(key: string, fn: () => void): void {
    if (this.stopped) return;
    this.queue.set(key, fn);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.drain());
    }
  }

  private drain(): void {
    this.scheduled = false;
    // Reconciles may enqueue more work; that runs on a later tick.
    const work = [...this.queue.values()];
    this.queue.clear();
    for (const fn of work) {
      try {
        fn();
      } catch (e) {
        // A reconcile racing a deletion is retried by the next event; nothing else is expected.
        if (process.env.KUBE_SIM_DEBUG) console.error('kube-sim reconcile failed', e);
      }
    }
  }

  private onEvent(ev: StoreEvent): void {
    const obj = ev.stored.obj;
    const ns = obj.metadata.namespace ?? '';
    const name = obj.metadata.name!;
    switch (ev.rt) {
      case NS:
        if (ev.type === 'ADDED') this.enqueue(`ns/${name}`, () => this.namespaceAdded(name));
        break;
      case POD:
        if (ev.type === 'ADDED') this.runtime.podAdded(obj);
        if (ev.type === 'DELETED') this.runtime.podDeleted(obj);
        this.enqueueOwner(ns, obj);
        // A pod gone for good (after terminating) can let a Recreate rollout go on.
        if (ev.type === 'DELETED' && controllerOf(obj)?.kind === 'ReplicaSet') {
          const rs = this.cluster.store.get(REPLICASET, ns, controllerOf(obj)!.name);
          if (rs) this.enqueueOwner(ns, rs);
        }
        break;
      case DEPLOYMENT:
        this.enqueue(`deploy/${ns}/${name}`, () => this.reconcileDeployment(ns, name));
        break;
      case REPLICASET:
        if (ev.type !== 'DELETED') this.enqueue(`rs/${ns}/${name}`, () => this.reconcileReplicaSet(ns, name));
        this.enqueueOwner(ns, obj);
        break;
      case STATEFULSET:
        if (ev.type !== 'DELETED')
          this.enqueue(`sts/${ns}/${name}`, () => this.reconcileStatefulSet(ns, name));
        break;
      case JOB:
        if (ev.type !== 'DELETED') this.enqueue(`job/${ns}/${name}`, () => this.reconcileJob(ns, name));
        break;
      case DAEMONSET:
        if (ev.type !== 'DELETED') this.enqueue(`ds/${ns}/${name}`, () => this.reconcileDaemonSet(ns, name));
        break;
    }
  }

  private enqueueOwner(ns: string, obj: KObject): void {
    const ref = controllerOf(obj);
    if (!ref) return;
    const name = ref.name;
    if (ref.kind === 'ReplicaSet') this.enqueue(`rs/${ns}/${name}`, () => this.reconcileReplicaSet(ns, name));
    else if (ref.kind === 'Deployment')
      this.enqueue(`deploy/${ns}/${name}`, () => this.reconcileDeployment(ns, name));
    else if (ref.kind === 'StatefulSet')
      this.enqueue(`sts/${ns}/${name}`, () => this.reconcileStatefulSet(ns, name));
    else if (ref.kind === 'Job') this.enqueue(`job/${ns}/${name}`, () => this.reconcileJob(ns, name));
    else if (ref.kind === 'DaemonSet')
      this.enqueue(`ds/${ns}/${name}`, () => this.reconcileDaemonSet(ns, name));
  }

  // --- namespaces -------------------------------------------------------------------------

  private namespaceAdded(name: string): void {
    const ns = this.cluster.store.get(NS, '', name);
    if (!ns || ns.status?.phase !== 'Active') return;
    if (!this.cluster.store.get(SERVICE_ACCOUNT, name, 'default')) {
      this.cluster.store.insert(SERVICE_ACCOUNT, {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'default', namespace: name },
      });
    }
    if (!this.cluster.store.get(CONFIGMAP, name, 'kube-root-ca.crt')) {
      this.cluster.store.insert(CONFIGMAP, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'kube-root-ca.crt',
          namespace: name,
          annotations: {
            'kubernetes.io/description':
              'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.',
          },
        },
        data: { 'ca.crt': this.opts.caPem },
      });
    }
  }

  private namespaceTerminating(name: string): void {
    this.later(this.opts.namespaceDeleteDelayMs, () => this.cluster.finishNamespace(name));
  }

  // --- helpers ----------------------------------------------------------------------------

  private owned(rt: ResourceType, ns: string, uid: string): KObject[] {
    return this.cluster.store
      .list(rt, { namespace: ns })
      .items.map((s) => s.obj)
      .filter((o) => controllerOf(o)?.uid === uid);
  }

  private createPod(
    owner: KObject,
    name: string,
    template: KObject,
    extraLabels: Record<string, string> = {},
  ): void {
    const meta = template.metadata ?? {};
    try {
      this.cluster.create(POD, owner.metadata.namespace!, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name,
          labels: { ...(meta.labels ?? {}), ...extraLabels },
          ...(meta.annotations ? { annotations: { ...meta.annotations } } : {}),
          ownerReferences: [ownerRef(owner)],
        },
        spec: structuredClone(template.spec),
      });
    } catch {
      // Name clash or namespace terminating: the next reconcile sorts it out.
    }
  }

  private deleteQuietly(rt: ResourceType, ns: string, name: string): void {
    try {
      this.cluster.delete(rt, ns, name);
    } catch {
      // Already gone.
    }
  }

  /**
   * A pod a controller removes terminates gracefully: it gets a `deletionTimestamp` and keeps
   * running (and Ready) for `podTerminationDelayMs`, then it is gone — the old replicas of a
   * rollout are seen terminating, as on a real cluster.
   */
  private terminatePod(ns: string, name: string): void {
    const delayMs = this.opts.podTerminationDelayMs;
    if (delayMs <= 0) return this.deleteQuietly(POD, ns, name);
    if (this.cluster.beginGracefulDeletion(POD, ns, name, Math.ceil(delayMs / 1000)))
      this.later(delayMs, () => this.cluster.endGracefulDeletion(POD, ns, name));
  }

  private availability(pods: KObject[], minReadyMs: number, recheck: () => void): number {
    let available = 0;
    let next = Infinity;
    const t = Date.now();
    for (const p of pods) {
      if (!isReady(p)) continue;
      const at = readySince(p) + minReadyMs;
      if (at <= t) available++;
      else next = Math.min(next, at - t);
    }
    if (next !== Infinity) this.later(next + 5, recheck);
    return available;
  }

  // --- ReplicaSet -------------------------------------------------------------------------

  private reconcileReplicaSet(ns: string, name: string): void {
    const rs = this.cluster.store.get(REPLICASET, ns, name);
    if (!rs || rs.metadata.deletionTimestamp) return;
    const pods = this.owned(POD, ns, rs.metadata.uid!).filter(
      (p) => !p.metadata.deletionTimestamp && !isTerminal(p),
    );
    const want: number = rs.spec.replicas ?? 1;
    for (let i = pods.length; i < want; i++)
      this.createPod(rs, `${name}-${randomSuffix()}`, rs.spec.template);
    if (pods.length > want) {
      const extra = [...pods]
        .sort((a, b) => Number(isReady(a)) - Number(isReady(b)))
        .slice(0, pods.length - want);
      for (const p of extra) this.terminatePod(ns, p.metadata.name!);
    }
    const live = this.owned(POD, ns, rs.metadata.uid!).filter(
      (p) => !p.metadata.deletionTimestamp && !isTerminal(p),
    );
    const minReadyMs = Math.max(this.opts.deploymentReadyDelayMs, (rs.spec.minReadySeconds ?? 0) * 1000);
    const available = this.availability(live, minReadyMs, () => this.reconcileReplicaSet(ns, name));
    const gen = rs.metadata.generation;
    this.cluster.mutate(
      REPLICASET,
      ns,
      name,
      (o) => {
        o.status = {
          replicas: live.length,
          fullyLabeledReplicas: live.length,
          readyReplicas: live.filter(isReady).length,
          availableReplicas: available,
          observedGeneration: gen,
        };
      },
      'status',
    );
  }

  // --- Deployment -------------------------------------------------------------------------

  private reconcileDeployment(ns: string, name: string): void {
    const d = this.cluster.store.get(DEPLOYMENT, ns, name);
    if (!d || d.metadata.deletionTimestamp) return;
    const hash = templateHash(d.spec.template);
    const all = this.owned(REPLICASET, ns, d.metadata.uid!);
    const want: number = d.spec.replicas ?? 1;
    let current = all.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash);
    const old = all
      .filter((rs) => rs !== current)
      .sort((a, b) => a.metadata.creationTimestamp!.localeCompare(b.metadata.creationTimestamp!));
    const maxRevision = Math.max(
      0,
      ...all.map((rs) => Number(rs.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0)),
    );
    let revision = current
      ? Number(current.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 1)
      : maxRevision + 1;
    // The rollout, as the deployment controller does it: RollingUpdate surges the new ReplicaSet
    // by maxSurge and scales old ones down while maxUnavailable allows; Recreate scales the old
    // ones to zero and starts the new one once their pods are gone.
    const strategy = (d.spec.strategy ?? {}) as { type?: string; rollingUpdate?: Record<string, unknown> };
    const recreate = strategy.type === 'Recreate';
    const { maxSurge, maxUnavailable } = rollingBounds(strategy.rollingUpdate, want);
    const sizeOf = (rs: KObject): number => rs.spec.replicas ?? 0;
    const oldSize = old.reduce((a, rs) => a + sizeOf(rs), 0);
    // Recreate waits for every old pod to be gone, terminating ones included.
    const oldPods = old.reduce(
      (a, rs) => a + this.owned(POD, ns, rs.metadata.uid!).filter((p) => !isTerminal(p)).length,
      0,
    );
    const currentSize = current ? sizeOf(current) : 0;
    const newSize = recreate
      ? oldSize === 0 && oldPods === 0
        ? want
        : 0
      : currentSize >= want
        ? want
        : Math.min(want, currentSize + Math.max(0, want + maxSurge - (oldSize + currentSize)));
    const sizeAnnotations = {
      'deployment.kubernetes.io/desired-replicas': String(want),
      'deployment.kubernetes.io/max-replicas': String(want + maxSurge),
    };
    if (!current) {
      const template = structuredClone(d.spec.template);
      template.metadata = { ...(template.metadata ?? {}) };
      template.metadata.labels = { ...(template.metadata.labels ?? {}), 'pod-template-hash': hash };
      const selector = structuredClone(d.spec.selector);
      selector.matchLabels = { ...(selector.matchLabels ?? {}), 'pod-template-hash': hash };
      try {
        current = this.cluster.create(REPLICASET, ns, {
          metadata: {
            name: `${name}-${hash}`,
            labels: template.metadata.labels,
            annotations: { ...sizeAnnotations, 'deployment.kubernetes.io/revision': String(revision) },
            ownerReferences: [ownerRef(d)],
          },
          spec: { replicas: newSize, minReadySeconds: d.spec.minReadySeconds ?? 0, selector, template },
        }).obj;
      } catch {
        return;
      }
    } else if (current.spec.replicas !== newSize) {
      current = this.cluster.mutate(REPLICASET, ns, current.metadata.name!, (o) => {
        o.spec.replicas = newSize;
        o.metadata.annotations = { ...(o.metadata.annotations ?? {}), ...sizeAnnotations };
      })?.obj;
      if (!current) return;
    }
    revision = Number(current.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? revision);
    const cs = current.status ?? {};
    const oldSizes = recreate
      ? old.map(() => 0)
      : scaleDownOld(
          old,
          newSize - (cs.availableReplicas ?? 0),
          want - maxUnavailable,
          cs.availableReplicas ?? 0,
        );
    old.forEach((rs, i) => {
      if (sizeOf(rs) !== oldSizes[i])
        this.cluster.mutate(REPLICASET, ns, rs.metadata.name!, (o) => void (o.spec.replicas = oldSizes[i]));
    });
    const sets = [current, ...old];
    const sum = (f: string): number => sets.reduce((a, rs) => a + ((rs.status ?? {})[f] ?? 0), 0);
    const replicas = sum('replicas');
    const ready = sum('readyReplicas');
    const available = sum('availableReplicas');
    const updated: number = cs.replicas ?? 0;
    const oldLeft = old.reduce((a, rs) => a + (rs.status?.replicas ?? 0), 0);
    const ts = now();
    const prev = (d.status?.conditions ?? []) as {
      type: string;
      status: string;
      reason: string;
      lastTransitionTime: string;
      lastUpdateTime: string;
    }[];
    const progressingPrev = prev.find((c) => c.type === 'Progressing');
    const complete =
      updated === want && available >= want && oldLeft === 0 && (cs.availableReplicas ?? 0) >= want;
    let progressing: { status: string; reason: string; message: string };
    const rsName = current.metadata.name!;
    const generationChanged = (d.status?.observedGeneration ?? 0) !== d.metadata.generation;
    const since =
      generationChanged || !progressingPrev ? Date.now() : Date.parse(progressingPrev.lastUpdateTime);
    const deadlineMs = (d.spec.progressDeadlineSeconds ?? 600) * 1000;
    if (complete) {
      progressing = {
        status: 'True',
        reason: 'NewReplicaSetAvailable',
        message: `ReplicaSet "${rsName}" has successfully progressed.`,
      };
    } else if (progressingPrev?.reason === 'ProgressDeadlineExceeded' && !generationChanged) {
      progressing = {
        status: 'False',
        reason: 'ProgressDeadlineExceeded',
        message: `ReplicaSet "${rsName}" has timed out progressing.`,
      };
    } else if (Date.now() - since >= deadlineMs) {
      progressing = {
        status: 'False',
        reason: 'ProgressDeadlineExceeded',
        message: `ReplicaSet "${rsName}" has timed out progressing.`,
      };
    } else {
      progressing = {
        status: 'True',
        reason: 'ReplicaSetUpdated',
        message: `ReplicaSet "${rsName}" is progressing.`,
      };
      this.later(deadlineMs - (Date.now() - since) + 5, () => this.reconcileDeployment(ns, name));
    }
    const availableOk = available >= want;
    const condition = (
      type: string,
      c: { status: string; reason: string; message: string },
    ): Record<string, unknown> => {
      const p = prev.find((x) => x.type === type);
      const same = p && p.status === c.status && p.reason === c.reason;
      return {
        type,
        ...c,
        lastUpdateTime: same && !(type === 'Progressing' && generationChanged) ? p.lastUpdateTime : ts,
        lastTransitionTime: p && p.status === c.status ? p.lastTransitionTime : ts,
      };
    };
    const gen = d.metadata.generation;
    this.cluster.mutate(DEPLOYMENT, ns, name, (o) => {
      o.metadata.annotations = {
        ...(o.metadata.annotations ?? {}),
        'deployment.kubernetes.io/revision': String(revision),
      };
      o.status = {
        observedGeneration: gen,
        replicas,
        updatedReplicas: updated,
        readyReplicas: ready,
        availableReplicas: available,
        ...(want - available > 0 ? { unavailableReplicas: want - available } : {}),
        conditions: [
          condition(
            'Available',
            availableOk
              ? {
                  status: 'True',
                  reason: 'MinimumReplicasAvailable',
                  message: 'Deployment has minimum availability.',
                }
              : {
                  status: 'False',
                  reason: 'MinimumReplicasUnavailable',
                  message: 'Deployment does not have minimum availability.',
                },
          ),
          condition('Progressing', progressing),
        ],
      };
      for (const k of ['replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas'])
        if (!o.status[k]) delete o.status[k];
    });
  }

  // --- StatefulSet ------------------------------------------------------------------------

  private reconcileStatefulSet(ns: string, name: string): void {
    const sts = this.cluster.store.get(STATEFULSET, ns, name);
    if (!sts || sts.metadata.deletionTimestamp) return;
    const revision = `${name}-${templateHash(sts.spec.template)}`;
    const want: number = sts.spec.replicas ?? 1;
    const ordered = (sts.spec.podManagementPolicy ?? 'OrderedReady') === 'OrderedReady';
    const pods = new Map(this.owned(POD, ns, sts.metadata.uid!).map((p) => [p.metadata.name!, p]));
    for (const [podName, p] of pods) {
      const ordinal = Number(podName.slice(name.length + 1));
      if (p.metadata.deletionTimestamp) continue;
      if (ordinal >= want) this.terminatePod(ns, podName);
      else if (isTerminal(p)) this.deleteQuietly(POD, ns, podName);
    }
    // The status counts the pods as this sync found them, before it replaces one (as the
    // controller does): a ready outdated pod still counts as ready, not as updated.
    const found = [...pods.values()].filter(
      (p) => !isTerminal(p) && Number(p.metadata.name!.slice(name.length + 1)) < want,
    );
    // RollingUpdate rolls one outdated pod at a time, highest ordinal first, once everything else
    // is ready, down to the partition; OnDelete only re-creates the pods someone deleted.
    const update = (sts.spec.updateStrategy ?? {}) as {
      type?: string;
      rollingUpdate?: { partition?: number };
    };
    const partition = update.rollingUpdate?.partition ?? 0;
    const outdated = [...pods.values()].filter(
      (p) =>
        p.metadata.labels?.['controller-revision-hash'] !== revision &&
        !p.metadata.deletionTimestamp &&
        Number(p.metadata.name!.slice(name.length + 1)) >= partition,
    );
    const allReady =
      [...pods.values()].every((p) => isReady(p) && !p.metadata.deletionTimestamp) && pods.size === want;
    if (outdated.length && allReady && update.type !== 'OnDelete') {
      const victim = outdated.sort((a, b) => b.metadata.name!.localeCompare(a.metadata.name!))[0]!;
      this.terminatePod(ns, victim.metadata.name!);
    }
    for (let i = 0; i < want; i++) {
      const podName = `${name}-${i}`;
      const p = pods.get(podName);
      if (!p) {
        if (!this.cluster.store.get(POD, ns, podName)) {
          this.createPod(sts, podName, sts.spec.template, {
            'controller-revision-hash': revision,
            'statefulset.kubernetes.io/pod-name': podName,
            'apps.kubernetes.io/pod-index': String(i),
          });
        }
        if (ordered) break;
      } else if (ordered && !isReady(p)) break;
    }
    const live = found;
    const readyCount = live.filter(isReady).length;
    const updated = live.filter((p) => p.metadata.labels?.['controller-revision-hash'] === revision).length;
    const available = this.availability(live, this.opts.deploymentReadyDelayMs, () =>
      this.reconcileStatefulSet(ns, name),
    );
    const done = updated === want && readyCount === want;
    const gen = sts.metadata.generation;
    this.cluster.mutate(
      STATEFULSET,
      ns,
      name,
      (o) => {
        o.status = {
          observedGeneration: gen,
          replicas: live.length,
          readyReplicas: readyCount,
          currentReplicas: done ? updated : live.length - updated,
          updatedReplicas: updated,
          availableReplicas: available,
          currentRevision: done ? revision : (o.status?.currentRevision ?? revision),
          updateRevision: revision,
          collisionCount: 0,
        };
      },
      'status',
    );
  }

  // --- DaemonSet --------------------------------------------------------------------------

  /**
   * One daemon pod on the one node (`kube-sim-node`). RollingUpdate with maxSurge 0 (the
   * default) deletes the outdated pod and then starts the new one; with maxSurge it starts the
   * new one first and deletes the old one once the new one is available. OnDelete replaces
   * only a deleted pod. The status counts the pods as this sync found them.
   */
  private reconcileDaemonSet(ns: string, name: string): void {
    const ds = this.cluster.store.get(DAEMONSET, ns, name);
    if (!ds || ds.metadata.deletionTimestamp) return;
    const revision = templateHash(ds.spec.template);
    const generation = ds.metadata.generation;
    const all = this.owned(POD, ns, ds.metadata.uid!).filter(
      (p) => !isTerminal(p) || !p.metadata.deletionTimestamp,
    );
    for (const p of all.filter(isTerminal)) this.deleteQuietly(POD, ns, p.metadata.name!);
    // Terminating pods still occupy the node (and count while they are ready).
    const found = all.filter((p) => !isTerminal(p));
    const running = found.filter((p) => !p.metadata.deletionTimestamp);
    const isUpdated = (p: KObject) => p.metadata.labels?.['controller-revision-hash'] === revision;
    const fresh = running.filter(isUpdated);
    const outdated = running.filter((p) => !isUpdated(p));
    const minReadyMs = Math.max(this.opts.deploymentReadyDelayMs, (ds.spec.minReadySeconds ?? 0) * 1000);
    const recheck = () => this.reconcileDaemonSet(ns, name);
    const available = this.availability(found, minReadyMs, recheck) > 0;
    const freshAvailable = this.availability(fresh, minReadyMs, recheck) > 0;
    const start = () =>
      this.createPod(ds, `${name}-${randomSuffix()}`, ds.spec.template, {
        'controller-revision-hash': revision,
        'pod-template-generation': String(generation),
      });
    const strategy = (ds.spec.updateStrategy ?? {}) as {
      type?: string;
      rollingUpdate?: Record<string, unknown>;
    };
    if (found.length === 0) start();
    else if (outdated.length > 0 && strategy.type !== 'OnDelete') {
      const { maxSurge } = rollingBounds({ maxUnavailable: 1, maxSurge: 0, ...strategy.rollingUpdate }, 1);
      if (maxSurge > 0 && fresh.length === 0) start();
      else if (maxSurge === 0 || freshAvailable)
        for (const p of outdated) this.terminatePod(ns, p.metadata.name!);
    }
    this.cluster.mutate(
      DAEMONSET,
      ns,
      name,
      (o) => {
        o.status = {
          currentNumberScheduled: found.length > 0 ? 1 : 0,
          numberMisscheduled: 0,
          desiredNumberScheduled: 1,
          numberReady: found.some(isReady) ? 1 : 0,
          observedGeneration: generation,
          updatedNumberScheduled: fresh.length > 0 ? 1 : 0,
          numberAvailable: available ? 1 : 0,
          ...(available ? {} : { numberUnavailable: 1 }),
        };
      },
      'status',
    );
  }

  // --- Job --------------------------------------------------------------------------------

  private reconcileJob(ns: string, name: string): void {
    const job = this.cluster.store.get(JOB, ns, name);
    if (!job || job.metadata.deletionTimestamp) return;
    const conds = (job.status?.conditions ?? []) as { type: string; status: string }[];
    if (conds.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')) return;
    if (job.spec.suspend) return;
    const pods = this.owned(POD, ns, job.metadata.uid!);
    const succeeded = pods.filter((p) => p.status?.phase === 'Succeeded').length;
    const failed = pods.filter((p) => p.status?.phase === 'Failed').length;
    let active = pods.filter((p) => !isTerminal(p));
    const completions: number = job.spec.completions ?? 1;
    const backoffLimit: number = job.spec.backoffLimit ?? 6;
    const ts = now();
    const status: Record<string, unknown> = {
      startTime: job.status?.startTime ?? ts,
      ...(job.status?.uncountedTerminatedPods ? {} : {}),
    };
    let finished: Record<string, unknown>[] | undefined;
    if (succeeded >= completions) {
      finished = [
        {
          type: 'SuccessCriteriaMet',
          status: 'True',
          lastProbeTime: ts,
          lastTransitionTime: ts,
          reason: 'CompletionsReached',
          message: 'Reached expected number of succeeded pods',
        },
        {
          type: 'Complete',
          status: 'True',
          lastProbeTime: ts,
          lastTransitionTime: ts,
          reason: 'CompletionsReached',
          message: 'Reached expected number of succeeded pods',
        },
      ];
      status.completionTime = ts;
    } else if (failed > backoffLimit) {
      finished = [
        {
          type: 'FailureTarget',
          status: 'True',
          lastProbeTime: ts,
          lastTransitionTime: ts,
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
        },
        {
          type: 'Failed',
          status: 'True',
          lastProbeTime: ts,
          lastTransitionTime: ts,
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
        },
      ];
      for (const p of active) this.deleteQuietly(POD, ns, p.metadata.name!);
      active = [];
    } else {
      const parallelism: number = job.spec.parallelism ?? 1;
      const need = Math.min(parallelism, completions - succeeded) - active.length;
      for (let i = 0; i < need; i++) this.createPod(job, `${name}-${randomSuffix()}`, job.spec.template);
      active = this.owned(POD, ns, job.metadata.uid!).filter((p) => !isTerminal(p));
    }
    this.cluster.mutate(
      JOB,
      ns,
      name,
      (o) => {
        o.status = {
          ...status,
          ...(active.length ? { active: active.length } : {}),
          ...(succeeded ? { succeeded } : {}),
          ...(failed ? { failed } : {}),
          ready: active.filter(isReady).length,
          terminating: 0,
          uncountedTerminatedPods: {},
          ...(finished ? { conditions: finished } : {}),
        };
      },
      'status',
    );
  }
}
