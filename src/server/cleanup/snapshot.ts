/**
 * Loading the planner's snapshot from the database: a handful of narrow queries (only the
 * columns the planner reads; no JSON parsed; resources joined with their inventory item on its
 * primary key; timestamps parsed only where they can matter). `environmentId` restricts it to
 * one environment (the re-check when a job starts, clean up now).
 *
 * `SnapshotCache` is what a planning pass reads through: it keeps the environments and
 * resources of the last pass in memory and, on SQLite, re-reads only the environments the
 * change log (`cleanup_changes`, filled by triggers) names since then, plus the small tables
 * (executors, inventories, sessions, open jobs, policies, breakers, the halt switch) in full.
 * The snapshot it gives equals what `loadSnapshot` reads at that moment; on PostgreSQL (no
 * change log) it is `loadSnapshot`.
 */
import { sql, type Kysely } from 'kysely';
import type { PlannedAction } from '../../cleanup/protocol.js';
import { executorTargetOf } from '../../cleanup/targets.js';
import { readOnlyCommands } from '../../events/catalog.js';
import type { Schedule } from '../../cleanup/schedule.js';
import { isSqlite } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { parseDuration } from '../../cleanup/policy.js';
import { loadHolders } from './holders.js';
import {
  policyKey,
  sessionLiveMs,
  type PlanSnapshot,
  type SnapshotEnvironment,
  type SnapshotInventoryItem,
  type SnapshotResource,
} from './planner/types.js';
import { chunks } from '../db/bulk.js';

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
  itemEarlierGeneration: 512,
} as const;

/** Stands for an inventory value that differs from the record. */
const otherValue = '(differs from the record)';

/** Ids per query when re-reading changed environments: far below SQLite's bound-parameter limit. */
const idChunk = 500;

/**
 * A resource as read. A resource whose key holds a path (`<kind>/<id>/<path>`: a project
 * directory of a host, a plugin's root) has its item under its executor target's key, which the
 * join cannot find: `pathKey` names that item, looked up per snapshot.
 */
interface LoadedResource {
  resource: SnapshotResource;
  pathKey: string | null;
}

/** Environments (with a policy, or the one asked for) and their resources, as read. */
interface EnvironmentPart {
  environments: Map<string, SnapshotEnvironment>;
  resources: LoadedResource[];
}

/** Everything of a snapshot but its environments and resources: small tables, read in full. */
type SharedPart = Omit<PlanSnapshot, 'environments' | 'resources' | 'activeEnvironments'>;

export async function loadSnapshot(
  db: Kysely<Database>,
  now: Date,
  options: { environmentId?: string } = {},
): Promise<PlanSnapshot> {
  const only = options.environmentId;
  const [part, shared] = await Promise.all([
    loadEnvironments(db, only ? { id: only } : 'all'),
    loadShared(db, now, only),
  ]);
  const items = await loadPathItems(db, pathTargetsOf([part.resources]));
  return assemble(part.environments, part.resources, shared, items);
}

/**
 * The planning pass's snapshot, kept between passes. On SQLite each `load` reads the change log
 * first, then re-reads the environments it names (or everything, the first time or when the
 * log was pruned past what this cache read), then prunes what it consumed.
 */
export class SnapshotCache {
  private readonly incremental: boolean;
  private environments = new Map<string, SnapshotEnvironment>();
  private resources = new Map<string, LoadedResource[]>();
  /** The planner's view of each list of resources without path-keyed ones, kept while the list is. */
  private plain = new WeakMap<LoadedResource[], SnapshotResource[]>();
  /** The last change-log entry applied; undefined: nothing loaded yet. */
  private seq: number | undefined;

  /** Reads go to `reader`; the consumed change log is pruned through `writer`. */
  constructor(
    private readonly reader: Kysely<Database>,
    private readonly writer: Kysely<Database>,
  ) {
    this.incremental = isSqlite(reader);
  }

  async load(now: Date): Promise<PlanSnapshot> {
    if (!this.incremental) return loadSnapshot(this.reader, now);
    // The log's state first: a change committed after this read is applied by the next load.
    const log = await sql<{ assigned: number | null; first: number | null }>`
      select (select seq from sqlite_sequence where name = 'cleanup_changes') as assigned,
             (select min(seq) from cleanup_changes) as first`.execute(this.reader);
    const assigned = Number(log.rows[0]?.assigned ?? 0);
    const first = log.rows[0]?.first ?? null;
    const seq = this.seq;
    const pruned = seq !== undefined && assigned > seq && (first === null || Number(first) > seq + 1);
    const [shared] = await Promise.all([
      loadShared(this.reader, now, undefined),
      seq === undefined || pruned ? this.reloadAll() : this.reloadChanged(seq, assigned),
    ]);
    this.seq = assigned;
    if (assigned > 0) {
      await this.writer.deleteFrom('cleanup_changes').where('seq', '<=', assigned).execute();
    }
    // The same array for an environment whose resources were not re-read: the planner's memo
    // recognises it. Path-keyed resources take their inventory item from this pass's read.
    const pending = [...this.resources.values()].filter((list) => !this.plain.has(list));
    const items = await loadPathItems(this.reader, pathTargetsOf(pending));
    const byEnvironment = new Map<string, readonly SnapshotResource[]>();
    const resources: SnapshotResource[] = [];
    for (const [id, list] of this.resources) {
      let plain = this.plain.get(list);
      if (!plain) {
        plain = list.map((l) =>
          l.pathKey === null ? l.resource : { ...l.resource, item: items.get(l.pathKey) ?? null },
        );
        if (list.every((l) => l.pathKey === null)) this.plain.set(list, plain);
      }
      byEnvironment.set(id, plain);
      for (const r of plain) resources.push(r);
    }
    return {
      ...shared,
      environments: this.environments,
      resources,
      byEnvironment,
      activeEnvironments: breakerBase(this.environments, resources, shared.enforcedPolicies),
    };
  }

  private async reloadAll(): Promise<void> {
    const part = await loadEnvironments(this.reader, 'all');
    this.environments = part.environments;
    this.resources = groupByEnvironment(part.resources);
  }

  private async reloadChanged(seq: number, assigned: number): Promise<void> {
    if (assigned <= seq) return;
    const changed = await this.reader
      .selectFrom('cleanup_changes')
      .select('environment_id')
      .distinct()
      .where('seq', '>', seq)
      .where('seq', '<=', assigned)
      .execute();
    const ids = changed.map((c) => c.environment_id);
    for (const chunk of chunks(ids, idChunk)) {
      const part = await loadEnvironments(this.reader, { ids: chunk });
      const byEnvironment = groupByEnvironment(part.resources);
      for (const id of chunk) {
        const env = part.environments.get(id);
        if (env) this.environments.set(id, env);
        else this.environments.delete(id);
        const list = byEnvironment.get(id);
        if (list) this.resources.set(id, list);
        else this.resources.delete(id);
      }
    }
  }
}

function groupByEnvironment(resources: LoadedResource[]): Map<string, LoadedResource[]> {
  const byEnvironment = new Map<string, LoadedResource[]>();
  for (const r of resources) {
    const list = byEnvironment.get(r.resource.environmentId);
    if (list) list.push(r);
    else byEnvironment.set(r.resource.environmentId, [r]);
  }
  return byEnvironment;
}

/**
 * The active environments with a policy (`all`), the active one named (with or without a
 * policy), or the active ones with a policy among these ids; and their resources that are not
 * missing, each with what the inventory of its target saw of its namespace.
 */
async function loadEnvironments(
  db: Kysely<Database>,
  scope: 'all' | { id: string } | { ids: readonly string[] },
): Promise<EnvironmentPart> {
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
      'policy_schedule',
      'state',
      'paused_by',
    ]);

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
    ])
    .where('r.state', '!=', 'missing');

  // By id, state and policy are checked here, not in SQL: SQLite would otherwise search the
  // environments by their state (most are active) rather than by the ids.
  const withPolicy = scope === 'all' || 'ids' in scope;
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

  const [envRows, resourceRows] = await Promise.all([envQuery.execute(), resourceQuery.execute()]);

  // Many environments share a schedule: each text is parsed once (and the planner caches by it).
  const schedules = new Map<string, Schedule>();
  const parseSchedule = (text: string): Schedule => {
    let s = schedules.get(text);
    if (!s) schedules.set(text, (s = JSON.parse(text) as Schedule));
    return s;
  };
  const environments = new Map<string, SnapshotEnvironment>();
  for (const e of envRows) {
    if ((e.state !== 'active' && e.state !== 'paused') || (withPolicy && !e.policy_action)) continue;
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
              action: e.policy_action as PlannedAction,
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

  const resources: LoadedResource[] = [];
  for (const r of resourceRows) {
    // Only the resources of the environments kept above.
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
        ...(f & flags.itemEarlierGeneration ? { earlierGeneration: true } : {}),
      };
    }
    resources.push({
      resource: {
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
      },
      pathKey: item === null && targetKey !== r.target_key ? `${targetKey}\u0000${r.namespace_name}` : null,
    });
  }
  return { environments, resources };
}

async function loadShared(db: Kysely<Database>, now: Date, only: string | undefined): Promise<SharedPart> {
  const sessionsSince = new Date(now.getTime() - sessionLiveMs).toISOString();
  let sessionQuery = db
    .selectFrom('sessions')
    .select(['environment_id', 'last_event_at', 'last_heartbeat_at'])
    .where('status', '=', 'running')
    .where('last_event_at', '>=', sessionsSince)
    // A read-only command running (`tend logs -f`) is not activity: it holds nothing.
    .where((eb) => eb.or([eb('command', 'is', null), eb('command', 'not in', [...readOnlyCommands])]));
  if (only) sessionQuery = sessionQuery.where('environment_id', '=', only);

  let jobQuery = db
    .selectFrom('cleanup_jobs')
    .select(['id', 'resource_id', 'state', 'trigger'])
    .where('state', 'in', ['planned', 'executing']);
  if (only) jobQuery = jobQuery.where('environment_id', '=', only);

  // For one environment, only what its decisions read: its project's count, policy and breaker.
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

  const [inventoryRows, executorRows, sessionRows, jobRows, policyRows, breakerRows, control, holders] =
    await Promise.all([
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
      policyQuery.execute(),
      breakerQuery.execute(),
      db.selectFrom('cleanup_control').select('halted').where('id', '=', 'global').executeTakeFirst(),
      loadHolders(db, now, only),
    ]);

  const runningSessions = new Map<string, number>();
  for (const s of sessionRows) {
    if (!s.environment_id) continue;
    const at = Math.max(Date.parse(s.last_event_at), ms(s.last_heartbeat_at) ?? 0);
    if (at > (runningSessions.get(s.environment_id) ?? 0)) runningSessions.set(s.environment_id, at);
  }

  return {
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
        {
          afterMs: Number(p.after_inactivity_ms),
          action: p.action,
          afterCloseMs: p.after_close_ms === null ? null : Number(p.after_close_ms),
          schedule: p.schedule,
        },
      ]),
    ),
    openBreakers: new Set(breakerRows.map((b) => b.project)),
    halted: Boolean(control?.halted),
    holders,
  };
}

/** The executor targets of the path-keyed resources of these lists. */
function pathTargetsOf(lists: Iterable<readonly LoadedResource[]>): Set<string> {
  const targets = new Set<string>();
  for (const list of lists) {
    for (const l of list) if (l.pathKey !== null) targets.add(l.resource.targetKey);
  }
  return targets;
}

/**
 * The items of these targets by `targetKey\0namespace`, read whole each pass: the change log
 * cannot name the environments of path-keyed resources (their keys differ from their items').
 * Few targets: a host's or a plugin root's environments.
 */
async function loadPathItems(
  db: Kysely<Database>,
  targets: ReadonlySet<string>,
): Promise<Map<string, SnapshotInventoryItem>> {
  const items = new Map<string, SnapshotInventoryItem>();
  if (targets.size === 0) return items;
  const rows = await db
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
  for (const i of rows) {
    items.set(`${i.target_key}\u0000${i.namespace_name}`, {
      uid: i.uid,
      managedByTend: Boolean(i.managed_by_tend),
      project: i.project,
      environment: i.environment,
      role: i.role,
      adopted: Boolean(i.adopted),
      lastActivityAt: ms(i.last_activity_at),
    });
  }
  return items;
}

/** The snapshot: path-keyed resources get their item from this read's items. */
function assemble(
  environments: Map<string, SnapshotEnvironment>,
  loaded: readonly LoadedResource[],
  shared: SharedPart,
  items: ReadonlyMap<string, SnapshotInventoryItem>,
): PlanSnapshot {
  const resources: SnapshotResource[] = new Array<SnapshotResource>(loaded.length);
  for (let i = 0; i < loaded.length; i++) {
    const { resource, pathKey } = loaded[i]!;
    resources[i] = pathKey === null ? resource : { ...resource, item: items.get(pathKey) ?? null };
  }
  return {
    environments,
    resources,
    ...shared,
    activeEnvironments: breakerBase(environments, resources, shared.enforcedPolicies),
  };
}

/**
 * The breaker's denominator per project: the environments that have namespaces under an
 * enforced policy. Environments that only ran commands (no namespace) or whose policy nobody
 * enforced cannot be deleted, so they must not dilute the share of a project due at once.
 */
function breakerBase(
  environments: ReadonlyMap<string, SnapshotEnvironment>,
  resources: readonly SnapshotResource[],
  enforced: PlanSnapshot['enforcedPolicies'],
): Map<string, number> {
  const withNamespaces = new Set<string>();
  for (const r of resources) if (r.role !== 'system') withNamespaces.add(r.environmentId);
  const counts = new Map<string, number>();
  for (const env of environments.values()) {
    if (!env.policy || !enforced.has(policyKey(env.project, env.name))) continue;
    if (!withNamespaces.has(env.id)) continue;
    counts.set(env.project, (counts.get(env.project) ?? 0) + 1);
  }
  return counts;
}
