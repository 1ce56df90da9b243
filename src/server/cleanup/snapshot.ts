/**
 * Loading the planner's snapshot from the database: the rows of a handful of narrow queries
 * (db/repositories/plan-snapshot.ts) made into the snapshot, timestamps parsed only where they
 * can matter. `environmentId` restricts it to one environment (the re-check when a job starts,
 * clean up now).
 *
 * `SnapshotCache` is what a planning pass reads through: it keeps the environments and
 * resources of the last pass in memory and, on SQLite, re-reads only the environments the
 * change log (`cleanup_changes`, filled by triggers) names since then, plus the small tables
 * (executors, inventories, sessions, open jobs, policies, breakers, the halt switch) in full.
 * The snapshot it gives equals what `loadSnapshot` reads at that moment; on PostgreSQL (no
 * change log) it is `loadSnapshot`.
 */
import type { Kysely } from 'kysely';
import type { PlannedAction } from '../../cleanup/protocol.js';
import { executorTargetOf } from '../../cleanup/targets.js';
import type { Schedule } from '../../cleanup/schedule.js';
import { isSqlite } from '../db/dialect.js';
import {
  changedEnvironmentIds,
  pruneChangeLog,
  readChangeLog,
  readEnvironmentRows,
  readSharedRows,
  readTargetItems,
  resourceFlags as flags,
  type EnvironmentScope,
  type SnapshotEnvironmentRow,
  type SnapshotResourceRow,
} from '../db/repositories/plan-snapshot.js';
import type { Database } from '../db/schema.js';
import { parseDuration } from '../../cleanup/policy.js';
import { pullRequestView } from '../views.js';
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
    const { assigned, first } = await readChangeLog(this.reader);
    const seq = this.seq;
    const pruned = seq !== undefined && assigned > seq && (first === null || Number(first) > seq + 1);
    const [shared] = await Promise.all([
      loadShared(this.reader, now, undefined),
      seq === undefined || pruned ? this.reloadAll() : this.reloadChanged(seq, assigned),
    ]);
    this.seq = assigned;
    if (assigned > 0) await pruneChangeLog(this.writer, assigned);
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
    const ids = await changedEnvironmentIds(this.reader, seq, assigned);
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
async function loadEnvironments(db: Kysely<Database>, scope: EnvironmentScope): Promise<EnvironmentPart> {
  const rows = await readEnvironmentRows(db, scope);
  // By id, state and policy are checked here (the query leaves them to us).
  const withPolicy = scope === 'all' || 'ids' in scope;
  // Many environments share a schedule: each text is parsed once (and the planner caches by it).
  const schedules = new Map<string, Schedule>();
  const parseSchedule = (text: string): Schedule => {
    let s = schedules.get(text);
    if (!s) schedules.set(text, (s = JSON.parse(text) as Schedule));
    return s;
  };
  const environments = new Map<string, SnapshotEnvironment>();
  for (const e of rows.environments) {
    if ((e.state !== 'active' && e.state !== 'paused') || (withPolicy && !e.policy_action)) continue;
    environments.set(e.id, snapshotEnvironment(e, parseSchedule));
  }
  const resources: LoadedResource[] = [];
  for (const r of rows.resources) {
    // Only the resources of the environments kept above.
    const env = environments.get(r.environment_id);
    if (env) resources.push(loadedResource(r, env));
  }
  return { environments, resources };
}

function snapshotEnvironment(
  e: SnapshotEnvironmentRow,
  parseSchedule: (text: string) => Schedule,
): SnapshotEnvironment {
  const afterMs = e.policy_after_inactivity ? parseDuration(e.policy_after_inactivity) : undefined;
  const pullRequest = pullRequestView(e);
  return {
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
    pullRequest: pullRequest && { ...pullRequest, closedAt: ms(pullRequest.closedAt) },
    state: e.state === 'paused' ? 'paused' : 'active',
    pausedBy: e.paused_by === 'schedule' || e.paused_by === 'inactivity' ? e.paused_by : null,
    lastActivityAt: Date.parse(e.last_activity_at),
    lastActivityCommand: e.last_activity_command,
    lastActivityUser: e.last_activity_user,
    lastActivityType: e.last_activity_type,
  };
}

/** A resource of `env` as the planner reads it, its inventory item unpacked from the row's flags. */
function loadedResource(r: SnapshotResourceRow, env: SnapshotEnvironment): LoadedResource {
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
      ...(r.item_created_at !== null ? { createdAt: Date.parse(r.item_created_at) } : {}),
    };
  }
  return {
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
      ...(r.claim_started_at !== null && r.claim_received_at !== null
        ? {
            claim: { startedAt: Date.parse(r.claim_started_at), receivedAt: Date.parse(r.claim_received_at) },
          }
        : {}),
    },
    pathKey: item === null && targetKey !== r.target_key ? `${targetKey}\u0000${r.namespace_name}` : null,
  };
}

async function loadShared(db: Kysely<Database>, now: Date, only: string | undefined): Promise<SharedPart> {
  const sessionsSince = new Date(now.getTime() - sessionLiveMs).toISOString();
  const [rows, holders] = await Promise.all([
    readSharedRows(db, sessionsSince, only),
    loadHolders(db, now, only),
  ]);
  const {
    inventories: inventoryRows,
    executors: executorRows,
    sessions: sessionRows,
    jobs: jobRows,
    policies: policyRows,
    breakers: breakerRows,
    control,
  } = rows;

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
          clockOffsetMs: i.clock_offset_ms === null ? null : Number(i.clock_offset_ms),
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
  const rows = await readTargetItems(db, targets);
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
 * The breaker's denominator per project: the environments that have namespaces cleanup could
 * delete under an enforced policy. Environments that only ran commands (no namespace), whose
 * policy nobody enforced, or whose namespaces no inventory confirms as tend's cannot be
 * deleted, so they must not dilute the share of a project due at once.
 */
function breakerBase(
  environments: ReadonlyMap<string, SnapshotEnvironment>,
  resources: readonly SnapshotResource[],
  enforced: PlanSnapshot['enforcedPolicies'],
): Map<string, number> {
  // Only what cleanup could delete: an owned namespace an inventory lists with the recorded uid.
  // Records nothing in a cluster confirms (forged, or on a target no executor serves) must not
  // dilute the share of a project due at once.
  const withNamespaces = new Set<string>();
  for (const r of resources) {
    if (r.role === 'system' || r.ownership !== 'owned' || r.namespaceUid === null) continue;
    if (r.item?.uid === r.namespaceUid) withNamespaces.add(r.environmentId);
  }
  const counts = new Map<string, number>();
  for (const env of environments.values()) {
    if (!env.policy || !enforced.has(policyKey(env.project, env.name))) continue;
    if (!withNamespaces.has(env.id)) continue;
    counts.set(env.project, (counts.get(env.project) ?? 0) + 1);
  }
  return counts;
}
