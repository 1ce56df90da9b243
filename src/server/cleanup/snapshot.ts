/**
 * Loading the planner's snapshot from the database: a handful of narrow queries (only the
 * columns the planner reads; no JSON parsed; resources joined with their inventory item on its
 * primary key; timestamps parsed only where they can matter), so a pass over 100,000
 * environments stays under a second on SQLite. `environmentId` restricts it to one environment (the re-check when
 * a job starts, clean up now).
 */
import { sql, type Kysely } from 'kysely';
import { executorTargetOf, type CleanupAction } from '../../cleanup/protocol.js';
import type { Schedule } from '../../cleanup/schedule.js';
import type { Database } from '../db/schema.js';
import { parseDuration } from '../views.js';
import {
  policyKey,
  sessionLiveMs,
  type PlanSnapshot,
  type SnapshotEnvironment,
  type SnapshotInventoryItem,
  type SnapshotResource,
} from './planner.js';

const ms = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** `{warnBeforeMs: …}` from a stored duration, or nothing when unset (the default applies). */
function durationOf<K extends string>(key: K, text: string | null): Partial<Record<K, number>> {
  const value = text ? parseDuration(text) : undefined;
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}

/** Bits of the `flags` column of the resource query. */
const flags = {
  system: 1,
  owned: 2,
  adopted: 4,
  inInventory: 8,
  itemUidMatches: 16,
  itemManagedByTend: 32,
  itemAnnotationsMatch: 64,
  itemSystem: 128,
  itemAdopted: 256,
} as const;

/** Stands for an inventory value that differs from the record. */
const otherValue = '(differs from the record)';

export async function loadSnapshot(
  db: Kysely<Database>,
  now: Date,
  options: { environmentId?: string } = {},
): Promise<PlanSnapshot> {
  const only = options.environmentId;
  let envQuery = db
    .selectFrom('environments')
    .select([
      'id',
      'project',
      'name',
      'namespace',
      'protected',
      'keep_alive_until',
      'policy_after_inactivity',
      'policy_action',
      'policy_schedule',
      'state',
      'paused_by',
      'last_activity_at',
      'last_activity_command',
      'last_activity_user',
      'last_activity_type',
      'policy_warn_before',
      'policy_after_close',
      'pull_request_repository',
      'pull_request_number',
      'pull_request_state',
      'pull_request_closed_at',
    ])
    .where('state', 'in', ['active', 'paused']);
  if (only) envQuery = envQuery.where('id', '=', only);
  else envQuery = envQuery.where('policy_action', 'is not', null);

  // Each resource with what the inventory of its target saw of its namespace, in one query (a
  // join on the inventory's primary key). What the planner compares — uid, annotations, role,
  // adoption — is compared here and returned as bits of one integer: strings are what makes
  // reading 200,000 rows slow, not the rows. Activity columns come back only when later than the
  // environment's (the only case where they matter), so they are mostly null.
  let resourceQuery = db
    .selectFrom('resources as r')
    .innerJoin('environments as e', 'e.id', 'r.environment_id')
    .leftJoin('cleanup_inventory_items as i', (join) =>
      join.onRef('i.target_key', '=', 'r.target_key').onRef('i.namespace_name', '=', 'r.namespace_name'),
    )
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
        + (case when i.adopted = 1 then ${sql.lit(flags.itemAdopted)} else 0 end)`.as('flags'),
      sql<string | null>`case when r.last_activity_at > e.last_activity_at then r.last_activity_at end`.as(
        'resource_activity',
      ),
      sql<string | null>`case when i.last_activity_at > e.last_activity_at then i.last_activity_at end`.as(
        'item_activity',
      ),
    ])
    .where('r.state', '!=', 'missing')
    .where('e.state', 'in', ['active', 'paused']);
  resourceQuery = only
    ? resourceQuery.where('r.environment_id', '=', only)
    : resourceQuery.where('e.policy_action', 'is not', null);

  const sessionsSince = new Date(now.getTime() - sessionLiveMs).toISOString();
  let sessionQuery = db
    .selectFrom('sessions')
    .select(['environment_id', 'last_event_at', 'last_heartbeat_at'])
    .where('status', '=', 'running')
    .where('last_event_at', '>=', sessionsSince);
  if (only) sessionQuery = sessionQuery.where('environment_id', '=', only);

  let jobQuery = db
    .selectFrom('cleanup_jobs')
    .select(['id', 'resource_id', 'state', 'trigger'])
    .where('state', 'in', ['planned', 'executing']);
  if (only) jobQuery = jobQuery.where('environment_id', '=', only);

  const [
    envRows,
    resourceRows,
    activeRows,
    inventoryRows,
    executorRows,
    sessionRows,
    jobRows,
    policyRows,
    breakerRows,
    localItemRows,
    control,
  ] = await Promise.all([
    envQuery.execute(),
    resourceQuery.execute(),
    db
      .selectFrom('environments')
      .select(['project', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', '=', 'active')
      .groupBy('project')
      .execute(),
    db
      .selectFrom('cleanup_inventories')
      .select(['target_key', 'received_at', 'complete', 'last_complete_at'])
      .execute(),
    db
      .selectFrom('cleanup_executor_targets')
      .select(['target_key', (eb) => eb.fn.max('last_seen_at').as('last_seen_at')])
      .groupBy('target_key')
      .execute(),
    sessionQuery.execute(),
    jobQuery.execute(),
    db
      .selectFrom('cleanup_policies')
      .select(['project', 'environment', 'after_inactivity_ms', 'action'])
      .execute(),
    db.selectFrom('cleanup_breakers').select('project').execute(),
    db
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
      .where('target_key', 'like', 'local/%')
      .execute(),
    db.selectFrom('cleanup_control').select('halted').where('id', '=', 'global').executeTakeFirst(),
  ]);

  // Many environments share a schedule: each text is parsed once (and the planner caches by it).
  const schedules = new Map<string, Schedule>();
  const parseSchedule = (text: string): Schedule => {
    let s = schedules.get(text);
    if (!s) schedules.set(text, (s = JSON.parse(text) as Schedule));
    return s;
  };
  const environments = new Map<string, SnapshotEnvironment>();
  for (const e of envRows) {
    const afterMs = e.policy_after_inactivity ? parseDuration(e.policy_after_inactivity) : undefined;
    environments.set(e.id, {
      id: e.id,
      project: e.project,
      name: e.name,
      namespace: e.namespace,
      protected: Boolean(e.protected),
      keepAliveUntil: ms(e.keep_alive_until),
      policy:
        afterMs !== undefined && e.policy_action
          ? {
              afterMs,
              action: e.policy_action as CleanupAction,
              text: e.policy_after_inactivity!,
              ...(e.policy_schedule ? { schedule: parseSchedule(e.policy_schedule) } : {}),
              ...durationOf('warnBeforeMs', e.policy_warn_before),
              ...durationOf('afterCloseMs', e.policy_after_close),
            }
          : null,
      pullRequest:
        e.pull_request_repository !== null && e.pull_request_number !== null
          ? {
              repository: e.pull_request_repository,
              number: Number(e.pull_request_number),
              state: e.pull_request_state,
              closedAt: ms(e.pull_request_closed_at),
            }
          : null,
      state: e.state === 'paused' ? 'paused' : 'active',
      pausedBy: e.paused_by === 'schedule' || e.paused_by === 'inactivity' ? e.paused_by : null,
      lastActivityAt: Date.parse(e.last_activity_at),
      lastActivityCommand: e.last_activity_command,
      lastActivityUser: e.last_activity_user,
      lastActivityType: e.last_activity_type,
    });
  }

  const localItems = new Map<string, SnapshotInventoryItem>();
  for (const i of localItemRows) {
    localItems.set(`${i.target_key}\u0000${i.namespace_name}`, {
      uid: i.uid,
      managedByTend: Boolean(i.managed_by_tend),
      project: i.project,
      environment: i.environment,
      role: i.role,
      adopted: Boolean(i.adopted),
      lastActivityAt: ms(i.last_activity_at),
    });
  }

  const resources: SnapshotResource[] = [];
  for (const r of resourceRows) {
    const env = environments.get(r.environment_id);
    if (!env) continue;
    const targetKey = executorTargetOf(r.target_key);
    const f = Number(r.flags);
    let item: SnapshotInventoryItem | null = null;
    if (f & flags.inInventory) {
      // The inventory's values as far as the planner compares them with the record.
      item = {
        uid: f & flags.itemUidMatches ? r.namespace_uid! : otherValue,
        managedByTend: (f & flags.itemManagedByTend) !== 0,
        project: f & flags.itemAnnotationsMatch ? env.project : otherValue,
        environment: f & flags.itemAnnotationsMatch ? env.name : otherValue,
        role: f & flags.itemSystem ? 'system' : null,
        adopted: (f & flags.itemAdopted) !== 0,
        lastActivityAt: ms(r.item_activity),
      };
    } else if (targetKey !== r.target_key) {
      item = localItems.get(`${targetKey}\u0000${r.namespace_name}`) ?? null;
    }
    resources.push({
      id: r.id,
      environmentId: r.environment_id,
      plugin: r.plugin,
      targetKey,
      namespaceName: r.namespace_name,
      namespaceUid: r.namespace_uid,
      role: f & flags.system ? 'system' : 'app',
      ownership: f & flags.owned ? 'owned' : f & flags.adopted ? 'adopted' : 'unknown',
      lastActivityAt: ms(r.resource_activity),
      item,
    });
  }

  const runningSessions = new Map<string, number>();
  for (const s of sessionRows) {
    if (!s.environment_id) continue;
    const at = Math.max(Date.parse(s.last_event_at), ms(s.last_heartbeat_at) ?? 0);
    if (at > (runningSessions.get(s.environment_id) ?? 0)) runningSessions.set(s.environment_id, at);
  }

  return {
    environments,
    resources,
    activeEnvironments: new Map(activeRows.map((r) => [r.project, Number(r.n)])),
    inventories: new Map(
      inventoryRows.map((i) => [
        i.target_key,
        {
          receivedAt: Date.parse(i.received_at),
          complete: Boolean(i.complete),
          lastCompleteAt: ms(i.last_complete_at),
        },
      ]),
    ),
    executorsLastSeen: new Map(
      executorRows
        .filter((e) => e.last_seen_at)
        .map((e) => [e.target_key, Date.parse(String(e.last_seen_at))]),
    ),
    runningSessions,
    openJobs: new Map(
      jobRows
        .filter((j) => j.resource_id)
        .map((j) => [
          j.resource_id!,
          { id: j.id, state: j.state as 'planned' | 'executing', trigger: j.trigger },
        ]),
    ),
    enforcedPolicies: new Map(
      policyRows.map((p) => [
        policyKey(p.project, p.environment),
        { afterMs: Number(p.after_inactivity_ms), action: p.action },
      ]),
    ),
    openBreakers: new Set(breakerRows.map((b) => b.project)),
    halted: Boolean(control?.halted),
  };
}
