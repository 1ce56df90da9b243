/**
 * Deploy (`kubernetes`): manifests from files (relative to the action source, template
 * expressions resolved) and inline (resolved by the framework), applied into the app namespace
 * with server-side apply (field manager `tend`), labelled with the action and annotated with its
 * version. The deploy then waits for its workloads (readiness.ts). Status compares the version
 * annotation and readiness; delete removes what the manifests name.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { TendError } from '../../errors.js';
import type {
  ActionHandlerParams,
  ExecuteResult,
  PluginContext,
  ResolvedAction,
  StatusResult,
} from '../../plugin/types.js';
import {
  annotations,
  labels,
  pauseAnnotations,
  refOf,
  type KubeClient,
  type KubeObject,
} from './client/index.js';
import type { KubernetesDeploySpec } from './config.js';
import { actionLabel } from './pods.js';
import { clientFor } from './provider.js';
import { readiness, waitReady } from './readiness.js';

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
export async function prepare(
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
      namespaced = await client.objects.isNamespaced(object.apiVersion!, object.kind!);
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

export async function deploy(ctx: PluginContext, { action }: Params): Promise<ExecuteResult> {
  const manifests = loadManifests(ctx, action);
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  await client.namespaces.ensure(namespace);
  const objects = await prepare(client, namespace, action, manifests);
  const applied: KubeObject[] = [];
  for (const object of objects) {
    try {
      applied.push(await client.objects.apply(namespace, object));
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

export async function getStatus(ctx: PluginContext, { action }: Params): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  if (info?.state !== 'ready') return { state: 'not-ready', detail: { namespace: info?.state ?? 'missing' } };
  const objects = await prepare(client, namespace, action, loadManifests(ctx, action));
  const outdated: string[] = [];
  const paused: string[] = [];
  for (const object of objects) {
    const live = await client.objects.read(namespace, refOf(object));
    const name = `${object.kind}/${object.metadata?.name}`;
    const liveAnnotations = live?.metadata?.annotations ?? {};
    if (!live) outdated.push(`${name} missing`);
    else if (liveAnnotations[annotations.version] !== action.version) outdated.push(`${name} outdated`);
    // Scaled to 0 (or suspended) by a pause: "ready" with no replica would say it serves.
    else if (pauseAnnotations.replicas in liveAnnotations || pauseAnnotations.suspend in liveAnnotations)
      paused.push(name);
    else if (!readiness(live).ready) outdated.push(`${name} not ready`);
  }
  if (outdated.length > 0) return { state: 'not-ready', detail: { resources: outdated } };
  if (paused.length > 0) {
    return {
      state: 'paused',
      reason: `${paused.join(', ')} paused by cleanup: resumed by the next \`tend deploy|test|run\` or \`tend resume\``,
      outputs: { namespace },
      detail: { paused },
    };
  }
  return { state: 'ready', outputs: { namespace } };
}

export async function remove(ctx: PluginContext, { action }: Params): Promise<StatusResult> {
  const client = await clientFor(ctx);
  const namespace = client.settings.appNamespace;
  const info = await client.namespaces.observe(namespace);
  if (info?.state !== 'ready') return { state: 'not-ready' };
  const objects = await prepare(client, namespace, action, loadManifests(ctx, action));
  const deleted: string[] = [];
  for (const object of objects) {
    const live = await client.objects.read(namespace, refOf(object));
    // Only what tend applied for this action: a same-named object of someone else stays.
    if (!live || live.metadata?.labels?.[labels.action] !== actionLabel(action.ref)) continue;
    if (await client.objects.delete(namespace, refOf(object)))
      deleted.push(`${object.kind}/${object.metadata?.name}`);
  }
  ctx.log.info(deleted.length ? `deleted ${deleted.join(', ')}` : 'nothing to delete');
  return { state: 'not-ready', detail: { deleted } };
}
