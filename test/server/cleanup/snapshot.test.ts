/**
 * The planning pass's snapshot cache: after any sequence of writes — through ingest and the
 * agent routes, or straight into the tables — the snapshot it gives equals a full
 * `loadSnapshot` of the same moment, on SQLite (where it re-reads only what the change log
 * names) and PostgreSQL (where it reads everything).
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PlanSnapshot } from '../../../src/server/cleanup/planner/types.js';
import { loadSnapshot, SnapshotCache } from '../../../src/server/cleanup/snapshot.js';
import { countRows, dialects, newId, postEvents, session } from '../helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './fixture.js';

const hour = 3_600_000;

/** A snapshot as plain sorted data, so two of them compare whatever their maps' order. */
function plain(s: PlanSnapshot) {
  const sorted = <V>(m: Map<string, V>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    environments: sorted(s.environments),
    resources: [...s.resources].sort((a, b) => (a.id < b.id ? -1 : 1)),
    activeEnvironments: sorted(s.activeEnvironments),
    inventories: sorted(s.inventories),
    executorsLastSeen: sorted(s.executorsLastSeen),
    runningSessions: sorted(s.runningSessions),
    openJobs: sorted(s.openJobs),
    enforcedPolicies: sorted(s.enforcedPolicies),
    openBreakers: [...s.openBreakers].sort(),
    halted: s.halted,
  };
}

describe.each(dialects)('the snapshot cache on %s', (dialect) => {
  let f: CleanupFixture;
  let cache: SnapshotCache;
  beforeEach(async () => {
    f = await cleanupFixture(dialect);
    cache = new SnapshotCache(f.server.database.reader, f.server.database.db);
  });
  afterEach(async () => {
    await f.close();
  });

  async function expectSameAsFullLoad(): Promise<PlanSnapshot> {
    const cached = await cache.load(f.now());
    const fresh = await loadSnapshot(f.server.database.reader, f.now());
    expect(plain(cached)).toEqual(plain(fresh));
    return cached;
  }

  it('follows ingest, inventories, keep-alive, protection and a namespace gone missing', async () => {
    const a = await f.environment({ user: 'alice' });
    const b = await f.environment({ user: 'bob' });
    expect((await expectSameAsFullLoad()).resources).toHaveLength(2);

    await f.report('e1', [f.item(a.namespace, 'uid-alice'), f.item(b.namespace, 'uid-bob')]);
    expect((await expectSameAsFullLoad()).resources.every((r) => r.item !== null)).toBe(true);

    // The inventory sees the same namespaces again: nothing the snapshot reads changed.
    f.advance(hour);
    await f.report('e1', [f.item(a.namespace, 'uid-alice'), f.item(b.namespace, 'uid-bob')]);
    await expectSameAsFullLoad();

    // A stamp on a namespace, another uid on the other (re-created), a third environment.
    f.advance(hour);
    await f.report('e1', [
      f.item(a.namespace, 'uid-alice', { 'tend.dev/last-activity': f.now().toISOString() }),
      f.item(b.namespace, 'uid-bob-2'),
    ]);
    const c = await f.environment({ user: 'carol' });
    await expectSameAsFullLoad();

    expect((await f.call('POST', `/api/v1/environments/${a.id}/keep-alive`, { for: '1d' })).status).toBe(200);
    const s = session({ user: 'carol', project: 'shop' });
    await postEvents(f.server, [s.started(), s.heartbeat()]);
    await expectSameAsFullLoad();

    // A complete inventory without carol's namespace marks it missing; bob's policy is dropped.
    await f.report('e1', [f.item(a.namespace, 'uid-alice'), f.item(b.namespace, 'uid-bob-2')]);
    const b2 = session({ user: 'bob', project: 'shop', command: 'build' });
    await postEvents(f.server, [b2.started(), b2.completed()]);
    const last = await expectSameAsFullLoad();
    expect(last.resources.map((r) => r.environmentId)).not.toContain(c.id);
  });

  it('equals a full load after any sequence of writes to environments, resources and inventory items', async () => {
    const envs: Awaited<ReturnType<CleanupFixture['environment']>>[] = [];
    for (const user of ['u0', 'u1', 'u2', 'u3']) envs.push(await f.environment({ user }));
    await f.report(
      'e1',
      envs.map((e, i) => f.item(e.namespace, `uid-u${i}`)),
    );
    await expectSameAsFullLoad();
    const db = f.server.database.db;
    const at = (h: number) => new Date(Date.parse('2026-03-28T00:00:00.000Z') + h * hour).toISOString();
    const env = fc.integer({ min: 0, max: envs.length - 1 });
    const write = fc.oneof(
      fc.record({ op: fc.constant('activity' as const), env, h: fc.integer({ min: 0, max: 48 }) }),
      fc.record({ op: fc.constant('policy' as const), env, policy: fc.constantFrom(null, '1h', '8h') }),
      fc.record({ op: fc.constant('state' as const), env, state: fc.constantFrom('active', 'cleaned') }),
      fc.record({ op: fc.constant('protect' as const), env, on: fc.boolean() }),
      fc.record({ op: fc.constant('resource' as const), env, state: fc.constantFrom('ready', 'missing') }),
      fc.record({ op: fc.constant('resourceUid' as const), env, uid: fc.constantFrom('uid-x', 'original') }),
      fc.record({ op: fc.constant('itemUid' as const), env, uid: fc.constantFrom('uid-x', 'original') }),
      fc.record({ op: fc.constant('itemProject' as const), env, project: fc.constantFrom('shop', 'other') }),
      fc.record({ op: fc.constant('itemActivity' as const), env, h: fc.integer({ min: 0, max: 48 }) }),
      fc.record({ op: fc.constant('itemSeen' as const), env }),
      fc.record({ op: fc.constant('itemDelete' as const), env }),
      fc.record({ op: fc.constant('newResource' as const), env }),
      // The inventory route (the real path), which also brings deleted items back.
      fc.record({ op: fc.constant('report' as const), env, complete: fc.boolean() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 4 }), async (writes) => {
        for (const w of writes) {
          const e = envs[w.env]!;
          const item = db
            .updateTable('cleanup_inventory_items')
            .where('target_key', '=', target)
            .where('namespace_name', '=', e.namespace);
          switch (w.op) {
            case 'activity':
              await db
                .updateTable('environments')
                .set({ last_activity_at: at(w.h) })
                .where('id', '=', e.id)
                .execute();
              break;
            case 'policy':
              await db
                .updateTable('environments')
                .set({ policy_after_inactivity: w.policy, policy_action: w.policy ? 'delete' : null })
                .where('id', '=', e.id)
                .execute();
              break;
            case 'state':
              await db.updateTable('environments').set({ state: w.state }).where('id', '=', e.id).execute();
              break;
            case 'protect':
              await db
                .updateTable('environments')
                .set({ protected: w.on ? 1 : 0 })
                .where('id', '=', e.id)
                .execute();
              break;
            case 'resource':
              await db
                .updateTable('resources')
                .set({ state: w.state })
                .where('environment_id', '=', e.id)
                .execute();
              break;
            case 'resourceUid':
              await db
                .updateTable('resources')
                .set({ namespace_uid: w.uid === 'original' ? `uid-u${w.env}` : w.uid })
                .where('environment_id', '=', e.id)
                .execute();
              break;
            case 'itemUid':
              await item.set({ uid: w.uid === 'original' ? `uid-u${w.env}` : w.uid }).execute();
              break;
            case 'itemProject':
              await item.set({ project: w.project }).execute();
              break;
            case 'itemActivity':
              await item.set({ last_activity_at: at(w.h) }).execute();
              break;
            case 'itemSeen':
              await item.set({ seen_at: f.now().toISOString(), resource_version: newId() }).execute();
              break;
            case 'itemDelete':
              await db
                .deleteFrom('cleanup_inventory_items')
                .where('target_key', '=', target)
                .where('namespace_name', '=', e.namespace)
                .execute();
              break;
            case 'report':
              await f.report(
                'e1',
                envs.map((x, i) => f.item(x.namespace, `uid-u${i}`)),
                w.complete,
              );
              break;
            case 'newResource': {
              const existing = await db
                .selectFrom('resources')
                .selectAll()
                .where('environment_id', '=', e.id)
                .orderBy('generation', 'desc')
                .executeTakeFirstOrThrow();
              await db
                .insertInto('resources')
                .values({ ...existing, id: newId(), generation: Number(existing.generation) + 1 })
                .execute();
              break;
            }
          }
        }
        await expectSameAsFullLoad();
      }),
      { numRuns: 150 },
    );
    // What the cache applied is pruned from the log.
    if (dialect === 'sqlite') expect(await countRows(db, 'cleanup_changes')).toBe(0);
  });
});
