/**
 * Ingest applies a batch set-based (read what it touches, apply in memory in the order of the
 * batch, write back): the registry must end the same however the events are cut into batches.
 * Property: any sequence of events over a few sessions and environments — uid changes in the
 * middle of a batch, system namespaces, sessions ending before they start, re-sent events —
 * sent as one batch, or cut anywhere into several, gives the same registry as one event per
 * batch. The receive time is fixed, so that times compare equal.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { migrateToLatest, type ServerDatabase } from '../../src/server/db/database.js';
import { ingestEvents } from '../../src/server/registry/ingest.js';
import { countRows, createTestDatabase, dialects, session, type TestDatabase } from './helpers.js';

const now = new Date('2025-06-01T12:00:00.000Z');

type Step =
  | { kind: 'started'; s: number; policy: boolean }
  | { kind: 'heartbeat' | 'action' | 'completed' | 'failed'; s: number }
  | {
      kind: 'ns';
      s: number;
      state: 'ready' | 'terminating' | 'missing';
      uid: string | undefined;
      system: boolean;
      adopted: boolean;
    }
  | { kind: 'resend'; index: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('started' as const), s: fc.nat(5), policy: fc.boolean() }),
  fc.record({
    kind: fc.constantFrom('heartbeat' as const, 'action' as const, 'completed' as const, 'failed' as const),
    s: fc.nat(5),
  }),
  fc.record({
    kind: fc.constant('ns' as const),
    s: fc.nat(5),
    state: fc.constantFrom('ready' as const, 'terminating' as const, 'missing' as const),
    uid: fc.constantFrom(undefined, 'uid-a', 'uid-b', 'uid-c'),
    system: fc.boolean(),
    adopted: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('resend' as const), index: fc.nat(40) }),
);

/** The events of a scenario: six sessions of three users in two namespaces (shared environments). */
function eventsOf(project: string, steps: Step[]): TendEvent[] {
  const sessions = Array.from({ length: 6 }, (_, i) =>
    session({
      project,
      user: ['ann', 'bob', 'cid'][i % 3],
      namespace: `${project}-${i % 2 ? 'one' : 'two'}`,
      command: i % 2 ? 'test' : 'deploy',
    }),
  );
  const events: TendEvent[] = [];
  for (const step of steps) {
    if (step.kind === 'resend') {
      if (events.length > 0) events.push(events[step.index % events.length]!);
      continue;
    }
    const a = sessions[step.s]!;
    switch (step.kind) {
      case 'started':
        events.push(a.started(step.policy ? { afterInactivity: '8h', action: 'delete' } : undefined));
        break;
      case 'heartbeat':
        events.push(a.heartbeat());
        break;
      case 'action':
        events.push(a.action());
        break;
      case 'completed':
        events.push(a.completed());
        break;
      case 'failed':
        events.push(a.failed());
        break;
      case 'ns':
        events.push(
          a.ns(step.state, {
            uid: step.uid,
            ...(step.system ? { name: 'tend-system', role: 'system' as const } : {}),
            cause: step.state === 'ready' ? 'observed' : 'deleted',
            ...(step.adopted ? { detail: { adopted: true } } : {}),
          }),
        );
        break;
    }
  }
  return events;
}

/** The registry of one project, without generated ids (environments named by their identity). */
async function registryOf(database: ServerDatabase, project: string, eventIds: string[]) {
  const db = database.db;
  const environments = await db
    .selectFrom('environments')
    .selectAll()
    .where('project', '=', project)
    .execute();
  const keyOf = new Map(environments.map((e) => [e.id, `${e.project}/${e.name}/${e.namespace}`]));
  const envKey = (id: string | null) => (id === null ? null : (keyOf.get(id) ?? `unknown ${id}`));
  const resources = environments.length
    ? await db
        .selectFrom('resources')
        .selectAll()
        .where(
          'environment_id',
          'in',
          environments.map((e) => e.id),
        )
        .execute()
    : [];
  const ids = [...new Set(eventIds)];
  const events = await db.selectFrom('events').selectAll().where('id', 'in', ids).execute();
  const sessionIds = [...new Set(events.map((e) => e.session_id))];
  const sessions = sessionIds.length
    ? await db.selectFrom('sessions').selectAll().where('id', 'in', sessionIds).execute()
    : [];
  const sortBy = <T>(rows: T[], key: (r: T) => string) =>
    [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return {
    environments: sortBy(
      environments.map(({ id, ...e }) => ({ key: envKey(id), ...e })),
      (e) => e.key!,
    ),
    resources: sortBy(
      resources.map(({ id: _id, environment_id, ...r }) => ({ environment: envKey(environment_id), ...r })),
      (r) => `${r.environment} ${r.namespace_name} ${String(r.generation).padStart(4, '0')}`,
    ),
    sessions: sortBy(
      sessions.map(({ environment_id, ...s }) => ({ ...s, environment: envKey(environment_id) })),
      (s) => s.id,
    ),
    events: sortBy(
      events.map(({ environment_id, ...e }) => ({ ...e, environment: envKey(environment_id) })),
      (e) => e.id,
    ),
  };
}

/** Consecutive batches: a cut after event i when cuts[i]. */
function cut<T>(items: T[], cuts: boolean[]): T[][] {
  const batches: T[][] = [[]];
  items.forEach((item, i) => {
    batches[batches.length - 1]!.push(item);
    if (cuts[i % Math.max(1, cuts.length)] && i < items.length - 1) batches.push([]);
  });
  return batches;
}

describe.each(dialects)('batching on %s', (dialect) => {
  let testDb: TestDatabase;
  let database: ServerDatabase;
  let run = 0;
  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = await testDb.open();
    await migrateToLatest(database);
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  /** Ingests the batches; the registry of their project. */
  const ingest = async (project: string, batches: TendEvent[][]) => {
    for (const batch of batches) await ingestEvents(database.db, database.dialect, batch, now);
    return registryOf(
      database,
      project,
      batches.flat().map((e) => e.id),
    );
  };

  /**
   * The events of the template project as events of another one: project renamed, event and
   * session ids given a prefix of their own (ULIDs of one run share their first two characters,
   * so they stay distinct and in the same order).
   */
  const copy = (events: TendEvent[], project: string, prefix: string): TendEvent[] =>
    events.map(
      (e) =>
        JSON.parse(
          JSON.stringify({
            ...e,
            id: prefix + e.id.slice(2),
            sessionId: prefix + e.sessionId.slice(2),
          }).replaceAll('tmpl', project),
        ) as TendEvent,
    );

  /** A copy's registry with its project name and id prefix blanked, to compare with another. */
  const normalise = (registry: unknown, project: string, prefix: string) =>
    JSON.parse(
      JSON.stringify(registry)
        .replaceAll(project, 'PROJECT')
        .replace(new RegExp(`"${prefix}([0-9A-Z]{24})"`, 'g'), '"__$1"'),
    ) as unknown;

  it('ends in the same registry however the events are cut into batches', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 1, maxLength: 40 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        async (steps, cuts) => {
          run++;
          const events = eventsOf('tmpl', steps);
          if (events.length === 0) return;
          const variants = [
            { project: `p${run}one`, prefix: 'QQ', batches: (e: TendEvent[]) => e.map((x) => [x]) },
            { project: `p${run}all`, prefix: 'RR', batches: (e: TendEvent[]) => [e] },
            { project: `p${run}cut`, prefix: 'SS', batches: (e: TendEvent[]) => cut(e, cuts) },
          ];
          const registries = [];
          for (const v of variants) {
            const registry = await ingest(v.project, v.batches(copy(events, v.project, v.prefix)));
            registries.push(normalise(registry, v.project, v.prefix));
          }
          expect(registries[1]).toEqual(registries[0]);
          expect(registries[2]).toEqual(registries[0]);
        },
      ),
      { numRuns: dialect === 'postgres' ? 25 : 60 },
    );
  });

  it('applies a uid change in the middle of a batch that spans many environments', async () => {
    const project = 'many';
    const sessions = Array.from({ length: 30 }, (_, i) => session({ project, user: `u${i}` }));
    const events: TendEvent[] = sessions.flatMap((a, i) => [
      a.started(),
      a.ns('ready', { uid: `first-${i}` }),
      a.action(),
      ...(i % 3 === 0 ? [a.ns('ready', { uid: `second-${i}` })] : []),
      ...(i % 5 === 0 ? [a.ns('missing', { uid: `second-${i}` }), a.failed()] : [a.completed()]),
    ]);
    // The sessions' events interleaved, each session's in its order, as many CLIs send them.
    const lists = sessions.map((a) => events.filter((e) => e.sessionId === a.sessionId));
    const ordered = Array.from({ length: 7 }, (_, k) => lists.flatMap((l) => (l[k] ? [l[k]] : []))).flat();
    const result = await ingestEvents(database.db, database.dialect, ordered, now);
    expect(result).toEqual({ accepted: ordered.length, duplicates: 0 });
    const registry = await registryOf(
      database,
      project,
      ordered.map((e) => e.id),
    );
    expect(registry.environments).toHaveLength(30);
    for (let i = 0; i < 30; i++) {
      const key = `many/dev/many-u${i}`;
      const env = registry.environments.find((e) => e.key === key)!;
      const generations = registry.resources
        .filter((r) => r.environment === key)
        .map((r) => [r.generation, r.namespace_uid, r.state]);
      if (i % 3 === 0) {
        expect(generations).toEqual([
          [1, `first-${i}`, 'missing'],
          [2, `second-${i}`, i % 5 === 0 ? 'missing' : 'ready'],
        ]);
      } else if (i % 5 === 0) {
        // The uid in the missing event differs: a new generation, born missing.
        expect(generations).toEqual([
          [1, `first-${i}`, 'missing'],
          [2, `second-${i}`, 'missing'],
        ]);
      } else {
        expect(generations).toEqual([[1, `first-${i}`, 'ready']]);
      }
      expect(env.state).toBe(i % 5 === 0 ? 'cleaned' : 'active');
    }
    // The same batch again changes nothing.
    expect(await ingestEvents(database.db, database.dialect, ordered, now)).toEqual({
      accepted: 0,
      duplicates: ordered.length,
    });
    expect(
      await registryOf(
        database,
        project,
        ordered.map((e) => e.id),
      ),
    ).toEqual(registry);
  });

  it('answers batches sent at once as if each were alone: a refused one or a re-sent one changes nothing of the others', async () => {
    // On SQLite, batches that arrive together share a transaction (each in a savepoint): the
    // answers and the registry must be those of the same batches one after another.
    const project = 'together';
    const [a, b, c] = ['ann', 'bob', 'cid'].map((user) => session({ project, user }));
    const first = [a!.started(), a!.ns('ready', { uid: 'ua' }), a!.action()];
    const bStarted = b!.started();
    const third = [c!.started(), c!.ns('ready', { uid: 'uc' })];
    await ingestEvents(database.db, database.dialect, [bStarted], now);
    const intruder = session({ project: 'other', user: 'eve' });
    // Another project's event naming bob's session: 403, and the rest of its batch not stored.
    const refused = [intruder.started(), { ...intruder.heartbeat(), sessionId: b!.sessionId }];
    const resent = [...first.slice(1), a!.completed()];
    const outcomes = await Promise.allSettled([
      ingestEvents(database.db, database.dialect, first, now),
      ingestEvents(database.db, database.dialect, refused, now),
      ingestEvents(database.db, database.dialect, resent, now),
      ingestEvents(database.db, database.dialect, third, now),
      ingestEvents(database.db, database.dialect, first, now),
    ]);
    const answers = outcomes.map((o) =>
      o.status === 'fulfilled' ? o.value : (o.reason as { code?: string }).code,
    );
    expect(answers[1]).toBe('TEND_AUTH_FORBIDDEN');
    if (dialect === 'sqlite') {
      // One writer: the batches are written in the order they came, as if one after another.
      expect(answers).toEqual([
        { accepted: 3, duplicates: 0 },
        'TEND_AUTH_FORBIDDEN',
        { accepted: 1, duplicates: 2 },
        { accepted: 2, duplicates: 0 },
        { accepted: 0, duplicates: 3 },
      ]);
    }
    // Each new event stored exactly once, whichever batch stored it.
    const accepted = outcomes.map((o) => (o.status === 'fulfilled' ? o.value.accepted : 0));
    expect(accepted.reduce((n, x) => n + x, 0)).toBe(6);
    const intruders = await database.db
      .selectFrom('events')
      .select('id')
      .where('session_id', '=', intruder.sessionId)
      .execute();
    expect(intruders).toEqual([]);
    const registry = await registryOf(
      database,
      project,
      [...first, ...resent, bStarted, ...third].map((e) => e.id),
    );
    expect(registry.sessions.map((s) => [s.user_name, s.status])).toEqual(
      expect.arrayContaining([
        ['ann', 'completed'],
        ['bob', 'running'],
        ['cid', 'running'],
      ]),
    );
    expect(registry.resources.map((r) => [r.namespace_uid, r.generation, r.state])).toEqual(
      expect.arrayContaining([
        ['ua', 1, 'ready'],
        ['uc', 1, 'ready'],
      ]),
    );
  });
});

describe('two replicas on one PostgreSQL', () => {
  let testDb: TestDatabase;
  let replicas: ServerDatabase[];
  beforeAll(async () => {
    testDb = await createTestDatabase('postgres');
    replicas = [await testDb.open(), await testDb.open()];
    await migrateToLatest(replicas[0]!);
  });
  afterAll(async () => {
    for (const r of replicas) await r.close();
    await testDb.drop();
  });

  it('stores each event once when overlapping batches race for the same new environments', async () => {
    // 24 sessions in 4 environments, their events interleaved; batch i overlaps batch i + 1 by
    // half, and every batch goes to both replicas at once: some events of a batch are new, some
    // are being stored by the other replica, and new environments are created concurrently.
    const sessions = Array.from({ length: 24 }, (_, i) =>
      session({ project: 'race', user: `u${i % 4}`, namespace: `race-${i % 4}` }),
    );
    const lists = sessions.map((a, i) => [
      a.started(),
      a.ns('ready', { uid: `uid-${i % 4}` }),
      a.heartbeat(),
      a.action(),
      a.completed(),
    ]);
    const events = Array.from({ length: 5 }, (_, k) => lists.map((l) => l[k]!)).flat();
    const batches: TendEvent[][] = [];
    for (let i = 0; i < events.length; i += 10) batches.push(events.slice(i, i + 20));
    const results = await Promise.all(
      batches.flatMap((batch, i) =>
        replicas.map((r, j) =>
          ingestEvents(r.db, r.dialect, (i + j) % 2 ? [...batch].reverse() : batch, now),
        ),
      ),
    );
    expect(results.reduce((n, r) => n + r.accepted, 0)).toBe(events.length);
    const db = replicas[0]!.db;
    const count = (table: 'events' | 'environments' | 'sessions') => countRows(db, table);
    expect(await count('events')).toBe(events.length);
    expect(await count('environments')).toBe(4);
    expect(await count('sessions')).toBe(24);
    const resources = await db.selectFrom('resources').select(['namespace_name', 'generation']).execute();
    // One namespace (one uid) per environment: one resource each, whoever stored it.
    expect(resources.map((r) => `${r.namespace_name}#${r.generation}`).sort()).toEqual(
      [0, 1, 2, 3].map((n) => `race-${n}#1`),
    );
  });

  it('creates an environment once when disjoint batches create it at the same moment', async () => {
    // Eight batches of different sessions, all new to the same two environments, four to each
    // replica at once: the environment inserts collide, the losers retry and find the winner's.
    const batches = Array.from({ length: 8 }, (_, i) => {
      const a = session({ project: 'fresh', user: `f${i}`, namespace: `fresh-${i % 2}` });
      return [a.started(), a.ns('ready', { uid: `fresh-uid-${i % 2}` }), a.action(), a.completed()];
    });
    const results = await Promise.all(
      batches.map((batch, i) => {
        const r = replicas[i % 2]!;
        return ingestEvents(r.db, r.dialect, batch, now);
      }),
    );
    expect(results.reduce((n, r) => n + r.accepted, 0)).toBe(32);
    const db = replicas[0]!.db;
    const environments = await db
      .selectFrom('environments')
      .select('id')
      .where('project', '=', 'fresh')
      .execute();
    expect(environments).toHaveLength(2);
    const resources = await db
      .selectFrom('resources')
      .select(['namespace_name', 'generation'])
      .where(
        'environment_id',
        'in',
        environments.map((e) => e.id),
      )
      .execute();
    expect(resources.map((r) => `${r.namespace_name}#${r.generation}`).sort()).toEqual([
      'fresh-0#1',
      'fresh-1#1',
    ]);
    const sessions = await db
      .selectFrom('sessions')
      .select('environment_id')
      .where('project', '=', 'fresh')
      .execute();
    expect(sessions).toHaveLength(8);
    for (const s of sessions) expect(environments.map((e) => e.id)).toContain(s.environment_id);
  });
});
