/**
 * `Deploy.getLogs` of `kubernetes` and `container`: the logs of the pods of the deploy's workloads (Deployments,
 * StatefulSets, DaemonSets, ReplicaSets and Jobs by their selector, Pods by name), each container
 * through the log endpoint of the namespace-tracking client. Without `follow` every pod's log in
 * turn; with it the pods there now and those that start later (a rollout's new pods), until the
 * command is interrupted. Read-only: the namespace is observed, never created.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../errors.js';
import type { LogLine, LogsParams, PluginContext } from '../../plugin/types.js';
import { describeFailure, refOf, type KubeClient, type KubeObject, type V1Pod } from './client/index.js';
import type { KubernetesDeploySpec } from './config.js';
import { prepare, type ManifestsAction } from './deploy.js';
import { loadManifests, type Manifest } from './manifests.js';
import { clientFor } from './provider.js';

/** Kinds whose pods have logs; their pods are found by the live object's `spec.selector`. */
const workloadKinds = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'Pod']);

/** How often a follow looks for pods that started since (a rollout, a restarted Job). */
const podPollMs = 1000;

const timestamped = /^(\d{4}-\d\d-\d\dT\S+) (.*)$/s;

function selectorOf(live: KubeObject): string | undefined {
  const match = (live.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector
    ?.matchLabels;
  if (!match || Object.keys(match).length === 0) return undefined;
  return Object.entries(match)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The pods of the workloads, oldest first (each once). */
async function podsOf(client: KubeClient, namespace: string, live: KubeObject[]): Promise<V1Pod[]> {
  const pods = new Map<string, V1Pod>();
  for (const object of live) {
    if (object.kind === 'Pod') {
      const pod = await client.pods.read(namespace, object.metadata!.name!);
      if (pod) pods.set(pod.metadata!.name!, pod);
      continue;
    }
    const selector = selectorOf(object);
    if (!selector) continue;
    for (const pod of await client.pods.list(namespace, selector)) pods.set(pod.metadata!.name!, pod);
  }
  const created = (p: V1Pod) => String(p.metadata?.creationTimestamp ?? '');
  return [...pods.values()].sort(
    (a, b) => created(a).localeCompare(created(b)) || a.metadata!.name!.localeCompare(b.metadata!.name!),
  );
}

/** A container that has started has a log; one still waiting to start answers 400. */
function started(pod: V1Pod, container: string): boolean {
  const status = pod.status?.containerStatuses?.find((s) => s.name === container);
  return Boolean(status?.state?.running || status?.state?.terminated);
}

export async function getLogs(ctx: PluginContext, params: LogsParams<KubernetesDeploySpec>): Promise<void> {
  return manifestLogs(ctx, params, () => loadManifests(ctx, params.action));
}

/** The logs of the workloads among a Deploy's objects (`load`: a kubernetes or a container Deploy's). */
export async function manifestLogs(
  ctx: PluginContext,
  params: LogsParams<ManifestsAction['spec']>,
  load: () => Promise<Manifest[]>,
): Promise<void> {
  const { action, follow, tail, onLine } = params;
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  if (info?.state !== 'ready') {
    throw new TendError(
      'TEND_LOGS_UNAVAILABLE',
      `${action.ref} is not deployed: namespace ${namespace} is ${info?.state ?? 'missing'}`,
      { actionRef: action.ref, detail: { hint: `tend deploy ${action.name}` } },
    );
  }
  const objects = await prepare(client, namespace, action, await load());
  const workloads = objects.filter((o) => workloadKinds.has(o.kind ?? ''));
  if (workloads.length === 0) {
    throw new TendError(
      'TEND_LOGS_UNSUPPORTED',
      `${action.ref} deploys no workload (${[...workloadKinds].join(', ')}): nothing of it writes a log`,
      { actionRef: action.ref },
    );
  }
  const live: KubeObject[] = [];
  for (const object of workloads) {
    const found = await client.objects.read(namespace, refOf(object));
    if (found) live.push(found);
  }
  if (live.length === 0) {
    throw new TendError(
      'TEND_LOGS_UNAVAILABLE',
      `${action.ref} is not deployed in namespace ${namespace} (${workloads.map((o) => `${o.kind}/${o.metadata?.name}`).join(', ')} missing)`,
      { actionRef: action.ref, detail: { hint: `tend deploy ${action.name}` } },
    );
  }

  const streams = new Map<string, { done: Promise<void>; stop: () => void }>();
  const open = async (pod: V1Pod, container: string): Promise<void> => {
    const name = pod.metadata!.name!;
    const source = `pod/${name}/${container}`;
    if (streams.has(source) || !started(pod, container)) return;
    const deliver = (raw: string) => {
      const m = timestamped.exec(raw);
      const line: LogLine = m ? { source, text: m[2]!, time: m[1]! } : { source, text: raw };
      onLine(line);
    };
    try {
      streams.set(
        source,
        await client.pods.streamLog(namespace, name, container, deliver, {
          follow,
          timestamps: true,
          ...(tail !== undefined ? { tailLines: tail } : {}),
        }),
      );
    } catch (error) {
      // Gone or not started after all (a race with the pod's own life): the next look tries again.
      const status = describeFailure((error as TendError).cause ?? error).status;
      if (status !== 400 && status !== 404) throw error;
    }
  };
  const containers = (pod: V1Pod) => (pod.spec?.containers ?? []).map((c) => c.name);

  if (!follow) {
    for (const pod of await podsOf(client, namespace, live)) {
      for (const container of containers(pod)) {
        await open(pod, container);
        await streams.get(`pod/${pod.metadata!.name!}/${container}`)?.done;
      }
    }
    return;
  }
  try {
    while (!ctx.signal.aborted) {
      for (const pod of await podsOf(client, namespace, live)) {
        for (const container of containers(pod)) await open(pod, container);
      }
      await delay(podPollMs, undefined, { signal: ctx.signal }).catch(() => undefined);
    }
  } finally {
    for (const stream of streams.values()) stream.stop();
  }
}
