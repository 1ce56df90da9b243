/**
 * The archive of a namespace taken right before the cleanup executor deletes it
 * (docs/cleanup.md#undo): every object of the kinds tend can re-create, stripped of what the API
 * server owns (uid, resourceVersion, status, managedFields, cluster IPs, generated names and
 * selectors), so that `tend restore` can apply them again. Read without entering the namespace:
 * nothing is stamped (a stamp would change the resourceVersion the DELETE's precondition names).
 * Any list that fails, but for a kind the cluster does not serve or Secrets the executor may not
 * list (both said in `notArchived`), fails the archive: a deletion is never preceded by an
 * archive that silently left a kind out.
 */
import { archivedKinds, type ArchivedObject, type KubernetesArchive } from '../../../cleanup/archive.js';
import { apiError, describeFailure } from './errors.js';
import type { RequestGate } from './gate.js';
import type { NamespaceInfo } from './namespace-info.js';
import { namespacedPath, type KubeObject } from './objects.js';
import type { List } from './wire.js';

/** Annotations the API server or its controllers write: re-created by them, never restored. */
const serverAnnotations = [
  /^deployment\.kubernetes\.io\//,
  /^pv\.kubernetes\.io\//,
  /^volume\.beta\.kubernetes\.io\//,
  /^volume\.kubernetes\.io\//,
  /^kubernetes\.io\/service-account\.uid$/,
];

/** Labels a Job's controller generates from its uid: a restored Job gets new ones. */
const jobGeneratedLabels = [
  'controller-uid',
  'job-name',
  'batch.kubernetes.io/controller-uid',
  'batch.kubernetes.io/job-name',
];

export class ArchiveCalls {
  constructor(private readonly gate: RequestGate) {}

  /** Every archived kind's objects in the namespace; Secrets whole only when `withSecrets`. */
  async collect(info: NamespaceInfo, withSecrets: boolean): Promise<KubernetesArchive> {
    const name = info.name;
    const notArchived: string[] = [];
    const lists = await Promise.all(
      archivedKinds.map(async (k) => ({
        ...k,
        items: await this.list(name, k.apiVersion, k.kind, notArchived),
      })),
    );
    const objects: ArchivedObject[] = [];
    const secrets: ArchivedObject[] = [];
    for (const { apiVersion, kind, items } of lists) {
      for (const item of items) {
        const stripped = strip(apiVersion, kind, item);
        if (!stripped) continue;
        if (kind === 'Secret')
          secrets.push(withSecrets ? stripped : { apiVersion, kind, metadata: stripped.metadata });
        else objects.push(stripped);
        if (kind === 'PersistentVolumeClaim') {
          notArchived.push(
            `the data in the volume of PersistentVolumeClaim ${stripped.metadata.name}: only its spec is archived; a restore binds a new, empty volume`,
          );
        }
      }
    }
    return {
      kind: 'kubernetes',
      namespace: {
        name,
        uid: info.uid ?? '',
        labels: withoutServerLabels(info.labels),
        annotations: { ...info.annotations },
      },
      objects,
      secrets,
      notArchived,
    };
  }

  private async list(namespace: string, apiVersion: string, kind: string, notArchived: string[]) {
    const what = `list ${kind}s in ${namespace} to archive them`;
    let path: string;
    try {
      path = await namespacedPath(this.gate, namespace, { apiVersion, kind }, what);
    } catch (error) {
      // A kind the cluster does not serve has nothing to archive.
      if ((error as { code?: string }).code === 'TEND_K8S_MANIFEST_INVALID') {
        notArchived.push(`${kind}: the cluster does not serve ${apiVersion}`);
        return [];
      }
      throw error;
    }
    try {
      const list = await this.gate.retry(
        what,
        () => this.gate.connection.request<List<KubeObject>>({ method: 'GET', path }),
        true,
      );
      return list.items;
    } catch (error) {
      const status = describeFailure(error).status;
      if (status === 404) {
        notArchived.push(`${kind}: the cluster does not serve ${apiVersion}`);
        return [];
      }
      // Listing Secrets reads them whole: an executor may be denied it on purpose (the
      // archive-secrets component grants it). Every other kind denied fails the archive.
      if (status === 403 && kind === 'Secret') {
        notArchived.push(
          'Secrets: the executor may not list Secrets (deploy/components/archive-secrets grants it), so none are archived, not even by name',
        );
        return [];
      }
      throw apiError(error, this.gate.describe(what, namespace));
    }
  }
}

function withoutServerLabels(values: Record<string, string>): Record<string, string> {
  const out = { ...values };
  delete out['kubernetes.io/metadata.name'];
  return out;
}

function withoutServerAnnotations(
  values: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (!values) return undefined;
  const out = Object.fromEntries(
    Object.entries(values).filter(([k]) => !serverAnnotations.some((p) => p.test(k))),
  );
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The object as it will be re-created, or undefined when it is not the namespace's to restore:
 * made by a controller (an owner reference: its owner makes it again), the namespace's own
 * `kube-root-ca.crt` and `default` ServiceAccount, a service-account token Secret.
 */
function strip(apiVersion: string, kind: string, item: KubeObject): ArchivedObject | undefined {
  const meta = item.metadata ?? {};
  const name = meta.name;
  if (!name) return undefined;
  if ((meta.ownerReferences?.length ?? 0) > 0) return undefined;
  if (kind === 'ConfigMap' && name === 'kube-root-ca.crt') return undefined;
  if (kind === 'ServiceAccount' && name === 'default') return undefined;
  if (kind === 'Secret' && item.type === 'kubernetes.io/service-account-token') return undefined;
  const labels = meta.labels && Object.keys(meta.labels).length > 0 ? { ...meta.labels } : undefined;
  const annotations = withoutServerAnnotations(meta.annotations);
  const body: Record<string, unknown> = { ...item };
  delete body.status;
  delete body.metadata;
  body.apiVersion = apiVersion;
  body.kind = kind;
  const spec =
    body.spec && typeof body.spec === 'object' ? { ...(body.spec as Record<string, unknown>) } : undefined;
  if (spec) {
    if (kind === 'Service') {
      delete spec.clusterIP;
      delete spec.clusterIPs;
    }
    if (kind === 'PersistentVolumeClaim') delete spec.volumeName;
    if (kind === 'Job' && spec.manualSelector !== true) {
      delete spec.selector;
      const template = spec.template as { metadata?: { labels?: Record<string, string> } } | undefined;
      if (template?.metadata?.labels) {
        const templateLabels = { ...template.metadata.labels };
        for (const label of jobGeneratedLabels) delete templateLabels[label];
        spec.template = { ...template, metadata: { ...template.metadata, labels: templateLabels } };
      }
    }
    body.spec = spec;
  }
  if (kind === 'Job' && labels) for (const label of jobGeneratedLabels) delete labels[label];
  return {
    ...body,
    apiVersion,
    kind,
    metadata: { name, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) },
  };
}
