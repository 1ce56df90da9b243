/**
 * What namespaces requested while they ran (the savings report): the inventory item's columns
 * hold what its last inventory saw; `namespace_requests` gets a row only when a namespace with
 * running pods is seen requesting something other than its item said before — so an inventory
 * of many unchanged namespaces writes no extra row.
 */
import type { Insertable, Transaction } from 'kysely';
import type { InventoryItem } from '../../../cleanup/protocol.js';
import type { Database, NamespaceRequestsTable } from '../schema.js';
import { chunks } from '../bulk.js';

/** The item's request columns: null when the executor could not tell. */
export function requestColumns(item: InventoryItem) {
  return {
    cpu_millicores: item.requests?.cpuMillicores ?? null,
    memory_bytes: item.requests?.memoryBytes ?? null,
    pods: item.requests?.pods ?? null,
  };
}

interface StoredItem {
  uid: string;
  cpu_millicores: number | null;
  memory_bytes: number | string | null;
  pods: number | null;
}

/** The history rows an inventory adds: items with running pods whose requests differ from the stored item's. */
export function requestChanges(
  input: { targetKey: string; items: InventoryItem[] },
  existing: ReadonlyMap<string, StoredItem>,
  at: string,
): Insertable<NamespaceRequestsTable>[] {
  const rows: Insertable<NamespaceRequestsTable>[] = [];
  for (const item of input.items) {
    const r = item.requests;
    if (!r || r.pods === 0) continue;
    const before = existing.get(item.namespaceName);
    if (
      before?.uid === item.uid &&
      before.pods === r.pods &&
      before.cpu_millicores === r.cpuMillicores &&
      before.memory_bytes !== null &&
      Number(before.memory_bytes) === r.memoryBytes
    )
      continue;
    rows.push({
      target_key: input.targetKey,
      namespace_name: item.namespaceName,
      uid: item.uid,
      observed_at: at,
      cpu_millicores: r.cpuMillicores,
      memory_bytes: r.memoryBytes,
      pods: r.pods,
    });
  }
  return rows;
}

export async function recordRequestChanges(
  trx: Transaction<Database>,
  rows: Insertable<NamespaceRequestsTable>[],
): Promise<void> {
  for (const chunk of chunks(rows)) {
    await trx
      .insertInto('namespace_requests')
      .values(chunk)
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}
