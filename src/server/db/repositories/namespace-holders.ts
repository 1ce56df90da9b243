/**
 * What the holders of shared namespaces are read from (cleanup/holders.ts makes the planner's
 * holders of the rows): every active or paused environment record holding a namespace that more
 * than one record holds, with what keeps a namespace in use.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { resourcesWithItems, runningSessionsSince } from './plan-snapshot.js';

/**
 * Each holding of a shared namespace (of the namespaces `only` holds, when given): the record,
 * its activity and the resource's and inventory item's, and its latest running session heard
 * from since `sessionsSince`.
 */
export function readNamespaceHolderRows(db: Kysely<Database>, sessionsSince: string, only?: string) {
  const live = ['active', 'paused'] as const;
  // The namespaces held by more than one record (of the one environment's, when `only`).
  const shared = db
    .selectFrom('resources as r2')
    .innerJoin('environments as e2', 'e2.id', 'r2.environment_id')
    .select(['r2.target_key', 'r2.namespace_name'])
    .where('r2.state', '!=', 'missing')
    .where('r2.role', '!=', 'system')
    .where('e2.state', 'in', live)
    .groupBy(['r2.target_key', 'r2.namespace_name'])
    .having((eb) => eb.fn.count('r2.environment_id').distinct(), '>', 1);
  const scoped = only
    ? shared.where((eb) =>
        eb(
          eb.refTuple('r2.target_key', 'r2.namespace_name'),
          'in',
          db
            .selectFrom('resources')
            .select(['target_key', 'namespace_name'])
            .where('environment_id', '=', only)
            .where('state', '!=', 'missing')
            .$asTuple('target_key', 'namespace_name'),
        ),
      )
    : shared;
  return resourcesWithItems(db)
    .select([
      'r.target_key',
      'r.namespace_name',
      'e.id',
      'e.project',
      'e.name',
      'e.protected',
      'e.keep_alive_until',
      'e.last_activity_at',
      'e.policy_after_inactivity',
      'r.last_activity_at as resource_activity',
      'i.last_activity_at as item_activity',
      () =>
        runningSessionsSince(db, sessionsSince)
          .select(sql<string | null>`max(s.last_event_at)`.as('at'))
          // Correlated with the outer row (a reference Kysely cannot type across the two queries).
          .where(sql<boolean>`${sql.ref('s.environment_id')} = ${sql.ref('e.id')}`)
          .as('session_at'),
    ])
    .where('r.state', '!=', 'missing')
    .where('r.role', '!=', 'system')
    .where('e.state', 'in', live)
    .where((eb) =>
      eb(
        eb.refTuple('r.target_key', 'r.namespace_name'),
        'in',
        scoped.$asTuple('target_key', 'namespace_name'),
      ),
    )
    .execute();
}
