/**
 * The holders of shared namespaces, for the planner's snapshot: every active environment record
 * holding a namespace that more than one record holds (with a cleanup policy or not), with what
 * keeps a namespace in use — protection, keep-alive, its latest activity, its policy's wait, a
 * running session. Read in full every pass (shared namespaces are few); for one environment's
 * re-check, only the namespaces it holds.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { parseDuration } from '../../cleanup/policy.js';
import { readOnlyCommands } from '../../events/catalog.js';
import { namespaceKey, sessionLiveMs, type NamespaceHolder } from './planner/types.js';

const ms = (iso: string | null | undefined): number | null => (iso ? Date.parse(iso) : null);

export async function loadHolders(
  db: Kysely<Database>,
  now: Date,
  only?: string,
): Promise<Map<string, NamespaceHolder[]>> {
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
  const sessionsSince = new Date(now.getTime() - sessionLiveMs).toISOString();
  const rows = await db
    .selectFrom('resources as r')
    .innerJoin('environments as e', 'e.id', 'r.environment_id')
    .leftJoin('cleanup_inventory_items as i', (join) =>
      join.onRef('i.target_key', '=', 'r.target_key').onRef('i.namespace_name', '=', 'r.namespace_name'),
    )
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
      (eb) =>
        eb
          .selectFrom('sessions as s')
          .select(sql<string | null>`max(s.last_event_at)`.as('at'))
          .whereRef('s.environment_id', '=', 'e.id')
          .where('s.status', '=', 'running')
          .where('s.last_event_at', '>=', sessionsSince)
          .where((w) => w.or([w('s.command', 'is', null), w('s.command', 'not in', [...readOnlyCommands])]))
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
  const holders = new Map<string, NamespaceHolder[]>();
  for (const row of rows) {
    const key = namespaceKey(row.target_key, row.namespace_name);
    const activity = Math.max(
      Date.parse(row.last_activity_at),
      ms(row.resource_activity) ?? 0,
      ms(row.item_activity) ?? 0,
    );
    const list = holders.get(key) ?? [];
    // One entry per record (a record may hold the namespace through two plugins).
    if (list.some((h) => h.environmentId === row.id)) continue;
    list.push({
      environmentId: row.id,
      project: row.project,
      name: row.name,
      protected: Boolean(row.protected),
      keepAliveUntil: ms(row.keep_alive_until),
      lastActivityAt: activity,
      afterMs: row.policy_after_inactivity ? (parseDuration(row.policy_after_inactivity) ?? null) : null,
      sessionAt: ms(row.session_at),
    });
    holders.set(key, list);
  }
  return holders;
}
