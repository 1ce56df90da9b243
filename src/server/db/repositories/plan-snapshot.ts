/**
 * What the planner's snapshot reads (cleanup/snapshot.ts makes the snapshot of the rows): a
 * handful of narrow queries — only the columns the planner reads, no JSON parsed, resources
 * joined with their inventory item on its primary key — and the change log (`cleanup_changes`,
 * filled by triggers on SQLite) that lets a pass re-read only the environments changed since the
 * last one.
 */
import { sql, type Kysely } from 'kysely';
import { readOnlyCommands } from '../../../events/catalog.js';
import type { Database } from '../schema.js';
import { environmentPolicyColumns } from './registry.js';

/** Bits of the `flags` column of the resource query. */
export const resourceFlags = {
  system: 1,
  owned: 2,
  adopted: 4,
  inInventory: 8,
  itemUidMatches: 16,
  itemManagedByTend: 32,
  itemAnnotationsMatch: 64,
  itemSystem: 128,
  itemAdopted: 256,
  itemEarlierGeneration: 512,
} as const;

/**
 * The active environments with a policy (`all`), the one named, or those among these ids; the
 * caller checks state and policy of the rows read by id.
 */
export type EnvironmentScope = 'all' | { id: string } | { ids: readonly string[] };

/** An owned resource `r` whose claim window is recorded, and whose item `i` says when it was created. */
const createdAndClaimed = sql`r.ownership = 'owned' and i.created_at is not null and r.claim_received_at is not null`;

/** Resources `r` with their environment `e` and what the inventory of their target saw of their namespace `i`. */
export function resourcesWithItems(db: Kysely<Database>) {
  return db
    .selectFrom('resources as r')
    .innerJoin('environments as e', 'e.id', 'r.environment_id')
    .leftJoin('cleanup_inventory_items as i', (join) =>
      join.onRef('i.target_key', '=', 'r.target_key').onRef('i.namespace_name', '=', 'r.namespace_name'),
    );
}

/** Running sessions that were heard from since `sinceIso`, but read-only commands (`tend logs -f` holds nothing). */
export function runningSessionsSince(db: Kysely<Database>, sinceIso: string) {
  return db
    .selectFrom('sessions as s')
    .where('s.status', '=', 'running')
    .where('s.last_event_at', '>=', sinceIso)
    .where((eb) => eb.or([eb('s.command', 'is', null), eb('s.command', 'not in', [...readOnlyCommands])]));
}

/** The environments of `scope` and their resources that are not missing, as rows. */
export async function readEnvironmentRows(db: Kysely<Database>, scope: EnvironmentScope) {
  let envQuery = db
    .selectFrom('environments')
    .select([
      'id',
      'project',
      'name',
      'namespace',
      'protected',
      'keep_alive_until',
      ...environmentPolicyColumns,
      'last_activity_at',
      'last_activity_command',
      'last_activity_user',
      'last_activity_type',
      'state',
      'paused_by',
    ]);

  // Each resource with what the inventory of its target saw of its namespace, in one query (a
  // join on the inventory's primary key). What the planner compares — uid, annotations, role,
  // adoption — is compared here and returned as bits of one integer: strings are what makes
  // reading 200,000 rows slow, not the rows. Activity columns come back only when later than the
  // environment's (the only case where they matter), so they are mostly null.
  const flags = resourceFlags;
  let resourceQuery = resourcesWithItems(db)
    .select([
      'r.id',
      'r.environment_id',
      'r.plugin',
      'r.target_key',
      'r.namespace_name',
      'r.namespace_uid',
      sql<number>`(case when r.role = 'system' then ${sql.lit(flags.system)} else 0 end)
        + (case r.ownership when 'owned' then ${sql.lit(flags.owned)} when 'adopted' then ${sql.lit(flags.adopted)} else 0 end)
        + (case when i.uid is null then 0 else ${sql.lit(flags.inInventory)} end)
        + (case when i.uid = r.namespace_uid then ${sql.lit(flags.itemUidMatches)} else 0 end)
        + (case when i.managed_by_tend = 1 then ${sql.lit(flags.itemManagedByTend)} else 0 end)
        + (case when i.project = e.project and i.environment = e.name then ${sql.lit(flags.itemAnnotationsMatch)} else 0 end)
        + (case when i.role = 'system' then ${sql.lit(flags.itemSystem)} else 0 end)
        + (case when i.adopted = 1 then ${sql.lit(flags.itemAdopted)} else 0 end)
        + (case when i.uid <> r.namespace_uid and exists (
            select 1 from resources p where p.target_key = r.target_key and p.namespace_name = r.namespace_name
              and p.generation < r.generation and p.namespace_uid = i.uid
          ) then ${sql.lit(flags.itemEarlierGeneration)} else 0 end)`.as('flags'),
      sql<string | null>`case when r.last_activity_at > e.last_activity_at then r.last_activity_at end`.as(
        'resource_activity',
      ),
      sql<string | null>`case when i.last_activity_at > e.last_activity_at then i.last_activity_at end`.as(
        'item_activity',
      ),
      // When the target created an owned namespace, and the window of the claim that made it
      // owned: only where both are known (else null, cheap).
      sql<string | null>`case when ${createdAndClaimed} then i.created_at end`.as('item_created_at'),
      sql<string | null>`case when ${createdAndClaimed} then r.claim_started_at end`.as('claim_started_at'),
      sql<string | null>`case when ${createdAndClaimed} then r.claim_received_at end`.as('claim_received_at'),
    ])
    .where('r.state', '!=', 'missing');

  // By id, state and policy are checked by the caller, not in SQL: SQLite would otherwise search
  // the environments by their state (most are active) rather than by the ids.
  if (scope === 'all') {
    envQuery = envQuery.where('state', 'in', ['active', 'paused']).where('policy_action', 'is not', null);
    resourceQuery = resourceQuery
      .where('e.state', 'in', ['active', 'paused'])
      .where('e.policy_action', 'is not', null);
  } else if ('id' in scope) {
    envQuery = envQuery.where('id', '=', scope.id);
    resourceQuery = resourceQuery.where('r.environment_id', '=', scope.id);
  } else {
    envQuery = envQuery.where('id', 'in', scope.ids);
    resourceQuery = resourceQuery.where('r.environment_id', 'in', scope.ids);
  }
  const [environments, resources] = await Promise.all([envQuery.execute(), resourceQuery.execute()]);
  return { environments, resources };
}

export type SnapshotEnvironmentRow = Awaited<ReturnType<typeof readEnvironmentRows>>['environments'][number];
export type SnapshotResourceRow = Awaited<ReturnType<typeof readEnvironmentRows>>['resources'][number];

/**
 * The small tables of a snapshot, read in full (for one environment, `only`: what its decisions
 * read — its sessions, jobs, its project's policy and breaker): inventories, executors, running
 * sessions heard from since `sessionsSince`, open jobs, enforced policies, open breakers, the
 * halt switch.
 */
export async function readSharedRows(db: Kysely<Database>, sessionsSince: string, only: string | undefined) {
  let sessionQuery = runningSessionsSince(db, sessionsSince).select([
    's.environment_id',
    's.last_event_at',
    's.last_heartbeat_at',
  ]);
  if (only) sessionQuery = sessionQuery.where('s.environment_id', '=', only);

  let jobQuery = db
    .selectFrom('cleanup_jobs')
    .select(['id', 'resource_id', 'state', 'trigger'])
    .where('state', 'in', ['planned', 'executing']);
  if (only) jobQuery = jobQuery.where('environment_id', '=', only);

  const projectOf = db
    .selectFrom('environments')
    .select('project')
    .where('id', '=', only ?? '');
  let policyQuery = db
    .selectFrom('cleanup_policies')
    .select(['project', 'environment', 'after_inactivity_ms', 'action', 'after_close_ms', 'schedule']);
  let breakerQuery = db.selectFrom('cleanup_breakers').select('project');
  if (only) {
    policyQuery = policyQuery
      .where('project', '=', projectOf)
      .where('environment', '=', db.selectFrom('environments').select('name').where('id', '=', only));
    breakerQuery = breakerQuery.where('project', '=', projectOf);
  }

  const [inventories, executors, sessions, jobs, policies, breakers, control] = await Promise.all([
    db
      .selectFrom('cleanup_inventories')
      .select(['target_key', 'received_at', 'complete', 'last_complete_at', 'clock_offset_ms'])
      .execute(),
    db
      .selectFrom('cleanup_executor_targets')
      .select(['target_key', (eb) => eb.fn.max('last_seen_at').as('last_seen_at')])
      .groupBy('target_key')
      .execute(),
    sessionQuery.execute(),
    jobQuery.execute(),
    policyQuery.execute(),
    breakerQuery.execute(),
    db.selectFrom('cleanup_control').select('halted').where('id', '=', 'global').executeTakeFirst(),
  ]);
  return { inventories, executors, sessions, jobs, policies, breakers, control };
}

/** The inventory items of these targets, whole. */
export function readTargetItems(db: Kysely<Database>, targets: ReadonlySet<string>) {
  return db
    .selectFrom('cleanup_inventory_items')
    .select([
      'target_key',
      'namespace_name',
      'uid',
      'managed_by_tend',
      'project',
      'environment',
      'role',
      'adopted',
      'last_activity_at',
    ])
    .where('target_key', 'in', [...targets])
    .execute();
}

/** The change log's state: the last seq assigned and the first still kept (SQLite). */
export async function readChangeLog(
  db: Kysely<Database>,
): Promise<{ assigned: number; first: number | null }> {
  const log = await sql<{ assigned: number | null; first: number | null }>`
      select (select seq from sqlite_sequence where name = 'cleanup_changes') as assigned,
             (select min(seq) from cleanup_changes) as first`.execute(db);
  return { assigned: Number(log.rows[0]?.assigned ?? 0), first: log.rows[0]?.first ?? null };
}

/** The environments the change log names after `seq` up to `assigned`. */
export async function changedEnvironmentIds(
  db: Kysely<Database>,
  seq: number,
  assigned: number,
): Promise<string[]> {
  const changed = await db
    .selectFrom('cleanup_changes')
    .select('environment_id')
    .distinct()
    .where('seq', '>', seq)
    .where('seq', '<=', assigned)
    .execute();
  return changed.map((c) => c.environment_id);
}

/** Drops the change log up to `assigned`, once consumed. */
export async function pruneChangeLog(db: Kysely<Database>, assigned: number): Promise<void> {
  await db.deleteFrom('cleanup_changes').where('seq', '<=', assigned).execute();
}
