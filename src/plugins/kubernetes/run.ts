/**
 * Test/Run (`kubernetes-pod`): a pod with the image, command, args and env of the spec, in the app
 * namespace. Its log becomes `log` events; the result has the exit code and duration; a timeout
 * or Ctrl-C stops it; the pod is removed afterwards in every case. Successful results are cached
 * per version (like exec), so a Test already passed for its version is not run again.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../errors.js';
import { readResult, writeResult } from '../../plugin/results.js';
import type {
  ActionHandlerParams,
  PluginContext,
  ResolvedAction,
  RunResult,
  StatusResult,
} from '../../plugin/types.js';
import { labels, type KubeClient, type V1Pod } from './client/index.js';
import type { KubernetesPodSpec, ManifestPodResource, PodResource } from './config.js';
import { loadChartManifests, type ChartSpec } from './helm.js';
import { loadManifests, templateFiles } from './manifests.js';
import { actionLabel, outputTail, podName, waitForExit, waitForStart } from './pods.js';
import { clientFor } from './provider.js';
import { podVolumes } from './volumes.js';
import {
  findInManifests,
  podTemplateOf,
  readWorkload,
  runPodSpec,
  type PodEnvVar,
  type PodSpecObject,
} from './workload-pods.js';
import { monotonicMs } from '../../monotonic.js';
import { assertNamespaceKey } from './namespace-key.js';

export async function getResult(
  ctx: PluginContext,
  { action }: ActionHandlerParams<KubernetesPodSpec>,
): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  // Results of a namespace that is gone (or re-created since) say nothing about this one.
  if (info?.state !== 'ready') return { state: 'not-ready' };
  const stored = readResult(ctx.tendDir, namespace, action.ref);
  if (stored?.version === action.version && (stored.exitCode ?? 0) === 0) {
    return { state: 'ready', outputs: stored.outputs };
  }
  return { state: 'not-ready' };
}

/** A kubernetes-pod's spec, or a helm-pod's (whose resource is looked up in its chart). */
type PodRunSpec = KubernetesPodSpec & Partial<ChartSpec>;

/**
 * The pod's spec: the image's, or a pod spec's (`podSpec`; a workload's in the cluster, or in a
 * helm-pod's chart, for `resource`) with the command, args and env of the action.
 */
async function podSpecFor(
  ctx: PluginContext,
  client: KubeClient,
  namespace: string,
  action: ResolvedAction<PodRunSpec>,
  env: PodEnvVar[],
): Promise<NonNullable<V1Pod['spec']>> {
  const spec = action.spec;
  const workingDir = spec.workingDir ? { workingDir: spec.workingDir } : {};
  if (spec.image) {
    const mounted = spec.volumes?.length ? podVolumes(action, spec.volumes) : undefined;
    return {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          image: spec.image,
          ...(spec.command ? { command: spec.command } : {}),
          ...(spec.args ? { args: spec.args } : {}),
          ...workingDir,
          env,
          ...(mounted ? { volumeMounts: mounted.volumeMounts } : {}),
        },
      ],
      ...(mounted ? { volumes: mounted.volumes } : {}),
    };
  }
  let template: PodSpecObject | undefined;
  let what = 'spec.podSpec';
  if (spec.podSpec) template = spec.podSpec as PodSpecObject;
  else if (spec.resource) {
    const { resource } = spec;
    what = resource.name === undefined ? resource.kind : `${resource.kind} ${resource.name}`;
    // Garden's kubernetes-pod with manifests finds the workload in them, not in the cluster.
    const ownManifests =
      spec.manifestFiles?.length || templateFiles(spec).length || spec.kustomize || spec.manifests?.length;
    const object =
      action.type === 'helm-pod'
        ? findInManifests(action, await loadChartManifests(ctx, action), spec.resource)
        : ownManifests
          ? findInManifests(action, await loadManifests(ctx, action), spec.resource, {
              lacks: 'its manifests have',
              has: 'they have',
            })
          : await readWorkload(client, namespace, action, namedResource(action, resource));
    template = podTemplateOf(object);
  } else {
    throw new TendError(
      'TEND_K8S_MANIFEST_INVALID',
      `${action.ref}: the pod needs an image: set spec.image, spec.resource (a workload whose pod spec it takes) or spec.podSpec`,
      { actionRef: action.ref },
    );
  }
  const pod = runPodSpec(action, template ?? {}, {
    what,
    ...(spec.resource?.containerName ? { containerName: spec.resource.containerName } : {}),
    ...(spec.command ? { command: spec.command } : {}),
    ...(spec.args ? { args: spec.args } : {}),
    env,
  });
  if (spec.workingDir) Object.assign(pod.containers![0]!, workingDir);
  if (spec.volumes?.length) {
    // Beside the pod spec's own volumes and mounts.
    const mounted = podVolumes(action, spec.volumes);
    const main = pod.containers![0]! as { volumeMounts?: unknown[] };
    main.volumeMounts = [...(main.volumeMounts ?? []), ...mounted.volumeMounts];
    pod.volumes = [...((pod.volumes as unknown[] | undefined) ?? []), ...mounted.volumes];
  }
  // A pod spec as a manifest writes it: the API server checks it.
  return pod as unknown as NonNullable<V1Pod['spec']>;
}

export async function run(
  ctx: PluginContext,
  { action }: ActionHandlerParams<PodRunSpec>,
): Promise<RunResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  assertNamespaceKey(action, namespace);
  const spec = action.spec;
  const timeoutMs = spec.timeout !== undefined ? spec.timeout * 1000 : (action.timeoutMs ?? 600_000);
  await client.namespaces.ensure(namespace);
  const name = podName(action.kind.toLowerCase(), action.name);
  const what = `${action.kind.toLowerCase()} pod for ${action.ref}`;
  const started = monotonicMs();
  const deadline = Date.now() + timeoutMs;
  const tail = outputTail(ctx);
  const onLine = tail.onLine('stdout');
  const env = Object.entries<NonNullable<KubernetesPodSpec['env']>[string]>({
    TEND_PROJECT: ctx.environment.project,
    TEND_ENVIRONMENT: ctx.environment.name,
    TEND_NAMESPACE: namespace,
    TEND_ACTION: action.ref,
    TEND_ACTION_VERSION: action.version,
    ...spec.env,
  }).map(([key, value]): PodEnvVar =>
    // A Secret's key as a container Deploy reads it (the key defaulting to the variable's name).
    typeof value === 'string'
      ? { name: key, value }
      : {
          name: key,
          valueFrom: { secretKeyRef: { name: value.secretRef.name, key: value.secretRef.key ?? key } },
        },
  );
  await client.pods.create(namespace, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { [labels.managedBy]: 'tend', [labels.action]: actionLabel(action.ref) },
      annotations: { 'tend.dev/version': action.version },
    },
    spec: await podSpecFor(ctx, client, namespace, action, env),
  });
  try {
    const wait = { deadline, signal: ctx.signal, what };
    const interrupted = () =>
      new TendError('TEND_INTERRUPTED', `${what} was stopped (interrupted); pod ${name} removed`);
    await waitForStart(client, namespace, name, wait).catch((error: unknown) => {
      throw ctx.signal.aborted ? interrupted() : error;
    });
    let logs: Awaited<ReturnType<typeof client.pods.streamLog>> | undefined;
    try {
      logs = await client.pods.streamLog(namespace, name, 'main', onLine);
    } catch (error) {
      ctx.log.debug(`could not follow the log of ${name}: ${(error as Error).message}`);
    }
    let exitCode: number;
    try {
      ({ exitCode } = await waitForExit(client, namespace, name, 'main', wait));
    } catch (error) {
      logs?.stop();
      if (ctx.signal.aborted) throw interrupted();
      if (error instanceof TendError && error.code === 'TEND_K8S_TIMEOUT') {
        throw new TendError(
          'TEND_K8S_TIMEOUT',
          `${what} timed out after ${timeoutMs} ms; pod ${name} removed`,
          {
            detail: { log: tail.text() },
          },
        );
      }
      throw error;
    }
    // The log stream ends with the container; give it a moment to deliver its last lines. The
    // moment's timer goes with it: left armed, it held the process 5 s after its summary.
    if (logs) {
      const grace = new AbortController();
      await Promise.race([logs.done, delay(5000, undefined, { signal: grace.signal }).catch(() => {})]);
      grace.abort();
      logs.stop();
    }
    const durationMs = Math.round(monotonicMs() - started);
    if (exitCode === 0) {
      writeResult(ctx.tendDir, namespace, action.ref, {
        version: action.version,
        outputs: {},
        completedAt: new Date().toISOString(),
        exitCode: 0,
      });
    }
    return { outputs: {}, exitCode, durationMs, log: tail.text(), detail: { pod: name, namespace } };
  } finally {
    await client.pods.remove(namespace, name).catch((error: unknown) => {
      ctx.log.warn(`could not remove pod ${name} in ${namespace}: ${(error as Error).message}`);
    });
  }
}

/** A workload read from the cluster is read by name: only manifests can give the one of a kind. */
function namedResource(action: ResolvedAction, resource: ManifestPodResource): PodResource {
  if (resource.name !== undefined) return { ...resource, name: resource.name };
  throw new TendError(
    'TEND_K8S_MANIFEST_INVALID',
    `${action.ref}: resource.name is needed: without manifests of its own, the ${resource.kind} is read from the cluster by name`,
    { actionRef: action.ref, detail: { resource } },
  );
}
