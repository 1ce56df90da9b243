/**
 * What executors report: their heartbeats (who serves which target), and the inventories of
 * their targets, reconciled against the registry (resources matched, namespaces nobody recorded,
 * recorded ones absent from a complete inventory marked missing). Read back for the status of
 * cleanup: executors and unrecorded namespaces.
 */
import type { Insertable, Kysely, Transaction } from 'kysely';
import type { InventoryItem } from '../../../cleanup/protocol.js';
import { writeAudit, type AuditInput } from './audit.js';
import { refreshEnvironmentStates } from './environments.js';
import type { CleanupInventoryItemsTable, Database } from '../schema.js';

/** `tend.dev/last-activity` as ISO UTC, or null when absent or unreadable. */
function activityAnnotation(value: string | undefined): string | null {
  if (!value) return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

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
}

export interface InventoryOutcome {
  recorded: number;
  markedMissing: number;
  unrecorded: number;
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
    targets: { targetKey: string; pluginName: string; description: string }[];
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
            last_seen_at: at,
          })
          .onConflict((oc) =>
            oc.columns(['executor_id', 'target_key']).doUpdateSet({
              plugin: t.pluginName,
              description: t.description,
              last_seen_at: at,
            }),
          )
          .execute();
      }
    });
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
   * are `recorded`; tend-labelled namespaces without a record become unrecorded namespaces
   * (audited when first seen, attached to the environment their annotations name); and, only
   * for a complete inventory, recorded `ready` resources of the target that are absent (or
   * present with another uid) become `missing`.
   */
  async storeInventory(input: InventoryInput): Promise<InventoryOutcome> {
    const at = input.now.toISOString();
    return this.db.transaction().execute(async (trx) => {
      await upsertInventory(trx, input, at);
      const resources = await recordedResources(trx, input.targetKey);
      const { rows, audits, recorded, unrecorded } = await reconcileItems(trx, input, resources, at);
      await upsertItems(trx, rows);
      let markedMissing = 0;
      if (input.complete) {
        const missing = await markAbsentMissing(trx, input, resources, at);
        markedMissing = missing.length;
        audits.push(...missing);
      }
      await writeAudit(trx, input.now, audits);
      return { recorded, markedMissing, unrecorded };
    });
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
      }),
    )
    .execute();
}

/** Recorded resources of this target that are not missing (local targets: every path of the host). */
async function recordedResources(trx: Transaction<Database>, targetKey: string) {
  return trx
    .selectFrom('resources')
    .innerJoin('environments', 'environments.id', 'resources.environment_id')
    .select([
      'resources.id',
      'resources.environment_id',
      'resources.namespace_name',
      'resources.namespace_uid',
      'resources.state',
      'resources.ownership',
      'environments.project',
      'environments.name',
    ])
    .where((eb) =>
      eb.or([
        eb('resources.target_key', '=', targetKey),
        // Local resources carry their path: `local/<hostId>/<path>`. (No LIKE: host ids may hold `_`.)
        eb(
          eb.fn('substr', ['resources.target_key', eb.lit(1), eb.lit(targetKey.length + 1)]),
          '=',
          `${targetKey}/`,
        ),
      ]),
    )
    .where('resources.state', '!=', 'missing')
    .execute();
}

type RecordedResource = Awaited<ReturnType<typeof recordedResources>>[number];

/**
 * The stored item of each listed namespace, recorded or not (an unrecorded one attached to the
 * environment its annotations name, and audited when first seen or when its uid changed).
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
        .select(['namespace_name', 'recorded', 'uid', 'first_seen_at'])
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
    const project = item.annotations['tend.dev/project'] ?? null;
    const environment = item.annotations['tend.dev/environment'] ?? null;
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
            message:
              'a namespace labelled managed-by=tend that no tend command recorded: shown, never deleted',
          },
        });
      }
    }
    rows.push({
      target_key: targetKey,
      namespace_name: item.namespaceName,
      uid: item.uid,
      resource_version: item.resourceVersion,
      phase: item.phase,
      managed_by_tend: item.labels['app.kubernetes.io/managed-by'] === 'tend' ? 1 : 0,
      project,
      environment,
      role: item.annotations['tend.dev/role'] ?? null,
      adopted: item.annotations['tend.dev/adopted'] === 'true' ? 1 : 0,
      last_activity_at: activityAnnotation(item.annotations['tend.dev/last-activity']),
      labels: JSON.stringify(item.labels),
      annotations: JSON.stringify(item.annotations),
      recorded: isRecorded ? 1 : 0,
      environment_id: environmentId,
      first_seen_at:
        existing.get(item.namespaceName)?.uid === item.uid
          ? existing.get(item.namespaceName)!.first_seen_at
          : at,
      seen_at: at,
    });
  }
  return { rows, audits, recorded, unrecorded };
}

async function upsertItems(trx: Transaction<Database>, rows: Insertable<CleanupInventoryItemsTable>[]) {
  for (let i = 0; i < rows.length; i += 500) {
    await trx
      .insertInto('cleanup_inventory_items')
      .values(rows.slice(i, i + 500))
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
          labels: eb.ref('excluded.labels'),
          annotations: eb.ref('excluded.annotations'),
          recorded: eb.ref('excluded.recorded'),
          environment_id: eb.ref('excluded.environment_id'),
          first_seen_at: eb.ref('excluded.first_seen_at'),
          seen_at: eb.ref('excluded.seen_at'),
        })),
      )
      .execute();
  }
}

/**
 * What only a complete inventory proves: items not listed this time are dropped, and recorded
 * `ready` resources it lacks (or lists with another uid) become missing, their environments
 * `cleaned` if nothing else of theirs is left. Returns the audit entry of each resource marked.
 */
async function markAbsentMissing(
  trx: Transaction<Database>,
  input: InventoryInput,
  resources: RecordedResource[],
  at: string,
): Promise<AuditInput[]> {
  const { targetKey } = input;
  await trx
    .deleteFrom('cleanup_inventory_items')
    .where('target_key', '=', targetKey)
    .where('seen_at', '<', at)
    .execute();
  const present = new Map(input.items.map((i) => [i.namespaceName, i.uid]));
  const gone = resources.filter((r) => {
    if (r.state !== 'ready') return false;
    // The inventory lists only namespaces labelled managed-by=tend: an adopted (or unknown)
    // namespace is never in it, so its absence proves nothing.
    if (r.ownership !== 'owned') return false;
    const uid = present.get(r.namespace_name);
    return uid === undefined || (r.namespace_uid !== null && r.namespace_uid !== uid);
  });
  for (let i = 0; i < gone.length; i += 500) {
    await trx
      .updateTable('resources')
      .set({ state: 'missing', missing_since: at, last_cause: 'inventory', last_seen_at: at })
      .where(
        'id',
        'in',
        gone.slice(i, i + 500).map((r) => r.id),
      )
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
