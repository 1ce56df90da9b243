/**
 * The holders of shared namespaces, for the planner's snapshot: every active environment record
 * holding a namespace that more than one record holds (with a cleanup policy or not), with what
 * keeps a namespace in use — protection, keep-alive, its latest activity, its policy's wait, a
 * running session. Read in full every pass (shared namespaces are few); for one environment's
 * re-check, only the namespaces it holds (the query: db/repositories/namespace-holders.ts).
 */
import type { Kysely } from 'kysely';
import { readNamespaceHolderRows } from '../db/repositories/namespace-holders.js';
import type { Database } from '../db/schema.js';
import { parseDuration } from '../../cleanup/policy.js';
import { namespaceKey, sessionLiveMs, type NamespaceHolder } from './planner/types.js';

const ms = (iso: string | null | undefined): number | null => (iso ? Date.parse(iso) : null);

export async function loadHolders(
  db: Kysely<Database>,
  now: Date,
  only?: string,
): Promise<Map<string, NamespaceHolder[]>> {
  const sessionsSince = new Date(now.getTime() - sessionLiveMs).toISOString();
  const rows = await readNamespaceHolderRows(db, sessionsSince, only);
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
