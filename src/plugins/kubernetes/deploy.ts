/**
 * Deploy (`kubernetes`): manifests from files (relative to the action source, template
 * expressions resolved) and inline (resolved by the framework), applied into the app namespace
 * with server-side apply (field manager `tend`), labelled with the action and annotated with its
 * version. The deploy waits until Deployments/StatefulSets/DaemonSets are available and Jobs
 * complete; a timeout names what is not ready and why. Status compares the version annotation;
 * delete removes what the manifests name.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseAllDocuments } from 'yaml';
import { TendError } from '../../errors.js';
import type {
  ActionHandlerParams,
  ExecuteResult,
  PluginContext,
  ResolvedAction,
  StatusResult,
} from '../../plugin/types.js';
import { annotations, labels, type KubeClient, type KubeObject, type V1Pod } from './client/index.js';
import type { KubernetesDeploySpec } from './config.js';
import { actionLabel, describePod, startFailure } from './pods.js';
import { clientFor } from './provider.js';

type Params = ActionHandlerParams<KubernetesDeploySpec>;

interface Manifest {
  object: KubeObject;
  /** `k8s/api.yaml#2` or `manifests[0]`, for messages. */
  origin: string;
}

function invalid(action: ResolvedAction, message: string, detail: Record<string, unknown> = {}): TendError {
  return new TendError('TEND_K8S_MANIFEST_INVALID', `${action.ref}: ${message}`, {
    actionRef: action.ref,
    detail,
  });
}

/** The manifests of the action, checked for shape (apiVersion, kind, metadata.name). */
export function loadManifests(ctx: PluginContext, action: ResolvedAction<KubernetesDeploySpec>): Manifest[] {
  const spec = action.spec;
  if (!spec.files?.length && !spec.manifests?.length) {
    throw invalid(action, 'the spec names no manifests; set `files:` or `manifests:`');
  }
  const out: Manifest[] = [];
  for (const file of spec.files ?? []) {
    const full = path.resolve(action.sourceDir, file);
    let text: string;
    try {
      text = readFileSync(full, 'utf8');
    } catch {
      throw invalid(action, `manifest file ${file} not found (looked in ${action.sourceDir})`, {
        file: full,
      });
    }
    const docs = parseAllDocuments(text);
    docs.forEach((doc, index) => {
      const where = `${file}#${index + 1}`;
      if (doc.errors.length > 0) {
        const e = doc.errors[0]!;
        const line = e.linePos?.[0];
        throw invalid(
          action,
          `${file}${line ? `:${line.line}:${line.col}` : ''}: invalid YAML: ${e.message.split('\n')[0]}`,
          { file: full },
        );
      }
      const value = doc.toJS() as unknown;
      if (value === null || value === undefined) return;
      const resolved = ctx.resolveTemplates(value, {
        location: { file: path.relative(ctx.projectRoot, full), line: 1, column: 1 },
        dependencyOutputs: action.dependencyOutputs,
      });
      out.push({ object: resolved as KubeObject, origin: where });
    });
  }
  (spec.manifests ?? []).forEach((m, index) =>
    out.push({ object: m as KubeObject, origin: `manifests[${index}]` }),
  );
  const flat: Manifest[] = [];
  for (const m of out) {
    const items =
      (m.object as { kind?: unknown; items?: unknown }).kind === 'List'
        ? (m.object as { items?: unknown }).items
        : undefined;
    if (Array.isArray(items))
      items.forEach((item, i) =>
        flat.push({ object: item as KubeObject, origin: `${m.origin} items[${i}]` }),
      );
    else flat.push(m);
  }
  for (const { object, origin } of flat) {
    if (!object || typeof object !== 'object' || Array.isArray(object)) {
      throw invalid(action, `${origin}: a manifest must be a mapping (apiVersion, kind, metadata…)`);
    }
    const missing = [
      typeof object.apiVersion === 'string' ? undefined : 'apiVersion',
      typeof object.kind === 'string' ? undefined : 'kind',
      typeof object.metadata?.name === 'string' && object.metadata.name ? undefined : 'metadata.name',
    ].filter(Boolean);
    if (missing.length > 0) throw invalid(action, `${origin}: missing ${missing.join(', ')}`);
    if (object.kind === 'Namespace') {
      throw invalid(action, `${origin}: tend creates the namespace itself; remove the Namespace manifest`);
    }
  }
  if (spec.image) for (const { object } of flat) setDefaultImage(object, spec.image);
  return flat;
}

function podSpecOf(
  object: KubeObject,
): { containers?: { image?: string }[]; initContainers?: { image?: string }[] } | undefined {
  const spec = object.spec as Record<string, unknown> | undefined;
  if (!spec) return undefined;
  if (object.kind === 'Pod') return spec as never;
  if (object.kind === 'CronJob') {
    return (spec.jobTemplate as { spec?: { template?: { spec?: unknown } } } | undefined)?.spec?.template
      ?.spec as never;
  }
  return (spec.template as { spec?: unknown } | undefined)?.spec as never;
}

/** `image` of the spec for every container that has none of its own. */
function setDefaultImage(object: KubeObject, image: string): void {
  const pod = podSpecOf(object);
  for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
    if (c && typeof c === 'object' && !c.image) c.image = image;
  }
}

/** Checks each object targets the app namespace (or none) and is namespaced; adds tend's labels and version. */
async function prepare(
  client: KubeClient,
  namespace: string,
  action: ResolvedAction<KubernetesDeploySpec>,
  manifests: Manifest[],
): Promise<KubeObject[]> {
  const objects: KubeObject[] = [];
  for (const { object, origin } of manifests) {
    if (object.metadata?.namespace && object.metadata.namespace !== namespace) {
      throw invalid(
        action,
        `${origin}: ${object.kind} ${object.metadata.name} sets namespace "${object.metadata.namespace}", ` +
          `but tend deploys into "${namespace}"; remove metadata.namespace`,
      );
    }
    let namespaced: boolean;
    try {
      namespaced = await client.isNamespaced(object.apiVersion!, object.kind!);
    } catch (error) {
      if (error instanceof TendError && error.code === 'TEND_K8S_MANIFEST_INVALID') {
        throw invalid(action, `${origin}: ${error.message}`);
      }
      throw error;
    }
    if (!namespaced) {
      throw invalid(
        action,
        `${origin}: ${object.kind} is cluster-scoped; tend deploys only namespaced resources into the environment`,
      );
    }
    objects.push({
      ...object,
      metadata: {
        ...object.metadata,
        namespace,
        labels: {
          ...object.metadata?.labels,
          [labels.managedBy]: 'tend',
          [labels.action]: actionLabel(action.ref),
        },
        annotations: { ...object.metadata?.annotations, [annotations.version]: action.version },
      },
    });
  }
  return objects;
}

function refOf(object: KubeObject) {
  return { apiVersion: object.apiVersion!, kind: object.kind!, name: object.metadata!.name! };
}

export async function deploy(ctx: PluginContext, { action }: Params): Promise<ExecuteResult> {
  const manifests = loadManifests(ctx, action);
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  await client.ensureNamespace(namespace);
  const objects = await prepare(client, namespace, action, manifests);
  const applied: KubeObject[] = [];
  for (const object of objects) {
    try {
      applied.push(await client.apply(namespace, object));
    } catch (error) {
      if (
        error instanceof TendError &&
        error.code === 'TEND_K8S_API' &&
        (error.detail?.status === 400 || error.detail?.status === 422)
      ) {
        throw invalid(
          action,
          `the cluster rejected ${object.kind} ${object.metadata?.name}: ${error.message}`,
          {
            ...error.detail,
          },
        );
      }
      throw error;
    }
    ctx.log.info(`applied ${object.kind} ${object.metadata?.name}`);
  }
  if (action.spec.wait !== false) {
    const timeoutMs =
      action.spec.timeout !== undefined ? action.spec.timeout * 1000 : (action.timeoutMs ?? 300_000);
    await waitReady(ctx, client, namespace, action, applied, timeoutMs);
  }
  return {
    outputs: { namespace },
    detail: { resources: applied.map((o) => `${o.kind}/${o.metadata?.name}`) },
  };
}

interface Readiness {
  ready: boolean;
  /** Why not (and, with `failed`, why it never will be). */
  reason?: string;
  failed?: boolean;
}

function condition(
  object: KubeObject,
  type: string,
): { status?: string; reason?: string; message?: string } | undefined {
  const conditions = (object.status as { conditions?: { type: string }[] } | undefined)?.conditions ?? [];
  return conditions.find((c) => c.type === type) as never;
}

/** Whether a workload is ready by its status; other kinds are ready once applied. */
export function readiness(object: KubeObject): Readiness {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  const status = (object.status ?? {}) as Record<string, number | undefined>;
  const generation = object.metadata?.generation;
  const observed = status.observedGeneration;
  const stale = generation !== undefined && (observed ?? 0) < generation;
  const want = typeof spec.replicas === 'number' ? spec.replicas : 1;
  switch (object.kind) {
    case 'Deployment': {
      if (stale) return { ready: false, reason: 'the controller has not seen the new generation yet' };
      const updated = status.updatedReplicas ?? 0;
      const available = status.availableReplicas ?? 0;
      const progress = condition(object, 'Progressing');
      if (progress?.status === 'False' && progress.reason === 'ProgressDeadlineExceeded') {
        return { ready: false, failed: true, reason: progress.message ?? 'progress deadline exceeded' };
      }
      if (updated < want || available < want) {
        return { ready: false, reason: `${available}/${want} available, ${updated}/${want} updated` };
      }
      return { ready: true };
    }
    case 'StatefulSet': {
      if (stale) return { ready: false, reason: 'the controller has not seen the new generation yet' };
      const ready = status.readyReplicas ?? 0;
      return ready >= want ? { ready: true } : { ready: false, reason: `${ready}/${want} ready` };
    }
    case 'DaemonSet': {
      if (stale) return { ready: false, reason: 'the controller has not seen the new generation yet' };
      const desired = status.desiredNumberScheduled ?? 0;
      const ready = status.numberReady ?? 0;
      return ready >= desired ? { ready: true } : { ready: false, reason: `${ready}/${desired} ready` };
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
      return condition(object, 'Complete')?.status === 'True'
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
  return selector ? client.listPods(namespace, selector) : [];
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
    const events = (await client.listEvents(namespace))
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

async function waitReady(
  ctx: PluginContext,
  client: KubeClient,
  namespace: string,
  action: ResolvedAction,
  applied: KubeObject[],
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = applied.filter((o) => workloadKinds.has(o.kind ?? ''));
  let interval = 100;
  for (;;) {
    const still: { object: KubeObject; reason: string }[] = [];
    for (const object of pending) {
      const live = await client.readObject(namespace, refOf(object));
      if (!live) {
        still.push({ object, reason: 'it disappeared after it was applied' });
        continue;
      }
      const state = readiness(live);
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

export async function getStatus(ctx: PluginContext, { action }: Params): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.observeNamespace(namespace);
  if (info?.state !== 'ready') return { state: 'not-ready', detail: { namespace: info?.state ?? 'missing' } };
  const objects = await prepare(client, namespace, action, loadManifests(ctx, action));
  const outdated: string[] = [];
  for (const object of objects) {
    const live = await client.readObject(namespace, refOf(object));
    const name = `${object.kind}/${object.metadata?.name}`;
    if (!live) outdated.push(`${name} missing`);
    else if (live.metadata?.annotations?.[annotations.version] !== action.version)
      outdated.push(`${name} outdated`);
    else if (!readiness(live).ready) outdated.push(`${name} not ready`);
  }
  if (outdated.length > 0) return { state: 'not-ready', detail: { resources: outdated } };
  return { state: 'ready', outputs: { namespace } };
}

export async function remove(ctx: PluginContext, { action }: Params): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.observeNamespace(namespace);
  if (info?.state !== 'ready') return { state: 'not-ready' };
  const objects = await prepare(client, namespace, action, loadManifests(ctx, action));
  const deleted: string[] = [];
  for (const object of objects) {
    const live = await client.readObject(namespace, refOf(object));
    // Only what tend applied for this action: a same-named object of someone else stays.
    if (!live || live.metadata?.labels?.[labels.action] !== actionLabel(action.ref)) continue;
    if (await client.deleteObject(namespace, refOf(object)))
      deleted.push(`${object.kind}/${object.metadata?.name}`);
  }
  ctx.log.info(deleted.length ? `deleted ${deleted.join(', ')}` : 'nothing to delete');
  return { state: 'not-ready', detail: { deleted } };
}
