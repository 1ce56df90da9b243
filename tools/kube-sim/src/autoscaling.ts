/**
 * The minimal controller behaviour of `autoscaling/v2` HorizontalPodAutoscalers and `batch/v1`
 * CronJobs, as tend's pause and resume meet them:
 *
 * - An HPA keeps its target's replicas within `[minReplicas (default 1), maxReplicas]` (there are
 *   no metrics: the desired count is the current one, clamped). Like a real HPA, it does not touch
 *   a target scaled to 0: autoscaling is disabled (`ScalingActive=False`, reason
 *   `ScalingDisabled`) until the replicas are above 0 again. Its status reports current and
 *   desired replicas.
 * - A CronJob is stored with `spec.suspend` defaulted to false and an empty `status.active`; no
 *   Jobs are started on its schedule (nothing in tend's tests needs them).
 *
 * Store events enqueue reconciles, drained on the next tick, so writes never re-enter.
 */
import type { Cluster } from './cluster.js';
import { now } from './cluster.js';
import { CRONJOB, DEPLOYMENT, HPA, STATEFULSET } from './resources.js';
import type { StoreEvent } from './store.js';
import type { KObject } from './types.js';

interface ScaleTargetRef {
  apiVersion?: string;
  kind?: string;
  name?: string;
}

const targetTypes = { Deployment: DEPLOYMENT, StatefulSet: STATEFULSET } as const;

export class AutoscalingController {
  private readonly queue = new Map<string, () => void>();
  private scheduled = false;
  private stopped = false;

  constructor(private readonly cluster: Cluster) {
    cluster.store.onEvent((ev) => this.onEvent(ev));
  }

  stop(): void {
    this.stopped = true;
    this.queue.clear();
  }

  private enqueue(key: string, fn: () => void): void {
    if (this.stopped) return;
    this.queue.set(key, fn);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const work = [...this.queue.values()];
        this.queue.clear();
        for (const f of work) {
          try {
            f();
          } catch (e) {
            if (process.env.KUBE_SIM_DEBUG) console.error('kube-sim autoscaling reconcile failed', e);
          }
        }
      });
    }
  }

  private onEvent(ev: StoreEvent): void {
    if (ev.type === 'DELETED') return;
    const obj = ev.stored.obj;
    const ns = obj.metadata.namespace ?? '';
    const name = obj.metadata.name!;
    if (ev.rt === HPA) this.enqueue(`hpa/${ns}/${name}`, () => this.reconcileHpa(ns, name));
    else if (ev.rt === CRONJOB) this.enqueue(`cj/${ns}/${name}`, () => this.reconcileCronJob(ns, name));
    else if (ev.rt === DEPLOYMENT || ev.rt === STATEFULSET) {
      for (const hpa of this.cluster.store.list(HPA, { namespace: ns }).items) {
        const ref = hpa.obj.spec?.scaleTargetRef as ScaleTargetRef | undefined;
        if (ref?.name === name && ref.kind === obj.kind) {
          const hpaName = hpa.obj.metadata.name!;
          this.enqueue(`hpa/${ns}/${hpaName}`, () => this.reconcileHpa(ns, hpaName));
        }
      }
    }
  }

  private reconcileHpa(ns: string, name: string): void {
    const hpa = this.cluster.store.get(HPA, ns, name);
    if (!hpa || hpa.metadata.deletionTimestamp) return;
    const ref = (hpa.spec?.scaleTargetRef ?? {}) as ScaleTargetRef;
    const rt = targetTypes[ref.kind as keyof typeof targetTypes];
    const target: KObject | undefined = rt && ref.name ? this.cluster.store.get(rt, ns, ref.name) : undefined;
    const min = Number(hpa.spec?.minReplicas ?? 1);
    const max = Number(hpa.spec?.maxReplicas ?? min);
    let current = 0;
    let desired = 0;
    let active: { status: string; reason: string; message: string };
    if (!rt || !target) {
      active = {
        status: 'False',
        reason: 'FailedGetScale',
        message: `the HPA controller was unable to get the target's current scale`,
      };
    } else {
      current = Number(target.spec?.replicas ?? 1);
      if (current === 0) {
        active = {
          status: 'False',
          reason: 'ScalingDisabled',
          message: 'scaling is disabled since the replica count of the target is zero',
        };
      } else {
        desired = Math.min(max, Math.max(min, current));
        active = {
          status: 'True',
          reason: 'ValidMetricFound',
          message: 'the HPA keeps the replicas within its bounds',
        };
        if (desired !== current) {
          this.cluster.mutate(rt, ns, ref.name!, (o) => {
            o.spec = { ...o.spec, replicas: desired };
          });
        }
      }
    }
    this.cluster.mutate(
      HPA,
      ns,
      name,
      (o) => {
        const previous = (
          (o.status?.conditions ?? []) as { type: string; status: string; lastTransitionTime?: string }[]
        ).find((c) => c.type === 'ScalingActive');
        o.status = {
          ...o.status,
          currentReplicas: current,
          desiredReplicas: desired,
          conditions: [
            {
              type: 'ScalingActive',
              ...active,
              lastTransitionTime: previous?.status === active.status ? previous.lastTransitionTime : now(),
            },
          ],
        };
      },
      'status',
    );
  }

  private reconcileCronJob(ns: string, name: string): void {
    this.cluster.mutate(CRONJOB, ns, name, (o) => {
      if (o.spec && o.spec.suspend === undefined) o.spec = { ...o.spec, suspend: false };
    });
    this.cluster.mutate(
      CRONJOB,
      ns,
      name,
      (o) => {
        if (!o.status?.active) o.status = { ...o.status, active: [] };
      },
      'status',
    );
  }
}
