/**
 * Restoring an environment from its archive (docs/cleanup.md#undo), for `tend restore` (the
 * provider's `restoreEnvironment`) and for a restore job an executor runs (the cleanup handler
 * `restore`): re-creates the namespace through the namespace gate — so it is `created` by the
 * session, owned and recorded like any namespace a command creates — and applies every archived
 * object into it, in dependency order (ServiceAccounts, ConfigMaps and Secrets before the
 * workloads that use them). A namespace that exists again is never restored into: it is
 * someone's now (a deploy since the cleanup, or another project's); `--into` names a new one. An
 * object the cluster refuses is reported with the cluster's reason and the rest go on.
 */
import { secretHasContent, type ArchivedObject } from '../../cleanup/archive.js';
import { inInstallOrder } from './install-order.js';
import { TendError } from '../../errors.js';
import type { PluginContext, RestoreRequest, RestoreResult } from '../../plugin/types.js';
import type { KubeClient, KubeObject } from './client/index.js';
import { clientFor } from './provider.js';

/** `tend restore`: into the namespace of the command's environment. */
export async function restoreEnvironment(
  ctx: PluginContext,
  request: RestoreRequest,
): Promise<RestoreResult> {
  return restoreInto(await clientFor(ctx), request, ctx.signal);
}

/** Into the client's app namespace, which must not exist. */
export async function restoreInto(
  client: KubeClient,
  request: RestoreRequest,
  signal: AbortSignal,
): Promise<RestoreResult> {
  const archive = request.archive;
  if (archive.kind !== 'kubernetes') {
    throw new TendError(
      'TEND_ARCHIVE',
      `the archive is of a ${archive.kind} environment, not a Kubernetes namespace`,
    );
  }
  const namespace = client.settings.appNamespace;
  const refuse = (why: string) =>
    new TendError(
      'TEND_ARCHIVE',
      `namespace ${namespace} ${why}: a restore never writes into a namespace it did not create; restore into a new one (tend restore --into <new-namespace>, or "into" of the API)`,
      { detail: { namespace } },
    );
  const existing = await client.namespaces.observe(namespace, false);
  if (existing) throw refuse(`exists again (uid ${existing.uid ?? '?'}, ${existing.state})`);
  const { created } = await client.namespaces.ensure(namespace);
  // Created by another command between the read and the create (a deploy racing the restore).
  if (!created) throw refuse('was created by another command while this restore ran');
  const restored: string[] = [];
  const notRestored: RestoreResult['notRestored'] = [];
  const missing = new Set(request.missingSecrets);
  const secrets = archive.secrets.filter((s) => !missing.has(s.metadata.name) && secretHasContent(s));
  for (const s of archive.secrets) {
    if (!secrets.includes(s)) {
      notRestored.push({
        what: `Secret/${s.metadata.name}`,
        why: 'its content was not archived (the server had no --archive-key-file): create it again by hand',
      });
    }
  }
  for (const object of inInstallOrder<ArchivedObject>([...archive.objects, ...secrets])) {
    const what = `${object.kind}/${object.metadata.name}`;
    try {
      await client.objects.apply(namespace, object as unknown as KubeObject);
      restored.push(what);
    } catch (error) {
      if (signal.aborted) throw error;
      notRestored.push({ what, why: `the cluster refused it: ${(error as Error).message}` });
    }
  }
  for (const line of archive.notArchived)
    notRestored.push({ what: line.split(':')[0]!, why: `not archived: ${line}` });
  return { namespace, restored, notRestored };
}
