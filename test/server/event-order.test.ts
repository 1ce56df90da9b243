/**
 * The order of a record's changes: an event that carries its host's sequence and was taken before
 * the last one applied to a resource (or before the sessionStarted that set an environment's
 * policy) changes nothing when it arrives late; events without one (older clients) and numbers
 * of different counters keep arrival order. A malformed sequence is refused with 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventSequence, TendEvent } from '../../src/events/catalog.js';
import { createTestServer, dialects, newId, postEvents, session, type TestServer } from './helpers.js';

describe.each(dialects)('the order of events on %s', (dialect) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer(dialect);
  });
  afterAll(async () => s.close());

  /** A host's counter: `at(n)` stamps an event with its number n. */
  const counter = () => {
    const id = newId();
    return <E extends TendEvent>(number: number, e: E): E => ({ ...e, sequence: { counter: id, number } });
  };

  const post = async (events: TendEvent[]) => {
    const res = await postEvents(s, events);
    expect(res.statusCode, res.body).toBe(200);
  };

  const environmentOf = (namespace: string) =>
    s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('namespace', '=', namespace)
      .executeTakeFirstOrThrow();

  const resourcesOf = async (namespace: string) => {
    const env = await environmentOf(namespace);
    const rows = await s.database.db
      .selectFrom('resources')
      .select(['namespace_uid', 'state', 'generation', 'ownership'])
      .where('environment_id', '=', env.id)
      .orderBy('generation')
      .execute();
    return { env, rows: rows.map((r) => [r.namespace_uid, r.state, Number(r.generation), r.ownership]) };
  };

  /** deploy (uid A) then cleanup (A missing) by the older sessions; deploy (uid C) by the newer one. */
  function offlineWork(user: string, stamp: (n: number, e: TendEvent) => TendEvent = (_, e) => e) {
    const older = session({ user });
    const cleanup = session({ user, command: 'cleanup' });
    const newer = session({ user });
    const early = [
      stamp(1, older.started()),
      stamp(2, older.ns('ready', { uid: 'uid-a' })),
      stamp(3, cleanup.started()),
      stamp(4, cleanup.ns('missing', { uid: 'uid-a' })),
    ];
    const late = [stamp(5, newer.started()), stamp(6, newer.ns('ready', { uid: 'uid-c' }))];
    return { namespace: newer.namespace, early, late };
  }

  it('a late replay of older sessions moves no resource backwards', async () => {
    const at = counter();
    const { namespace, early, late } = offlineWork('late-replay', at);
    await post(late);
    await post(early);
    const { env, rows } = await resourcesOf(namespace);
    expect(rows).toEqual([['uid-c', 'ready', 1, 'owned']]);
    expect(env.state).toBe('active');
  });

  it('the same late replay in one batch, newest first, also changes nothing', async () => {
    const at = counter();
    const { namespace, early, late } = offlineWork('late-in-batch', at);
    await post([...late, ...early]);
    expect((await resourcesOf(namespace)).rows).toEqual([['uid-c', 'ready', 1, 'owned']]);
  });

  it('in order, the same events record every generation', async () => {
    const at = counter();
    const { namespace, early, late } = offlineWork('in-order', at);
    await post(early);
    await post(late);
    const { env, rows } = await resourcesOf(namespace);
    expect(rows).toEqual([
      ['uid-a', 'missing', 1, 'owned'],
      ['uid-c', 'ready', 2, 'owned'],
    ]);
    expect(env.state).toBe('active');
  });

  it('events without a sequence (an older client) are applied in arrival order, as before', async () => {
    const { namespace, early, late } = offlineWork('old-client');
    await post(late);
    await post(early);
    const { env, rows } = await resourcesOf(namespace);
    // What arrived last is what the record says: the order the client sends in is all there is.
    expect(rows).toEqual([
      ['uid-c', 'missing', 1, 'owned'],
      ['uid-a', 'missing', 2, 'owned'],
    ]);
    expect(env.state).toBe('cleaned');
  });

  it('numbers of different counters are not compared: arrival order', async () => {
    const first = counter();
    const second = counter();
    const { namespace, early, late } = offlineWork('two-counters', first);
    await post(late.map((e, i) => second(i, e)));
    await post(early);
    expect((await resourcesOf(namespace)).env.state).toBe('cleaned');
  });

  it('a late sessionStarted changes neither the policy nor the pull request', async () => {
    const at = counter();
    const older = session({ user: 'late-policy' });
    const newer = session({ user: 'late-policy' });
    const newest = session({ user: 'late-policy' });
    await post([
      at(7, newer.started({ afterInactivity: '1h', action: 'delete' }, { repository: 'o/r', number: 2 })),
    ]);
    await post([
      at(3, older.started({ afterInactivity: '8h', action: 'pause' }, { repository: 'o/r', number: 1 })),
    ]);
    let env = await environmentOf(newer.namespace);
    expect([env.policy_after_inactivity, env.policy_action, env.pull_request_number]).toEqual([
      '1h',
      'delete',
      2,
    ]);
    expect([env.started_sequence_number]).toEqual([7]);

    // A newer one still does; one without a sequence too (arrival order).
    await post([at(9, newest.started({ afterInactivity: '2h', action: 'delete' }))]);
    env = await environmentOf(newer.namespace);
    expect([env.policy_after_inactivity, env.pull_request_number]).toEqual(['2h', null]);
    await post([session({ user: 'late-policy' }).started({ afterInactivity: '3h', action: 'delete' })]);
    expect((await environmentOf(newer.namespace)).policy_after_inactivity).toBe('3h');
  });

  it('in one batch, the policy of the session its host started last wins', async () => {
    const at = counter();
    const older = session({ user: 'batch-policy' });
    const newer = session({ user: 'batch-policy' });
    await post([
      at(4, newer.started({ afterInactivity: '1h', action: 'delete' })),
      at(2, older.started({ afterInactivity: '8h', action: 'delete' })),
    ]);
    expect((await environmentOf(newer.namespace)).policy_after_inactivity).toBe('1h');
  });

  it.each([
    ['a counter that is not a ULID', { counter: 'host-1', number: 1 }, '/sequence/counter'],
    ['a negative number', { counter: newId(), number: -1 }, '/sequence/number'],
    ['a fractional number', { counter: newId(), number: 1.5 }, '/sequence/number'],
    ['a number beyond 2^53 - 1', { counter: newId(), number: 2 ** 53 }, '/sequence/number'],
    ['a number as text', { counter: newId(), number: '1' }, '/sequence/number'],
    ['an extra field', { counter: newId(), number: 1, clock: 5 }, '/sequence'],
    ['no number', { counter: newId() }, '/sequence'],
    ['not an object', 17, '/sequence'],
  ])('refuses a sequence with %s, storing nothing', async (_, sequence, path) => {
    const a = session({ user: 'bad-sequence' });
    const event = { ...a.started(), sequence: sequence as unknown as EventSequence };
    const res = await postEvents(s, [a.heartbeat(), event]);
    expect(res.statusCode).toBe(400);
    const body = res.json<{ error: { code: string; detail: { index: number; path: string } } }>();
    expect(body.error.code).toBe('TEND_EVENT_INVALID');
    expect(body.error.detail.index).toBe(1);
    expect(body.error.detail.path).toContain(path);
    const stored = await s.database.db
      .selectFrom('events')
      .select('id')
      .where('session_id', '=', a.sessionId)
      .execute();
    expect(stored).toEqual([]);
  });
});
