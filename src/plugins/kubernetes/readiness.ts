/**
 * Readiness of applied manifests: Deployments, StatefulSets and DaemonSets are ready when their
 * rollout is done (as `kubectl rollout status` means it), Jobs when complete, Pods when running
 * and ready; other kinds once applied. The deploy waits for its workloads with a growing
 * interval; a workload that will never be ready (a failed Job, an image that cannot be pulled)
 * fails at once, and a timeout names what is not ready and why (its pods' phases and the last
 * events about them).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../errors.js';
import type { PluginContext, ResolvedAction } from '../../plugin/types.js';
import { refOf, type KubeClient, type KubeObject, type V1Pod } from './client/index.js';
import { describePod, startFailure } from './pods.js';

interface Readiness {
  ready: boolean;
  /** Why not (and, with `failed`, why it never will be). */
  reason?: string;
  failed?: boolean;
}

interface Condition {
  type: string;
  status?: string;
  reason?: string;
  message?: string;
}

function condition(object: KubeObject, type: string): Condition | undefined {
  const conditions = (object.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
  return conditions.find((c) => c.type === type);
}

export interface ReadinessOptions {
  /**
   * Garden's `waitForJobs` (default true): false counts a Job that has not failed as ready, as
   * Garden's status check does, so a deploy does not wait for a long or endless Job.
   */
  waitForJobs?: boolean;
}

/**
 * Whether a workload is ready by its status; other kinds are ready once applied. Deployments,
 * StatefulSets and DaemonSets are ready when their rollout is done as `kubectl rollout status`
 * decides it: the controller observed the current generation, every desired replica runs the
 * current template, is available, and no old replica is left.
 */
export function readiness(object: KubeObject, options: ReadinessOptions = {}): Readiness {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  const status = (object.status ?? {}) as Record<string, number | undefined>;
  const generation = object.metadata?.generation;
  const observed = status.observedGeneration;
  const stale = observed === undefined || (generation !== undefined && observed < generation);
  const want = typeof spec.replicas === 'number' ? spec.replicas : 1;
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  switch (object.kind) {
    case 'Deployment': {
      const progress = condition(object, 'Progressing');
      if (!stale && progress?.status === 'False' && progress.reason === 'ProgressDeadlineExceeded') {
        return { ready: false, failed: true, reason: progress.message ?? 'progress deadline exceeded' };
      }
      if (stale) return { ready: false, reason: 'the controller has not observed the new generation yet' };
      const updated = status.updatedReplicas ?? 0;
      const replicas = status.replicas ?? 0;
      const available = status.availableReplicas ?? 0;
      if (updated < want) return { ready: false, reason: `${updated} of ${want} new replicas updated` };
      if (replicas > updated) {
        return { ready: false, reason: `${count(replicas - updated, 'old replica')} pending termination` };
      }
      if (available < updated) {
        return { ready: false, reason: `${available} of ${updated} updated replicas available` };
      }
      return { ready: true };
    }
    case 'StatefulSet': {
      if (stale) return { ready: false, reason: 'the controller has not observed the new generation yet' };
      const ready = status.readyReplicas ?? 0;
      if (ready < want) return { ready: false, reason: `${ready} of ${want} pods ready` };
      const strategy = spec.updateStrategy as
        { type?: string; rollingUpdate?: { partition?: number } } | undefined;
      // OnDelete: pods change only when deleted, so there is no rollout to wait for.
      if (strategy?.type === 'OnDelete') return { ready: true };
      const updated = status.updatedReplicas ?? 0;
      if (strategy?.rollingUpdate) {
        const partition = strategy.rollingUpdate.partition ?? 0;
        return updated >= want - partition
          ? { ready: true }
          : { ready: false, reason: `${updated} of ${want - partition} pods updated to the new revision` };
      }
      const revisions = object.status as { currentRevision?: string; updateRevision?: string };
      return revisions.updateRevision === revisions.currentRevision
        ? { ready: true }
        : { ready: false, reason: `${updated} of ${want} pods at revision ${revisions.updateRevision}` };
    }
    case 'DaemonSet': {
      if (stale) return { ready: false, reason: 'the controller has not observed the new generation yet' };
      const desired = status.desiredNumberScheduled ?? 0;
      const updated = status.updatedNumberScheduled ?? 0;
      const available = status.numberAvailable ?? 0;
      const strategy = spec.updateStrategy as { type?: string } | undefined;
      if (strategy?.type !== 'OnDelete' && updated < desired) {
        return { ready: false, reason: `${updated} of ${desired} new pods updated` };
      }
      return available >= desired
        ? { ready: true }
        : { ready: false, reason: `${available} of ${desired} pods available` };
    }
    case 'Job': {
      const failed = condition(object, 'Failed');
      if (failed?.status === 'True') {
        return {
          ready: false,
          failed: true,
          reason: `failed: ${failed.reason ?? ''} ${failed.message ?? ''}`.trim(),
        };
      }
      return condition(object, 'Complete')?.status === 'True' || options.waitForJobs === false
        ? { ready: true }
        : { ready: false, reason: `${status.succeeded ?? 0} succeeded, ${status.active ?? 0} active` };
    }
    case 'Pod': {
      const phase = (object.status as { phase?: string } | undefined)?.phase;
      if (phase === 'Succeeded') return { ready: true };
      if (phase === 'Failed') return { ready: false, failed: true, reason: 'the pod failed' };
      return condition(object, 'Ready')?.status === 'True'
        ? { ready: true }
        : { ready: false, reason: `phase ${phase ?? 'Pending'}, not ready` };
    }
    default:
      return { ready: true };
  }
}

const workloadKinds = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'Pod']);

function selectorOf(object: KubeObject): string | undefined {
  if (object.kind === 'Pod') return undefined;
  const match = ((object.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)
    ?.selector?.matchLabels ?? {}) as Record<string, string>;
  const entries = Object.entries(match);
  if (object.kind === 'Job' && entries.length === 0) return `job-name=${object.metadata?.name}`;
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : undefined;
}

async function podsOf(client: KubeClient, namespace: string, object: KubeObject): Promise<V1Pod[]> {
  if (object.kind === 'Pod') return [object as V1Pod];
  const selector = selectorOf(object);
  return selector ? client.pods.list(namespace, selector) : [];
}

/** What is wrong with an unready workload: its pods' phases and the last events about it and them. */
async function explain(
  client: KubeClient,
  namespace: string,
  object: KubeObject,
  reason: string,
): Promise<string> {
  const name = `${object.kind}/${object.metadata?.name}`;
  const lines = [`${name}: ${reason}`];
  try {
    const pods = await podsOf(client, namespace, object);
    for (const pod of pods.slice(0, 5)) lines.push(`  ${describePod(pod)}`);
    const names = new Set([object.metadata?.name, ...pods.map((p) => p.metadata?.name)]);
    const events = (await client.pods.listEvents(namespace))
      .filter((e) => names.has(e.involvedObject?.name))
      .sort((a, b) => eventTime(a) - eventTime(b))
      .slice(-5);
    for (const e of events) {
      lines.push(
        `  event ${e.type ?? ''} ${e.reason ?? ''} (${e.involvedObject?.kind}/${e.involvedObject?.name}): ${e.message ?? ''}`,
      );
    }
  } catch (error) {
    lines.push(`  (could not read pods/events: ${(error as Error).message})`);
  }
  return lines.join('\n');
}

function eventTime(e: {
  lastTimestamp?: Date | string;
  eventTime?: Date | string;
  metadata?: { creationTimestamp?: Date | string };
}): number {
  const t = e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : 0;
}

/** Waits until the applied workloads are ready; throws what is wrong at a failure or the timeout. */
export async function waitReady(
  ctx: PluginContext,
  client: KubeClient,
  namespace: string,
  action: ResolvedAction,
  applied: KubeObject[],
  timeoutMs: number,
  options: ReadinessOptions = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = applied.filter((o) => workloadKinds.has(o.kind ?? ''));
  let interval = 100;
  for (;;) {
    const still: { object: KubeObject; reason: string }[] = [];
    for (const object of pending) {
      const live = await client.objects.read(namespace, refOf(object));
      if (!live) {
        still.push({ object, reason: 'it disappeared after it was applied' });
        continue;
      }
      const state = readiness(live, options);
      if (state.failed) {
        throw new TendError(
          'TEND_K8S_POD_FAILED',
          `${action.ref}: ${await explain(client, namespace, live, state.reason ?? 'failed')}`,
          { actionRef: action.ref },
        );
      }
      if (state.ready) continue;
      // An image that cannot be pulled will not become ready: say so now rather than at the timeout.
      const pods = await podsOf(client, namespace, live).catch(() => []);
      const stuck = pods.map(startFailure).find(Boolean);
      if (stuck) {
        throw new TendError(
          'TEND_K8S_POD_FAILED',
          `${action.ref}: ${await explain(client, namespace, live, `cannot start: ${stuck}`)}`,
          { actionRef: action.ref },
        );
      }
      still.push({ object: live, reason: state.reason ?? 'not ready' });
    }
    if (still.length === 0) return;
    pending = still.map((s) => s.object);
    if (Date.now() > deadline) {
      const explained = await Promise.all(still.map((s) => explain(client, namespace, s.object, s.reason)));
      throw new TendError(
        'TEND_K8S_TIMEOUT',
        `${action.ref}: not ready after ${Math.round(timeoutMs / 1000)} s:\n${explained.join('\n')}`,
        {
          actionRef: action.ref,
          detail: { unready: still.map((s) => `${s.object.kind}/${s.object.metadata?.name}`) },
        },
      );
    }
    if (ctx.signal.aborted)
      throw new TendError('TEND_INTERRUPTED', `${action.ref}: interrupted while waiting`);
    await delay(interval);
    interval = Math.min(1000, Math.round(interval * 1.5));
  }
}
