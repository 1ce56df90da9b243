/**
 * What a complete inventory lacks: the recorded resources it proves gone, those left to the
 * delete job that began on them, and when the absences are too many to believe (the inventory
 * is then held back as suspect, nothing of it applied).
 */
import type { Transaction } from 'kysely';
import type { InventoryItem } from '../../../cleanup/protocol.js';
import { chunks } from '../bulk.js';
import type { Database } from '../schema.js';
import { writeAudit } from './audit.js';
import { onTarget, resourcesWithEnvironment } from './resource-targets.js';

/** An inventory as an executor reported it, with who reported it and when. */
export interface InventoryInput {
  executorId: string;
  actor: string;
  targetKey: string;
  pluginName: string;
  complete: boolean;
  error: string | null;
  items: InventoryItem[];
  now: Date;
  /** The server's clock less the target's when the inventory arrived; null: no time attested. */
  clockOffsetMs: number | null;
}

/** Recorded resources of this target that are not missing (local targets: every path of the host). */
export async function recordedResources(trx: Transaction<Database>, targetKey: string) {
  return resourcesWithEnvironment(trx)
    .select(['resources.state', 'resources.ownership'])
    .where((eb) => onTarget(eb, targetKey))
    .where('resources.state', '!=', 'missing')
    .execute();
}

export type RecordedResource = Awaited<ReturnType<typeof recordedResources>>[number];

export interface Suspicion {
  reason: string;
  gone: number;
  recorded: number;
}

/**
 * At most this many recorded resources of a target may turn missing in one inventory: more is
 * what a list that only looks complete does (an API server answering an empty or shortened
 * page), not what people do by hand between two passes.
 */
export const suspectBound = { atLeast: 2, share: 0.2 };

/**
 * Why a complete inventory that would mark `gone` of the target's `recorded` (ready, owned)
 * resources missing is suspect, or null: more than max(2, 20%) of them at once, or every one of
 * them with an empty list.
 */
export function suspicionOf(gone: number, recorded: number, listed: number): string | null {
  const bound = Math.max(suspectBound.atLeast, Math.floor(recorded * suspectBound.share));
  const what = `${gone} of ${recorded} recorded resources would turn missing at once`;
  if (gone > 0 && listed === 0) return `the list is empty: ${what}`;
  if (gone > bound) return `${what} (more than ${bound}, max(2, 20%))`;
  return null;
}

/**
 * What a complete inventory proves gone, or why it is suspect. A resource a delete job of tend's
 * has begun on is that job's to account for: the job reports it done (gone by cleanup), on its
 * retry too. Marked missing by a list, a job that failed after its DELETE went out would be
 * cancelled on its retry; counted as unexpected, a few such jobs would make every list suspect
 * and stop every job on the target, theirs too.
 */
export async function judgeAbsences(
  trx: Transaction<Database>,
  input: InventoryInput,
  resources: RecordedResource[],
): Promise<{ gone: RecordedResource[]; suspicion?: Suspicion }> {
  const absent = absentResources(input, resources);
  const deleting = await beingDeleted(trx, absent);
  const gone = absent.filter((r) => !deleting.has(r.id));
  // Only what an earlier list showed can vanish from one: a record no inventory ever confirmed
  // (a forged one, say) is absent, not gone, and must not make a list suspect — else one
  // project's records could stop every project's cleanup on the target.
  const confirmed = await confirmedBefore(trx, input.targetKey);
  const wasListed = (r: RecordedResource) =>
    r.namespace_uid !== null && confirmed.get(r.namespace_name) === r.namespace_uid;
  const owned = resources.filter((r) => eligible(r) && wasListed(r)).length;
  const unexpected = gone.filter(wasListed).length;
  const reason = suspicionOf(unexpected, owned, input.items.length);
  return reason ? { gone, suspicion: { reason, gone: unexpected, recorded: owned } } : { gone };
}

/**
 * What a complete inventory can prove gone: a `ready` resource it lacks (or lists with another
 * uid). An inventory lists only what is marked as tend's: an adopted (or unknown) namespace need
 * not be in it, so its absence proves nothing.
 */
const eligible = (r: RecordedResource) => r.state === 'ready' && r.ownership === 'owned';

/** The uid each namespace had in the target's earlier inventories (the items kept from them). */
async function confirmedBefore(trx: Transaction<Database>, targetKey: string): Promise<Map<string, string>> {
  const rows = await trx
    .selectFrom('cleanup_inventory_items')
    .select(['namespace_name', 'uid'])
    .where('target_key', '=', targetKey)
    .execute();
  return new Map(rows.map((r) => [r.namespace_name, r.uid]));
}

/**
 * The resources an open delete job has begun on: executing now, or planned again after an
 * attempt (a failure waiting for its retry, a lease that expired) — the DELETE may have gone out.
 */
async function beingDeleted(trx: Transaction<Database>, resources: RecordedResource[]): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const chunk of chunks(resources.map((r) => r.id))) {
    const rows = await trx
      .selectFrom('cleanup_jobs')
      .select('resource_id')
      .where('state', 'in', ['planned', 'executing'])
      .where('attempts', '>', 0)
      .where('action', '=', 'delete')
      .where('resource_id', 'in', chunk)
      .execute();
    for (const row of rows) if (row.resource_id) ids.add(row.resource_id);
  }
  return ids;
}

function absentResources(input: InventoryInput, resources: RecordedResource[]): RecordedResource[] {
  const present = new Map(input.items.map((i) => [i.namespaceName, i.uid]));
  return resources.filter((r) => {
    if (!eligible(r)) return false;
    const uid = present.get(r.namespace_name);
    return uid === undefined || (r.namespace_uid !== null && r.namespace_uid !== uid);
  });
}

/**
 * A suspect inventory applies nothing: no item stored, nothing marked missing. Its row says the
 * target was not listed completely (so nothing is planned there) and why; audited when the
 * target turns suspect, not again each pass while it stays so.
 */
export async function holdBack(
  trx: Transaction<Database>,
  input: InventoryInput,
  suspicion: Suspicion,
  at: string,
): Promise<void> {
  const previous = await trx
    .selectFrom('cleanup_inventories')
    .select(['last_complete_at', 'suspect_since'])
    .where('target_key', '=', input.targetKey)
    .executeTakeFirst();
  const row = {
    plugin: input.pluginName,
    executor_id: input.executorId,
    received_at: at,
    complete: 0,
    error: `held back as suspect: ${suspicion.reason}`,
    item_count: input.items.length,
    last_complete_at: previous?.last_complete_at ?? null,
    suspect_reason: suspicion.reason,
    suspect_since: previous?.suspect_since ?? at,
    suspect_missing: suspicion.gone,
    suspect_recorded: suspicion.recorded,
    clock_offset_ms: input.clockOffsetMs,
  };
  await trx
    .insertInto('cleanup_inventories')
    .values({ target_key: input.targetKey, ...row })
    .onConflict((oc) => oc.column('target_key').doUpdateSet(row))
    .execute();
  if (previous?.suspect_since) return;
  await writeAudit(trx, input.now, [
    {
      actor: input.actor,
      action: 'inventory-suspect',
      environmentId: null,
      detail: {
        targetKey: input.targetKey,
        plugin: input.pluginName,
        listed: input.items.length,
        wouldMarkMissing: suspicion.gone,
        recorded: suspicion.recorded,
        message: `inventory held back, nothing applied: ${suspicion.reason}`,
      },
    },
  ]);
}
