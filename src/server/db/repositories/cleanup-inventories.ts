/**
 * What executors report: their heartbeats (who serves which target), and the inventories of
 * their targets, reconciled against the registry (resources matched, namespaces nobody recorded,
 * recorded ones absent from a complete inventory marked missing). Read back for the status of
 * cleanup: executors and unrecorded namespaces.
 */
import type { Insertable, Kysely, Transaction } from 'kysely';
import { writeAudit, type AuditInput } from './audit.js';
import { refreshEnvironmentStates } from './environments.js';
import { restoreContradictedMissing } from './contradicted-missing.js';
import { recordRequestChanges, requestChanges, requestColumns } from './namespace-requests.js';
import type { CleanupInventoryItemsTable, Database } from '../schema.js';
import { chunks } from '../bulk.js';
import {
  holdBack,
  judgeAbsences,
  recordedResources,
  type InventoryInput,
  type RecordedResource,
} from './inventory-absences.js';

export interface InventoryOutcome {
  recorded: number;
  markedMissing: number;
  unrecorded: number;
  /** Why the inventory was held back (nothing of it applied). */
  suspect?: string;
}

export class CleanupInventoryRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  // ── executors ────────────────────────────────────────────────────────────────────────────

  async heartbeat(input: {
    executorId: string;
    name: string;
    kind: string;
    version: string;
    tokenName: string | null;
    targets: { targetKey: string; pluginName: string; description: string; actions?: readonly string[] }[];
    now: Date;
  }): Promise<void> {
    const at = input.now.toISOString();
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('cleanup_executors')
        .values({
          id: input.executorId,
          name: input.name,
          kind: input.kind,
          version: input.version,
          token_name: input.tokenName,
          first_seen_at: at,
          last_seen_at: at,
        })
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({
            name: input.name,
            kind: input.kind,
            version: input.version,
            token_name: input.tokenName,
            last_seen_at: at,
          }),
        )
        .execute();
      for (const t of input.targets) {
        await trx
          .insertInto('cleanup_executor_targets')
          .values({
            executor_id: input.executorId,
            target_key: t.targetKey,
            plugin: t.pluginName,
            description: t.description,
            actions: t.actions ? JSON.stringify(t.actions) : null,
            last_seen_at: at,
          })
          .onConflict((oc) =>
            oc.columns(['executor_id', 'target_key']).doUpdateSet({
              plugin: t.pluginName,
              description: t.description,
              actions: t.actions ? JSON.stringify(t.actions) : null,
              last_seen_at: at,
            }),
          )
          .execute();
      }
    });
  }

  /**
   * Whether an executor that served the target said it runs `action` there for the plugin (one
   * that said nothing runs every action but restore).
   */
  async someExecutorRuns(targetKey: string, plugin: string, action: string): Promise<boolean> {
    const rows = await this.reader
      .selectFrom('cleanup_executor_targets')
      .select('actions')
      .where('target_key', '=', targetKey)
      .where('plugin', '=', plugin)
      .execute();
    return rows.some((r) =>
      r.actions === null ? action !== 'restore' : (JSON.parse(r.actions) as string[]).includes(action),
    );
  }

  async executors() {
    return this.reader
      .selectFrom('cleanup_executor_targets as t')
      .innerJoin('cleanup_executors as e', 'e.id', 't.executor_id')
      .select([
        'e.id',
        'e.name',
        'e.kind',
        'e.version',
        't.target_key',
        't.plugin',
        't.description',
        't.last_seen_at',
      ])
      .orderBy('t.target_key')
      .orderBy('t.last_seen_at', 'desc')
      .execute();
  }

  // ── inventories ──────────────────────────────────────────────────────────────────────────

  /**
   * Stores an inventory and reconciles it with the registry: items matching a recorded resource
   * are `recorded`; items marked as tend's without a record become unrecorded namespaces
   * (audited when first seen, attached to the environment they are marked with); and, only
   * for a complete inventory, recorded `ready` resources of the target that are absent (or
   * present with another uid) become `missing`.
   */
  async storeInventory(input: InventoryInput): Promise<InventoryOutcome> {
    const at = input.now.toISOString();
    return this.db.transaction().execute(async (trx) => {
      const resources = await recordedResources(trx, input.targetKey);
      const { gone, suspicion } = input.complete
        ? await judgeAbsences(trx, input, resources)
        : { gone: [], suspicion: undefined };
      if (suspicion) {
        await holdBack(trx, input, suspicion, at);
        return { recorded: 0, markedMissing: 0, unrecorded: 0, suspect: suspicion.reason };
      }
      await upsertInventory(trx, input, at);
      // What a list shows is there, complete list or not: first, what a command wrongly said is gone.
      const restored = await restoreContradictedMissing(trx, input, at);
      const matched = restored.length > 0 ? await recordedResources(trx, input.targetKey) : resources;
      const { rows, audits, recorded, unrecorded, requestRows } = await reconcileItems(
        trx,
        input,
        matched,
        at,
      );
      audits.unshift(...restored);
      await upsertItems(trx, rows);
      await recordRequestChanges(trx, requestRows);
      if (input.complete) audits.push(...(await markAbsentMissing(trx, input, gone, at)));
      await writeAudit(trx, input.now, audits);
      return { recorded, markedMissing: gone.length, unrecorded };
    });
  }

  /** Targets whose last complete inventory was held back as suspect. */
  async suspectInventories() {
    return this.reader
      .selectFrom('cleanup_inventories')
      .select([
        'target_key',
        'plugin',
        'executor_id',
        'received_at',
        'suspect_reason',
        'suspect_since',
        'suspect_missing',
        'suspect_recorded',
      ])
      .where('suspect_reason', 'is not', null)
      .orderBy('target_key')
      .execute();
  }

  /**
   * When the target's last applied complete inventory was taken (ISO time), if that was after
   * `since` and it did not list the namespace with this uid; else undefined (not listed
   * completely since, or listed).
   */
  async lackedSince(
    o: { targetKey: string; namespaceName: string; uid: string },
    since: string,
  ): Promise<string | undefined> {
    const inventory = await this.reader
      .selectFrom('cleanup_inventories')
      .select('last_complete_at')
      .where('target_key', '=', o.targetKey)
      .executeTakeFirst();
    const at = inventory?.last_complete_at;
    if (!at || !(Date.parse(at) > Date.parse(since))) return undefined;
    const item = await this.reader
      .selectFrom('cleanup_inventory_items')
      .select('uid')
      .where('target_key', '=', o.targetKey)
      .where('namespace_name', '=', o.namespaceName)
      .executeTakeFirst();
    return item?.uid === o.uid ? undefined : at;
  }

  /** What the target's last inventory said of the server's clock (null: no time attested, or none yet). */
  async clockOffset(targetKey: string): Promise<number | null> {
    const row = await this.reader
      .selectFrom('cleanup_inventories')
      .select('clock_offset_ms')
      .where('target_key', '=', targetKey)
      .executeTakeFirst();
    return row?.clock_offset_ms == null ? null : Number(row.clock_offset_ms);
  }

  async unrecordedNamespaces(limit = 200) {
    return this.reader
      .selectFrom('cleanup_inventory_items')
      .select([
        'target_key',
        'namespace_name',
        'uid',
        'phase',
        'project',
        'environment',
        'environment_id',
        'detail',
        'first_seen_at',
        'seen_at',
      ])
      .where('recorded', '=', 0)
      .where('managed_by_tend', '=', 1)
      .orderBy('target_key')
      .orderBy('namespace_name')
      .limit(limit)
      .execute();
  }
}

/** The inventory's own row: when it came, from whom, complete or not, and its last complete time. */
async function upsertInventory(trx: Transaction<Database>, input: InventoryInput, at: string): Promise<void> {
  const previous = await trx
    .selectFrom('cleanup_inventories')
    .select('last_complete_at')
    .where('target_key', '=', input.targetKey)
    .executeTakeFirst();
  await trx
    .insertInto('cleanup_inventories')
    .values({
      target_key: input.targetKey,
      plugin: input.pluginName,
      executor_id: input.executorId,
      received_at: at,
      complete: input.complete ? 1 : 0,
      error: input.error,
      item_count: input.items.length,
      last_complete_at: input.complete ? at : (previous?.last_complete_at ?? null),
      clock_offset_ms: input.clockOffsetMs,
      ...noSuspicion,
    })
    .onConflict((oc) =>
      oc.column('target_key').doUpdateSet({
        plugin: input.pluginName,
        executor_id: input.executorId,
        received_at: at,
        complete: input.complete ? 1 : 0,
        error: input.error,
        item_count: input.items.length,
        last_complete_at: input.complete ? at : (previous?.last_complete_at ?? null),
        clock_offset_ms: input.clockOffsetMs,
        // An incomplete inventory neither confirms nor clears a suspicion; an applied one clears it.
        ...(input.complete ? noSuspicion : {}),
      }),
    )
    .execute();
}

const noSuspicion = {
  suspect_reason: null,
  suspect_since: null,
  suspect_missing: null,
  suspect_recorded: null,
};

/**
 * The stored item of each listed namespace, recorded or not (an unrecorded one attached to the
 * environment it is marked with, and audited when first seen or when its uid changed).
 */
async function reconcileItems(
  trx: Transaction<Database>,
  input: InventoryInput,
  resources: RecordedResource[],
  at: string,
): Promise<{
  rows: Insertable<CleanupInventoryItemsTable>[];
  audits: AuditInput[];
  recorded: number;
  unrecorded: number;
  requestRows: ReturnType<typeof requestChanges>;
}> {
  const { targetKey } = input;
  const byName = new Map<string, RecordedResource[]>();
  for (const r of resources) {
    const list = byName.get(r.namespace_name) ?? [];
    list.push(r);
    byName.set(r.namespace_name, list);
  }
  const existing = new Map(
    (
      await trx
        .selectFrom('cleanup_inventory_items')
        .select([
          'namespace_name',
          'recorded',
          'uid',
          'first_seen_at',
          'cpu_millicores',
          'memory_bytes',
          'pods',
        ])
        .where('target_key', '=', targetKey)
        .execute()
    ).map((r) => [r.namespace_name, r]),
  );

  const audits: AuditInput[] = [];
  let recorded = 0;
  let unrecorded = 0;
  const rows: Insertable<CleanupInventoryItemsTable>[] = [];
  for (const item of input.items) {
    const matches = (byName.get(item.namespaceName) ?? []).filter(
      (r) => r.namespace_uid === null || r.namespace_uid === item.uid,
    );
    const isRecorded = matches.length > 0;
    const project = item.project ?? null;
    const environment = item.environment ?? null;
    let environmentId: string | null = null;
    if (isRecorded) recorded++;
    else {
      unrecorded++;
      if (project && environment) {
        const env = await trx
          .selectFrom('environments')
          .select('id')
          .where('project', '=', project)
          .where('name', '=', environment)
          .where('namespace', '=', item.namespaceName)
          .executeTakeFirst();
        environmentId = env?.id ?? null;
      }
      const before = existing.get(item.namespaceName);
      if (!before || before.recorded === 1 || before.uid !== item.uid) {
        audits.push({
          actor: input.actor,
          action: 'unrecorded-namespace',
          environmentId,
          detail: {
            project,
            environment,
            namespace: item.namespaceName,
            uid: item.uid,
            targetKey,
            message: 'marked as tend’s, but no tend command recorded it: shown, never deleted',
          },
        });
      }
    }
    rows.push({
      target_key: targetKey,
      namespace_name: item.namespaceName,
      uid: item.uid,
      resource_version: item.version,
      phase: item.state,
      managed_by_tend: item.managedByTend ? 1 : 0,
      project,
      environment,
      role: item.role ?? null,
      adopted: item.adopted ? 1 : 0,
      last_activity_at: item.lastActivityAt ? new Date(item.lastActivityAt).toISOString() : null,
      created_at: item.createdAt ? new Date(item.createdAt).toISOString() : null,
      detail: item.detail && Object.keys(item.detail).length > 0 ? JSON.stringify(item.detail) : null,
      recorded: isRecorded ? 1 : 0,
      environment_id: environmentId,
      first_seen_at:
        existing.get(item.namespaceName)?.uid === item.uid
          ? existing.get(item.namespaceName)!.first_seen_at
          : at,
      seen_at: at,
      ...requestColumns(item),
    });
  }
  return { rows, audits, recorded, unrecorded, requestRows: requestChanges(input, existing, at) };
}

async function upsertItems(trx: Transaction<Database>, rows: Insertable<CleanupInventoryItemsTable>[]) {
  for (const chunk of chunks(rows)) {
    await trx
      .insertInto('cleanup_inventory_items')
      .values(chunk)
      .onConflict((oc) =>
        oc.columns(['target_key', 'namespace_name']).doUpdateSet((eb) => ({
          uid: eb.ref('excluded.uid'),
          resource_version: eb.ref('excluded.resource_version'),
          phase: eb.ref('excluded.phase'),
          managed_by_tend: eb.ref('excluded.managed_by_tend'),
          project: eb.ref('excluded.project'),
          environment: eb.ref('excluded.environment'),
          role: eb.ref('excluded.role'),
          adopted: eb.ref('excluded.adopted'),
          last_activity_at: eb.ref('excluded.last_activity_at'),
          created_at: eb.ref('excluded.created_at'),
          detail: eb.ref('excluded.detail'),
          recorded: eb.ref('excluded.recorded'),
          environment_id: eb.ref('excluded.environment_id'),
          first_seen_at: eb.ref('excluded.first_seen_at'),
          seen_at: eb.ref('excluded.seen_at'),
          cpu_millicores: eb.ref('excluded.cpu_millicores'),
          memory_bytes: eb.ref('excluded.memory_bytes'),
          pods: eb.ref('excluded.pods'),
        })),
      )
      .execute();
  }
}

/**
 * What only a complete inventory proves: items not listed this time are dropped, and the
 * recorded resources it lacks (`gone`) become missing, their environments `cleaned` if nothing
 * else of theirs is left. Returns the audit entry of each resource marked.
 */
async function markAbsentMissing(
  trx: Transaction<Database>,
  input: InventoryInput,
  gone: RecordedResource[],
  at: string,
): Promise<AuditInput[]> {
  const { targetKey } = input;
  await trx
    .deleteFrom('cleanup_inventory_items')
    .where('target_key', '=', targetKey)
    .where('seen_at', '<', at)
    .execute();
  for (const ids of chunks(gone.map((r) => r.id))) {
    await trx
      .updateTable('resources')
      .set({ state: 'missing', missing_since: at, last_cause: 'inventory', last_seen_at: at })
      .where('id', 'in', ids)
      .execute();
  }
  await refreshEnvironmentStates(trx, [...new Set(gone.map((r) => r.environment_id))], at);
  return gone.map((r) => ({
    actor: input.actor,
    action: 'resource-missing',
    environmentId: r.environment_id,
    detail: {
      project: r.project,
      environment: r.name,
      namespace: r.namespace_name,
      uid: r.namespace_uid,
      targetKey,
      message: 'recorded, but absent from a complete inventory',
    },
  }));
}
