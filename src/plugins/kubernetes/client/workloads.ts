/**
 * Pause and exact resume of the workloads tend deployed into a namespace (docs/cleanup.md#pause-and-resume):
 * every Deployment and StatefulSet labelled `app.kubernetes.io/managed-by=tend` is scaled to 0
 * with its previous replicas recorded in the annotation `tend.dev/paused-replicas`, and every
 * such CronJob is suspended with its previous `suspend` recorded in `tend.dev/paused-suspend`.
 * Resume writes back exactly what was recorded and removes the annotations. Objects without
 * tend's label are never touched.
 *
 * HorizontalPodAutoscalers are left as they are: the HPA controller does not scale a target
 * whose replicas are 0 (autoscaling is disabled, `ScalingActive=False`, reason
 * `ScalingDisabled`), so it does not undo the pause; the recorded replicas are what the HPA had
 * chosen (within its bounds), and once resume writes them back the HPA takes over again.
 *
 * One merge patch per object: the annotation and the change land together, so a pause
 * interrupted halfway leaves every object either untouched or paused with its record, and
 * pausing again never overwrites a record (an object already annotated is skipped).
 */
import type { TendError } from '../../../errors.js';
import { describeFailure } from './errors.js';
import { mergePatch, type RequestGate } from './gate.js';
import { labels } from './namespace-info.js';
import { refusalOf, type DeletionChecks } from './namespaces.js';
import { namespacedPath, objectRef, type KubeObject } from './objects.js';
import type { List } from './wire.js';

export const pauseAnnotations = {
  replicas: 'tend.dev/paused-replicas',
  suspend: 'tend.dev/paused-suspend',
} as const;

/** One object paused or resumed: its kind, name and the value before and after. */
export interface WorkloadChange {
  kind: 'Deployment' | 'StatefulSet' | 'CronJob';
  name: string;
  /** Replicas (Deployment, StatefulSet) or suspend (CronJob) before the change. */
  from: number | boolean;
  to: number | boolean;
  /** The HPA scaling this workload, if any (left as it is). */
  autoscaler?: string;
}

export interface WorkloadsResult {
  changed: WorkloadChange[];
  /** Objects already in the wanted state (paused again, or resumed with nothing recorded). */
  unchanged: number;
}

const scaled = [
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
] as const;

export class WorkloadCalls {
  constructor(private readonly gate: RequestGate) {}

  /**
   * tend's objects of one kind in the namespace. For a developer's command a kind the credentials
   * may not list (403) or the cluster does not serve (404) has none to resume: a developer whose
   * role cannot list CronJobs can still deploy. For the cleanup executor (`strict`) it is an
   * error: a pause that could not see a kind must not be reported done.
   */
  private async list(
    namespace: string,
    apiVersion: string,
    kind: string,
    strict = false,
  ): Promise<KubeObject[]> {
    const what = `list ${kind}s in ${namespace}`;
    const path = await namespacedPath(this.gate, namespace, { apiVersion, kind }, what);
    try {
      const list = await this.gate.request(namespace, what, () =>
        this.gate.connection.request<List<KubeObject>>({
          method: 'GET',
          path,
          query: { labelSelector: `${labels.managedBy}=tend` },
        }),
      );
      return list.items;
    } catch (error) {
      const status = describeFailure((error as TendError).cause).status;
      if (!strict && (status === 403 || status === 404)) return [];
      throw error;
    }
  }

  /**
   * Every kind pause and resume change, listed before anything is changed: a kind that cannot be
   * listed fails the whole step (strict) with nothing changed, never half of it.
   */
  private async listAll(namespace: string, strict: boolean) {
    const kinds = [...scaled, { apiVersion: 'batch/v1', kind: 'CronJob' } as const];
    const lists = await Promise.all(kinds.map((k) => this.list(namespace, k.apiVersion, k.kind, strict)));
    return {
      scaled: scaled.map((k, i) => ({ ...k, items: lists[i]! })),
      cronJobs: lists[scaled.length]!,
    };
  }

  private async patch(namespace: string, object: KubeObject, what: string): Promise<KubeObject> {
    const call = `${what} ${object.kind} ${object.metadata?.name} in ${namespace}`;
    const path = await namespacedPath(this.gate, namespace, objectRef(object), call);
    return this.gate.request(namespace, call, () =>
      this.gate.connection.request<KubeObject>({
        method: 'PATCH',
        path,
        query: { fieldManager: 'tend' },
        body: object,
        contentType: mergePatch,
      }),
    );
  }

  /**
   * The HPA scaling a workload (`Deployment/web`), by a list of the namespace's HPAs asked when the
   * first workload changes (none is asked when nothing does: every deploy's resume finds nothing
   * paused). For the report only, so credentials that may not list them (or a cluster without
   * autoscaling/v2) change nothing.
   */
  private autoscalerOf(namespace: string): (workload: string) => Promise<string | undefined> {
    let byTarget: Promise<Map<string, string>> | undefined;
    return async (workload) => (await (byTarget ??= this.autoscalers(namespace))).get(workload);
  }

  private async autoscalers(namespace: string): Promise<Map<string, string>> {
    const what = `list HorizontalPodAutoscalers in ${namespace}`;
    const path = await namespacedPath(
      this.gate,
      namespace,
      { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' },
      what,
    );
    const hpas = await this.gate
      .request(namespace, what, () => this.gate.connection.request<List<KubeObject>>({ method: 'GET', path }))
      .catch(() => ({ items: [] as KubeObject[] }));
    const byTarget = new Map<string, string>();
    for (const h of hpas.items) {
      const ref = (h.spec as { scaleTargetRef?: { kind?: string; name?: string } } | undefined)
        ?.scaleTargetRef;
      if (ref?.kind && ref.name) byTarget.set(`${ref.kind}/${ref.name}`, h.metadata!.name!);
    }
    return byTarget;
  }

  /** True when a workload tend deployed into the namespace carries a pause record. */
  async isPaused(namespace: string): Promise<boolean> {
    for (const { apiVersion, kind } of [...scaled, { apiVersion: 'batch/v1', kind: 'CronJob' }]) {
      const items = await this.list(namespace, apiVersion, kind);
      const key = kind === 'CronJob' ? pauseAnnotations.suspend : pauseAnnotations.replicas;
      if (items.some((o) => o.metadata?.annotations?.[key] !== undefined)) return true;
    }
    return false;
  }

  /**
   * The cleanup executors' pause and resume: a fresh read of the namespace and the same ownership
   * proof as `namespaces.deleteOwned` (managed-by label, project and environment annotations, the
   * recorded uid, not adopted, not system, not a protected name, no use after the decision),
   * then pause or resume. Nothing is stamped: cleanup is not activity.
   */
  async verifiedChange(
    action: 'pause' | 'resume',
    name: string,
    checks: DeletionChecks,
  ): Promise<{ outcome: 'done' | 'refused' | 'gone'; message: string; result?: WorkloadsResult }> {
    const info = await this.gate.readNamespace(name);
    if (!info) return { outcome: 'gone', message: `namespace ${name} does not exist` };
    if (info.state !== 'ready') return { outcome: 'refused', message: `namespace ${name} is terminating` };
    const refusal =
      this.gate.roleOf(name) === 'app'
        ? refusalOf(
            info,
            this.gate.ctx.environment.project,
            action === 'resume' ? { ...checks, notActiveAfter: undefined } : checks,
          )
        : 'it is a system namespace';
    if (refusal) return { outcome: 'refused', message: `namespace ${name} left alone: ${refusal}` };
    await this.gate.enter(name, false);
    if (checks.dryRun) {
      const would = action === 'pause' ? await this.pause(name, { dryRun: true, strict: true }) : undefined;
      return {
        outcome: 'refused',
        message: `dry run: namespace ${name} passed every check${would ? `; would pause ${describeChanges(would)}` : ''}`,
      };
    }
    const result =
      action === 'pause'
        ? await this.pause(name, { strict: true })
        : await this.resume(name, { strict: true });
    return {
      outcome: 'done',
      message: `${action === 'pause' ? 'paused' : 'resumed'} namespace ${name}: ${describeChanges(result)}`,
      result,
    };
  }

  async pause(namespace: string, { dryRun = false, strict = false } = {}): Promise<WorkloadsResult> {
    const result: WorkloadsResult = { changed: [], unchanged: 0 };
    const lists = await this.listAll(namespace, strict);
    const autoscalerOf = this.autoscalerOf(namespace);
    for (const { apiVersion, kind, items } of lists.scaled) {
      for (const o of items) {
        const name = o.metadata!.name!;
        if (o.metadata?.annotations?.[pauseAnnotations.replicas] !== undefined) {
          result.unchanged++;
          continue;
        }
        const replicas = (o.spec as { replicas?: number } | undefined)?.replicas ?? 1;
        const autoscaler = await autoscalerOf(`${kind}/${name}`);
        if (!dryRun) {
          await this.patch(
            namespace,
            {
              apiVersion,
              kind,
              metadata: { name, namespace, annotations: { [pauseAnnotations.replicas]: String(replicas) } },
              spec: { replicas: 0 },
            },
            'pause',
          );
        }
        result.changed.push({ kind, name, from: replicas, to: 0, ...(autoscaler ? { autoscaler } : {}) });
      }
    }
    for (const o of lists.cronJobs) {
      const name = o.metadata!.name!;
      if (o.metadata?.annotations?.[pauseAnnotations.suspend] !== undefined) {
        result.unchanged++;
        continue;
      }
      const suspend = Boolean((o.spec as { suspend?: boolean } | undefined)?.suspend);
      if (!dryRun) {
        await this.patch(
          namespace,
          {
            apiVersion: 'batch/v1',
            kind: 'CronJob',
            metadata: { name, namespace, annotations: { [pauseAnnotations.suspend]: String(suspend) } },
            spec: { suspend: true },
          },
          'suspend',
        );
      }
      result.changed.push({ kind: 'CronJob', name, from: suspend, to: true });
    }
    return result;
  }

  async resume(namespace: string, { strict = false } = {}): Promise<WorkloadsResult> {
    const result: WorkloadsResult = { changed: [], unchanged: 0 };
    const lists = await this.listAll(namespace, strict);
    const autoscalerOf = this.autoscalerOf(namespace);
    for (const { apiVersion, kind, items } of lists.scaled) {
      for (const o of items) {
        const name = o.metadata!.name!;
        const recorded = o.metadata?.annotations?.[pauseAnnotations.replicas];
        const replicas = recorded === undefined ? NaN : Number(recorded);
        if (!Number.isInteger(replicas) || replicas < 0) {
          result.unchanged++;
          continue;
        }
        const current = (o.spec as { replicas?: number } | undefined)?.replicas ?? 1;
        await this.patch(
          namespace,
          {
            apiVersion,
            kind,
            metadata: { name, namespace, annotations: { [pauseAnnotations.replicas]: null } },
            spec: { replicas },
          } as unknown as KubeObject,
          'resume',
        );
        const autoscaler = await autoscalerOf(`${kind}/${name}`);
        result.changed.push({
          kind,
          name,
          from: current,
          to: replicas,
          ...(autoscaler ? { autoscaler } : {}),
        });
      }
    }
    for (const o of lists.cronJobs) {
      const name = o.metadata!.name!;
      const recorded = o.metadata?.annotations?.[pauseAnnotations.suspend];
      if (recorded !== 'true' && recorded !== 'false') {
        result.unchanged++;
        continue;
      }
      await this.patch(
        namespace,
        {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          metadata: { name, namespace, annotations: { [pauseAnnotations.suspend]: null } },
          spec: { suspend: recorded === 'true' },
        } as unknown as KubeObject,
        'resume',
      );
      result.changed.push({ kind: 'CronJob', name, from: true, to: recorded === 'true' });
    }
    return result;
  }
}

/** `Deployment api 2 → 0 (HPA api), CronJob report suspended`, or `nothing tend deployed to change`. */
export function describeChanges(result: WorkloadsResult): string {
  if (result.changed.length === 0) {
    return result.unchanged > 0
      ? `${result.unchanged} object(s) already as wanted`
      : 'nothing tend deployed to change';
  }
  return result.changed
    .map((c) =>
      c.kind === 'CronJob'
        ? `CronJob ${c.name} ${c.to ? 'suspended' : 'not suspended'}`
        : `${c.kind} ${c.name} ${String(c.from)} → ${String(c.to)}${c.autoscaler ? ` (HPA ${c.autoscaler})` : ''}`,
    )
    .join(', ');
}
