/**
 * Loading the planner's snapshot from the database: a handful of narrow queries (only the
 * columns the planner reads; no JSON parsed), so a pass over 100,000 environments stays well
 * under a second on SQLite. `environmentId` restricts it to one environment (the re-check when
 * a job starts, clean up now).
 */
import type { Kysely } from 'kysely';
import { executorTargetOf, type CleanupAction } from '../../cleanup/protocol.js';
import type { Database } from '../db/schema.js';
import { parseDuration } from '../views.js';
import {
  inventoryKey,
  policyKey,
  sessionLiveMs,
  type PlanSnapshot,
  type SnapshotEnvironment,
  type SnapshotResource,
} from './planner.js';

const ms = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

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
      'last_activity_at',
      'last_activity_command',
      'last_activity_user',
      'last_activity_type',
    ])
    .where('state', '=', 'active');
  if (only) envQuery = envQuery.where('id', '=', only);
  else envQuery = envQuery.where('policy_action', 'is not', null);

  let resourceQuery = db
    .selectFrom('resources')
    .select([
      'id',
      'environment_id',
      'plugin',
      'target_key',
      'namespace_name',
      'namespace_uid',
      'role',
      'ownership',
      'last_activity_at',
    ])
    .where('state', '!=', 'missing');
  if (only) resourceQuery = resourceQuery.where('environment_id', '=', only);

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
    db.selectFrom('cleanup_control').select('halted').where('id', '=', 'global').executeTakeFirst(),
  ]);

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
          ? { afterMs, action: e.policy_action as CleanupAction, text: e.policy_after_inactivity! }
          : null,
      lastActivityAt: Date.parse(e.last_activity_at),
      lastActivityCommand: e.last_activity_command,
      lastActivityUser: e.last_activity_user,
      lastActivityType: e.last_activity_type,
    });
  }

  const resources: SnapshotResource[] = [];
  const targets = new Set<string>();
  for (const r of resourceRows) {
    if (!environments.has(r.environment_id)) continue;
    const targetKey = executorTargetOf(r.target_key);
    targets.add(targetKey);
    resources.push({
      id: r.id,
      environmentId: r.environment_id,
      plugin: r.plugin,
      targetKey,
      namespaceName: r.namespace_name,
      namespaceUid: r.namespace_uid,
      role: r.role,
      ownership: r.ownership,
      lastActivityAt: ms(r.last_activity_at),
    });
  }

  // Inventory items of the namespaces planned only (one environment: its few names).
  let itemQuery = db
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
    .where('recorded', '=', 1);
  if (only) {
    const names = [...new Set(resources.map((r) => r.namespaceName))];
    itemQuery =
      names.length > 0
        ? itemQuery.where('namespace_name', 'in', names)
        : itemQuery.where('recorded', '=', -1);
  }
  const itemRows = await itemQuery.execute();
  const inventoryItems: PlanSnapshot['inventoryItems'] = new Map();
  for (const i of itemRows) {
    if (!targets.has(i.target_key)) continue;
    inventoryItems.set(inventoryKey(i.target_key, i.namespace_name), {
      uid: i.uid,
      managedByTend: Boolean(i.managed_by_tend),
      project: i.project,
      environment: i.environment,
      role: i.role,
      adopted: Boolean(i.adopted),
      lastActivityAt: ms(i.last_activity_at),
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
    inventoryItems,
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
