/**
 * A recorded namespace a tend command reported `missing` that an executor then lists with the
 * same uid was never gone: a uid is never reused, and a command reports `missing` only once the
 * namespace is gone. Such a report — a stale one, or one forged with an ingest token to drop a
 * record from the holders of a shared namespace, so that a protected or busy record stops
 * keeping it — is contradicted by what the cluster says: the resource is `ready` again and its
 * environment active, audited `resource-restored`. What an inventory or a cleanup job marked
 * missing stays missing: a namespace deleted by a job is still listed, terminating, for a while.
 */
import type { Transaction } from 'kysely';
import type { InventoryItem } from '../../../cleanup/protocol.js';
import type { AuditInput } from './audit.js';
import { onTarget, resourcesWithEnvironment } from './resource-targets.js';
import type { Database } from '../schema.js';
import { chunks } from '../bulk.js';

/** Causes of a `missing` that only a tend command's own report gives. */
const reportedByCommand = ['created', 'observed', 'deleted'];

export async function restoreContradictedMissing(
  trx: Transaction<Database>,
  input: { targetKey: string; items: InventoryItem[]; actor: string },
  at: string,
): Promise<AuditInput[]> {
  const listed = new Map<string, string>();
  for (const item of input.items)
    if (item.uid) listed.set(`${item.namespaceName}\u0000${item.uid}`, item.uid);
  if (listed.size === 0) return [];
  const uids = [...new Set(listed.values())];
  const found: {
    id: string;
    environment_id: string;
    namespace_name: string;
    namespace_uid: string | null;
    project: string;
    name: string;
    state: string;
  }[] = [];
  for (const uidChunk of chunks(uids)) {
    found.push(
      ...(await resourcesWithEnvironment(trx)
        .select('environments.state')
        .where('resources.state', '=', 'missing')
        .where('resources.last_cause', 'in', reportedByCommand)
        .where('resources.role', '!=', 'system')
        .where('resources.namespace_uid', 'in', uidChunk)
        .where((eb) => onTarget(eb, input.targetKey))
        .execute()),
    );
  }
  const contradicted = found.filter((r) => listed.has(`${r.namespace_name}\u0000${r.namespace_uid}`));
  if (contradicted.length === 0) return [];
  for (const ids of chunks(contradicted.map((r) => r.id))) {
    await trx
      .updateTable('resources')
      .set({ state: 'ready', missing_since: null, last_cause: 'inventory', last_seen_at: at })
      .where('id', 'in', ids)
      .execute();
  }
  const cleaned = [
    ...new Set(contradicted.filter((r) => r.state === 'cleaned').map((r) => r.environment_id)),
  ];
  for (const ids of chunks(cleaned)) {
    await trx
      .updateTable('environments')
      .set({ state: 'active', cleaned_at: null, updated_at: at })
      .where('id', 'in', ids)
      .where('state', '=', 'cleaned')
      .execute();
  }
  return contradicted.map((r) => ({
    actor: input.actor,
    action: 'resource-restored',
    environmentId: r.environment_id,
    detail: {
      project: r.project,
      environment: r.name,
      namespace: r.namespace_name,
      uid: r.namespace_uid,
      targetKey: input.targetKey,
      message:
        'reported missing by a tend command, but listed with the same uid by the executor: it was never gone',
    },
  }));
}
