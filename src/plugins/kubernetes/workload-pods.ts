/**
 * The pods of a workload, as Garden's `resource: { kind, name, containerName }` names them: its
 * pod template (for a Test or Run pod made from it: `kubernetes-pod` with `resource` or
 * `podSpec`, `helm-pod`) and its running pods (for `kubernetes-exec`).
 */
import { TendError } from '../../errors.js';
import type { ResolvedAction } from '../../plugin/types.js';
import type { KubeClient, KubeObject, V1Pod } from './client/index.js';
import type { ManifestPodResource, PodResource } from './config.js';
import type { Manifest } from './manifests.js';

const apiVersions: Record<PodResource['kind'], string> = {
  Deployment: 'apps/v1',
  StatefulSet: 'apps/v1',
  DaemonSet: 'apps/v1',
  ReplicaSet: 'apps/v1',
  Job: 'batch/v1',
  CronJob: 'batch/v1',
  Pod: 'v1',
};

export type PodSpecObject = Record<string, unknown> & { containers?: Record<string, unknown>[] };

/** An env variable of a pod's container: a value, or a Secret's key. */
export interface PodEnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}

/** The pod spec of a workload (its template's) or of a Pod. */
export function podTemplateOf(object: KubeObject): PodSpecObject | undefined {
  const spec = object.spec as Record<string, unknown> | undefined;
  if (!spec) return undefined;
  if (object.kind === 'Pod') return spec;
  if (object.kind === 'CronJob') {
    return (spec.jobTemplate as { spec?: { template?: { spec?: PodSpecObject } } } | undefined)?.spec
      ?.template?.spec;
  }
  return (spec.template as { spec?: PodSpecObject } | undefined)?.spec;
}

function describe(resource: ManifestPodResource): string {
  return resource.name === undefined ? resource.kind : `${resource.kind} ${resource.name}`;
}

/** The workload as the cluster has it in the namespace (deployed by a Deploy the action depends on). */
export async function readWorkload(
  client: KubeClient,
  namespace: string,
  action: ResolvedAction,
  resource: PodResource,
): Promise<KubeObject> {
  const live = await client.objects.read(namespace, {
    apiVersion: apiVersions[resource.kind],
    kind: resource.kind,
    name: resource.name,
  });
  if (!live) {
    throw new TendError(
      'TEND_K8S_POD_FAILED',
      `${action.ref}: no ${describe(resource)} in namespace "${namespace}"; deploy it first (add the Deploy that renders it to the dependencies)`,
      { actionRef: action.ref, detail: { namespace, resource } },
    );
  }
  return live;
}

/** The workload among rendered manifests (a helm-pod's chart, a kubernetes-pod's manifests). */
export function findInManifests(
  action: ResolvedAction,
  manifests: Manifest[],
  resource: ManifestPodResource,
  source = { lacks: 'the chart renders', has: 'it renders' },
): KubeObject {
  const ofKind = manifests.filter((m) => m.object.kind === resource.kind);
  // Without a name, the one workload of its kind, as Garden picks it (getTargetResource).
  if (resource.name === undefined && ofKind.length > 1) {
    throw new TendError(
      'TEND_K8S_MANIFEST_INVALID',
      `${action.ref}: ${source.has} ${ofKind.length} ${resource.kind}s (${ofKind.map((m) => m.object.metadata?.name).join(', ')}); name one with resource.name`,
      { actionRef: action.ref, detail: { resource } },
    );
  }
  const found = ofKind.find((m) => resource.name === undefined || m.object.metadata?.name === resource.name);
  if (!found) {
    const workloads = manifests
      .filter((m) => m.object.kind! in apiVersions)
      .map((m) => `${m.object.kind} ${m.object.metadata?.name}`);
    throw new TendError(
      'TEND_K8S_MANIFEST_INVALID',
      `${action.ref}: ${source.lacks} no ${describe(resource)}; ${source.has} ${workloads.join(', ') || 'no workload'}`,
      { actionRef: action.ref, detail: { resource } },
    );
  }
  return found.object;
}

/** The named container of a pod spec (or its first), or an error naming those it has. */
function containerOf(
  action: ResolvedAction,
  spec: PodSpecObject,
  containerName: string | undefined,
  what: string,
): Record<string, unknown> {
  const containers = spec.containers ?? [];
  const container =
    containerName === undefined ? containers[0] : containers.find((c) => c.name === containerName);
  if (!container) {
    throw new TendError(
      'TEND_K8S_MANIFEST_INVALID',
      `${action.ref}: ${what} has ${containerName === undefined ? 'no container' : `no container ${containerName}`}` +
        (containers.length > 0 ? `; it has ${containers.map((c) => String(c.name)).join(', ')}` : ''),
      { actionRef: action.ref },
    );
  }
  return container;
}

/**
 * The spec of a pod that runs to completion, made from a workload's pod spec: the container (its
 * image, volumes, env) with the command, args and env of the action, named `main`; without the
 * other containers and probes, which would keep it from finishing.
 */
export function runPodSpec(
  action: ResolvedAction,
  template: PodSpecObject,
  options: {
    what: string;
    containerName?: string;
    command?: string[];
    args?: string[];
    env: PodEnvVar[];
  },
): PodSpecObject {
  const container = containerOf(action, template, options.containerName, options.what);
  const {
    livenessProbe: _l,
    readinessProbe: _r,
    startupProbe: _s,
    env: ownEnv,
    ...rest
  } = container as Record<string, unknown> & { env?: { name: string }[] };
  const names = new Set(options.env.map((e) => e.name));
  return {
    ...template,
    restartPolicy: 'Never',
    containers: [
      {
        ...rest,
        name: 'main',
        ...(options.command ? { command: options.command, args: options.args ?? [] } : {}),
        ...(!options.command && options.args ? { args: options.args } : {}),
        env: [...(ownEnv ?? []).filter((e) => !names.has(e.name)), ...options.env],
      },
    ],
  };
}

/** A running pod of the workload, and the container to exec in. */
export async function runningPod(
  client: KubeClient,
  namespace: string,
  action: ResolvedAction,
  resource: PodResource,
): Promise<{ pod: string; container: string }> {
  const workload = await readWorkload(client, namespace, action, resource);
  let pods: V1Pod[];
  if (resource.kind === 'Pod') {
    pods = [workload as V1Pod];
  } else {
    const matchLabels = (workload.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)
      ?.selector?.matchLabels;
    const selector = Object.entries(matchLabels ?? {})
      .map(([key, value]) => `${key}=${value}`)
      .join(',');
    pods = selector ? await client.pods.list(namespace, selector) : [];
  }
  const running = pods.find((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  if (!running) {
    throw new TendError(
      'TEND_K8S_POD_FAILED',
      `${action.ref}: ${describe(resource)} in namespace "${namespace}" has no running pod to run the command in`,
      { actionRef: action.ref, detail: { namespace, resource, pods: pods.map((p) => p.metadata?.name) } },
    );
  }
  const container = containerOf(
    action,
    (running.spec ?? {}) as PodSpecObject,
    resource.containerName,
    `pod ${running.metadata?.name}`,
  );
  return { pod: running.metadata!.name!, container: String(container.name) };
}
