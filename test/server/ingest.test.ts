import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writerThreadOf } from '../../src/server/db/sqlite-writer.js';
import {
  countRows,
  createTestServer,
  dialects,
  newId,
  postEvents,
  session,
  type TestServer,
} from './helpers.js';

describe.each(dialects)('ingest on %s', (dialect) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer(dialect, { bodyLimit: 256 * 1024 });
  });
  afterAll(async () => s.close());

  const count = (table: 'events' | 'environments' | 'sessions' | 'resources') =>
    countRows(s.database.db, table);

  it('accepts a valid batch and answers with the counts', async () => {
    const a = session({ user: 'ingest-ok' });
    const res = await postEvents(s, [a.started(), a.ns('ready', { uid: 'u-1' }), a.action(), a.completed()]);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ accepted: 4, duplicates: 0 });
  });

  it('is idempotent: the same batch three times is stored once and changes nothing', async () => {
    const a = session({ user: 'idem' });
    const batch = [a.started(), a.ns('ready', { uid: 'u-idem' }), a.heartbeat()];
    const before = await count('events');
    const first = await postEvents(s, batch);
    expect(first.json()).toEqual({ accepted: 3, duplicates: 0 });
    const env = await s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('namespace', '=', a.namespace)
      .executeTakeFirstOrThrow();
    for (let i = 0; i < 2; i++) {
      const again = await postEvents(s, batch);
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual({ accepted: 0, duplicates: 3 });
    }
    expect(await count('events')).toBe(before + 3);
    const after = await s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('namespace', '=', a.namespace)
      .executeTakeFirstOrThrow();
    expect(after).toEqual(env);
  });

  it('stores each payload as sent, whether the registry reads it or not', async () => {
    const a = session({ user: 'payload-text' });
    const failedAction = a.action('deploy.web');
    Object.assign(failedAction.payload, {
      state: 'failed',
      error: { code: 'TEND_EXEC_FAILED', message: 'é ✓ "quoted" \\ \n\u2028 <' },
    });
    const batch = [
      a.started(),
      a.ns('ready', { uid: 'u-payload' }),
      a.action('deploy.api'),
      failedAction,
      a.heartbeat(),
      a.failed(),
    ];
    expect((await postEvents(s, batch)).json()).toEqual({ accepted: 6, duplicates: 0 });
    const rows = await s.database.db
      .selectFrom('events')
      .select(['id', 'type', 'session_id', 'payload'])
      .where('session_id', '=', a.sessionId)
      .orderBy('id')
      .execute();
    expect(rows.map((r) => ({ id: r.id, type: r.type, payload: JSON.parse(r.payload) as unknown }))).toEqual(
      batch
        .map((e) => ({ id: e.id, type: e.type, payload: e.payload }))
        .sort((x, y) => (x.id < y.id ? -1 : 1)),
    );
    // The registry read the payloads it needs: the session failed, the namespace is a resource.
    const stored = await s.database.db
      .selectFrom('sessions')
      .select(['status', 'error_code', 'host_id'])
      .where('id', '=', a.sessionId)
      .executeTakeFirstOrThrow();
    expect(stored.status).toBe('failed');
    expect(stored.host_id).not.toBeNull();
    const resource = await s.database.db
      .selectFrom('resources')
      .select(['namespace_uid', 'state'])
      .where('namespace_name', '=', a.namespace)
      .executeTakeFirstOrThrow();
    expect(resource).toEqual({ namespace_uid: 'u-payload', state: 'ready' });
  });

  it('counts a repeated id inside one batch as a duplicate', async () => {
    const a = session({ user: 'dup-in-batch' });
    const e = a.started();
    const res = await postEvents(s, [e, e, a.heartbeat()]);
    expect(res.json()).toEqual({ accepted: 2, duplicates: 1 });
  });

  it('stores two overlapping batches sent concurrently exactly once', async () => {
    const a = session({ user: 'concurrent' });
    const shared = [
      a.started(),
      a.ns('ready', { uid: 'u-c' }),
      ...Array.from({ length: 50 }, () => a.heartbeat()),
    ];
    const onlyA = [a.action('deploy.a')];
    const onlyB = [a.action('deploy.b')];
    const before = await count('events');
    const [r1, r2] = await Promise.all([
      postEvents(s, [...shared, ...onlyA]),
      postEvents(s, [...onlyB, ...shared]),
    ]);
    expect(r1.statusCode).toBe(200);
    expect(r2.statusCode).toBe(200);
    const b1 = r1.json<{ accepted: number; duplicates: number }>();
    const b2 = r2.json<{ accepted: number; duplicates: number }>();
    expect(b1.accepted + b2.accepted).toBe(shared.length + 2);
    expect(b1.duplicates + b2.duplicates).toBe(shared.length);
    expect(await count('events')).toBe(before + shared.length + 2);
    const envs = await s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('namespace', '=', a.namespace)
      .execute();
    expect(envs).toHaveLength(1);
    const resources = await s.database.db
      .selectFrom('resources')
      .selectAll()
      .where('namespace_name', '=', a.namespace)
      .execute();
    expect(resources).toHaveLength(1);
  });

  it('applies only the new events of a batch that is partly stored already', async () => {
    const a = session({ user: 'partly' });
    const started = a.started();
    const first = a.ns('ready', { uid: 'u-partly-1' });
    expect((await postEvents(s, [started, first])).json()).toEqual({ accepted: 2, duplicates: 0 });
    // The stored namespace event again, then the namespace re-created with a new uid.
    const recreated = a.ns('ready', { uid: 'u-partly-2' });
    const res = await postEvents(s, [first, recreated, a.completed()]);
    expect(res.json()).toEqual({ accepted: 2, duplicates: 1 });
    const resources = await s.database.db
      .selectFrom('resources')
      .select(['generation', 'namespace_uid', 'state'])
      .where('namespace_name', '=', a.namespace)
      .orderBy('generation')
      .execute();
    // One new generation for the new uid; the re-sent event changed nothing.
    expect(resources).toEqual([
      { generation: 1, namespace_uid: 'u-partly-1', state: 'missing' },
      { generation: 2, namespace_uid: 'u-partly-2', state: 'ready' },
    ]);
    const stored = await s.database.db
      .selectFrom('sessions')
      .select('status')
      .where('id', '=', a.sessionId)
      .executeTakeFirstOrThrow();
    expect(stored.status).toBe('completed');
  });

  it('stores a session whose actions failed as failed, not completed', async () => {
    const ok = session({ user: 'actions-ok' });
    const bad = session({ user: 'actions-failed' });
    const failedEnd = {
      ...bad.completed(),
      payload: { durationMs: 900, succeeded: 1, cached: 0, failed: 1, aborted: 2 },
    };
    expect((await postEvents(s, [ok.started(), ok.completed(), bad.started(), failedEnd])).statusCode).toBe(
      200,
    );
    const rows = await s.database.db
      .selectFrom('sessions')
      .select(['id', 'status', 'error_code', 'error_message'])
      .where('id', 'in', [ok.sessionId, bad.sessionId])
      .execute();
    const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
    expect(byId[ok.sessionId]).toMatchObject({ status: 'completed', error_code: null });
    expect(byId[bad.sessionId]).toMatchObject({
      status: 'failed',
      error_code: 'TEND_ACTION_FAILED',
      error_message: '1 action(s) failed, 2 aborted',
    });
  });

  it('rejects an oversize body with 413 naming the limit', async () => {
    const a = session({ user: 'big' });
    const events = Array.from({ length: 3000 }, () => a.heartbeat());
    const res = await postEvents(s, events);
    expect(res.statusCode).toBe(413);
    const body = res.json<{ error: { code: string; message: string } }>();
    expect(body.error.code).toBe('TEND_SERVER_PAYLOAD_TOO_LARGE');
    expect(body.error.message).toContain('256 KiB');
    expect(body.error.message).toContain('262144 bytes');
  });

  it('rejects malformed JSON with 400', async () => {
    const res = await s.app.inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: { ...s.auth(s.tokens.ingest), 'content-type': 'application/json' },
      payload: '{"events": [ {"id": ',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: { code: string } }>().error.code).toBe('TEND_SERVER_BAD_REQUEST');
  });

  it.each([
    ['a body that is not an object', [1, 2, 3], /JSON object/],
    ['a body without events', { items: [] }, /"events" array/],
    ['an extra top-level field', { events: [], extra: 1 }, /unknown field "extra"/],
  ])('rejects %s with 400', async (_name, payload, message) => {
    const res = await s.app.inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: s.auth(s.tokens.ingest),
      payload: payload as object,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: { message: string } }>().error.message).toMatch(message);
  });

  it('rejects the whole batch when one event breaks the schema, naming index and field', async () => {
    const a = session({ user: 'schema' });
    const bad = a.ns('ready');
    (bad.payload as Record<string, unknown>).state = 'exploded';
    const before = await count('events');
    const res = await postEvents(s, [a.started(), a.heartbeat(), bad]);
    expect(res.statusCode).toBe(400);
    const body = res.json<{
      error: { code: string; message: string; detail: { index: number; path: string } };
    }>();
    expect(body.error.code).toBe('TEND_EVENT_INVALID');
    expect(body.error.message).toMatch(/^events\[2\]\/payload\/state/);
    expect(body.error.detail.index).toBe(2);
    expect(body.error.detail.path).toBe('/payload/state');
    expect(await count('events')).toBe(before);
  });

  it.each([
    ['a bad id', (e: Record<string, unknown>) => (e.id = 'not-a-ulid'), '/id'],
    ['a bad timestamp', (e: Record<string, unknown>) => (e.timestamp = 'yesterday'), '/timestamp'],
    ['an extra envelope field', (e: Record<string, unknown>) => (e.token = 'x'), '/token'],
    [
      'an extra payload field',
      (e: Record<string, unknown>) => ((e.payload as Record<string, unknown>).x = 1),
      '/payload',
    ],
  ])('rejects an event with %s', async (_name, mutate, path) => {
    const e = session().heartbeat() as unknown as Record<string, unknown>;
    mutate(e);
    const res = await postEvents(s, [e]);
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: { detail: { path: string } } }>().error.detail.path).toContain(path);
  });

  it('rejects an unknown event type, naming it', async () => {
    const res = await postEvents(s, [
      {
        id: newId(),
        type: 'rocketLaunched',
        sessionId: newId(),
        timestamp: new Date().toISOString(),
        payload: {},
      },
    ]);
    expect(res.statusCode).toBe(400);
    const body = res.json<{ error: { code: string; message: string } }>();
    expect(body.error.code).toBe('TEND_EVENT_INVALID');
    expect(body.error.message).toBe('events[0]: unknown event type "rocketLaunched"');
  });

  it('accepts an empty batch', async () => {
    const res = await postEvents(s, []);
    expect(res.json()).toEqual({ accepted: 0, duplicates: 0 });
  });

  it('measures activity by the server receive time, not the client clock', async () => {
    const a = session({ user: 'clock' });
    const e = a.started();
    e.timestamp = '1999-01-01T00:00:00.000Z';
    const before = new Date().toISOString();
    await postEvents(s, [e]);
    const env = await s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('namespace', '=', a.namespace)
      .executeTakeFirstOrThrow();
    expect(env.last_activity_at >= before).toBe(true);
    const stored = await s.database.db
      .selectFrom('events')
      .selectAll()
      .where('id', '=', e.id)
      .executeTakeFirstOrThrow();
    expect(stored.client_timestamp).toBe('1999-01-01T00:00:00.000Z');
    expect(stored.received_at).toBe(env.last_activity_at);
  });
});

describe.each(dialects)('ingest limits on %s with the default body limit', (dialect) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer(dialect);
  });
  afterAll(async () => s.close());

  it('accepts 10,000 events in one batch', async () => {
    const a = session({ user: 'bulk' });
    const events = [a.started(), ...Array.from({ length: 9_999 }, () => a.heartbeat())];
    const res = await postEvents(s, events);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ accepted: 10_000, duplicates: 0 });
  });

  it('rejects 10,001 events with 413 naming the per-batch limit', async () => {
    const a = session({ user: 'count-limit' });
    const events = Array.from({ length: 10_001 }, () => a.heartbeat());
    const res = await postEvents(s, events);
    expect(res.statusCode).toBe(413);
    expect(res.json<{ error: { message: string } }>().error.message).toBe(
      'the batch has 10001 events; the limit is 10000 per batch',
    );
  });
});

describe('ingest on sqlite when the writer thread stops', () => {
  it('answers 503 TEND_DATABASE at once, neither hanging nor storing half a batch', async () => {
    const s = await createTestServer('sqlite');
    try {
      const a = session({ user: 'writer-gone' });
      expect((await postEvents(s, [a.started()])).statusCode).toBe(200);
      const thread = writerThreadOf(s.database.db);
      expect(thread).toBeDefined();
      // The fault a crashed thread would be: the worker ends under the server.
      const worker = (thread as unknown as { worker: Worker }).worker;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      await worker.terminate();
      await exited;
      const res = await postEvents(s, [a.ns('ready', { uid: 'u-gone' }), a.completed()]);
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ error: { code: 'TEND_DATABASE' } });
      // Reads go through their own connection: what was acknowledged is there, nothing more.
      expect(await countRows(s.database.reader, 'events')).toBe(1);
    } finally {
      await s.close().catch(() => undefined);
    }
  });
});
