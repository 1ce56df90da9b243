/**
 * The server answers 400, never 500, for input it cannot store — on both databases alike: NUL
 * characters and lone UTF-16 surrogates anywhere in an event (value or key), values nested deeper
 * than the limit (a 20 KB body of nested arrays must not overflow the stack), impossible
 * timestamps, over-long `detail` keys, and query or path values the database cannot take
 * (`limit=Infinity`, `staleSince=999999999d`, NUL). A refused batch stores nothing, and the
 * environment keeps accepting batches afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPayload, isDateTime } from '../../src/events/catalog.js';
import { maxNestingDepth } from '../../src/storable.js';
import {
  countRows,
  createTestServer,
  dialects,
  getJson,
  postEvents,
  session,
  type TestServer,
} from './helpers.js';

interface ErrorBody {
  error: { code: string; message: string; detail?: { index?: number; path?: string } };
}

describe.each(dialects)('input the server cannot store, on %s', (dialect) => {
  let s: TestServer;
  let envId: string;
  beforeAll(async () => {
    s = await createTestServer(dialect);
    const a = session({ user: 'existing' });
    await postEvents(s, [a.started(), a.ns('ready', { uid: 'u-existing' })]);
    envId = (await s.database.db.selectFrom('environments').select('id').executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => s.close());

  const stored = () => countRows(s.database.db, 'events');

  /** Posts a valid event, then the bad one: the batch is refused naming events[1] and the field. */
  const expectRefused = async (
    bad: (a: ReturnType<typeof session>) => unknown,
    path: string,
    message: RegExp,
  ) => {
    const a = session({ user: `refused-${Math.random().toString(36).slice(2, 8)}` });
    const before = await stored();
    const res = await postEvents(s, [a.started(), bad(a)]);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json<ErrorBody>();
    expect(body.error.code).toBe('TEND_EVENT_INVALID');
    expect(body.error.message).toMatch(/^events\[1\]/);
    expect(body.error.message).toMatch(message);
    expect(body.error.detail).toMatchObject({ index: 1, path });
    expect(await stored()).toBe(before);
    // The same session and environment still take a clean batch.
    const again = await postEvents(s, [a.started(), a.heartbeat()]);
    expect(again.statusCode, again.body).toBe(200);
  };

  it('refuses a NUL character in a value with 400 naming the event and the field', async () => {
    await expectRefused(
      (a) => {
        const e = a.started();
        (e.payload as { user: string }).user = 'al\u0000ice';
        return e;
      },
      '/payload/user',
      /NUL character/,
    );
  });

  it('refuses a NUL character in a detail key and deep inside detail', async () => {
    await expectRefused(
      (a) => a.ns('ready', { detail: { 'a\u0000b': 1 } }),
      '/payload/detail/a\\u0000b',
      /key/,
    );
    await expectRefused(
      (a) => a.ns('ready', { detail: { list: [{ note: 'x\u0000' }] } }),
      '/payload/detail/list/0/note',
      /NUL character/,
    );
  });

  it('refuses lone surrogates (they would be stored as U+FFFD) but keeps surrogate pairs', async () => {
    await expectRefused(
      (a) => {
        const e = a.started();
        (e.payload as { project: string }).project = 'shop\ud800';
        return e;
      },
      '/payload/project',
      /lone UTF-16 surrogate/,
    );
    await expectRefused(
      (a) => a.ns('ready', { detail: { note: '\udc00x' } }),
      '/payload/detail/note',
      /surrogate/,
    );
    const a = session({ user: 'emoji-\ud83d\ude00' });
    expect((await postEvents(s, [a.started(), a.ns('ready', { uid: 'u-emoji' })])).statusCode).toBe(200);
    const row = await s.database.db
      .selectFrom('sessions')
      .select('user_name')
      .where('id', '=', a.sessionId)
      .executeTakeFirstOrThrow();
    expect(row.user_name).toBe('emoji-\ud83d\ude00');
  });

  it('refuses detail nested deeper than the limit, even 10,000 levels in a 20 KB body', async () => {
    const a = session({ user: 'deep' });
    const before = await stored();
    const marker = '"NESTED"';
    const body = JSON.stringify({ events: [a.ns('ready', { detail: { x: 'NESTED' } })] }).replace(
      marker,
      '['.repeat(10_000) + ']'.repeat(10_000),
    );
    expect(body.length).toBeGreaterThan(20_000);
    const res = await s.app.inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: { ...s.auth(s.tokens.ingest), 'content-type': 'application/json' },
      payload: body,
    });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
    expect(res.json<ErrorBody>().error.message).toMatch(
      new RegExp(`^events\\[0\\]/payload/detail/x/0/.*nested deeper than ${maxNestingDepth} levels$`),
    );
    expect(await stored()).toBe(before);

    // Nesting below the limit is accepted: the envelope, payload and detail take 3 levels.
    let nested: unknown = 'leaf';
    for (let i = 0; i < maxNestingDepth - 4; i++) nested = [nested];
    const b = session({ user: 'deep-ok' });
    const ok = await postEvents(s, [b.started(), b.ns('ready', { detail: { x: nested } })]);
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it.each([
    [
      'a wait over 365 days',
      { afterInactivity: '999999999999999d', action: 'delete' },
      '/payload/cleanupPolicy/afterInactivity',
    ],
    ['366 days', { afterInactivity: '366d', action: 'delete' }, '/payload/cleanupPolicy/afterInactivity'],
    [
      'a warning 400 days ahead',
      { afterInactivity: '8h', action: 'delete', warnBefore: '400d' },
      '/payload/cleanupPolicy/warnBefore',
    ],
    [
      'a time zone that does not exist',
      {
        afterInactivity: '8h',
        action: 'pause',
        schedule: { sleepAt: '20:00', wakeAt: '08:00', weekdays: ['mon'], timeZone: 'Not/AZone' },
      },
      '/payload/cleanupPolicy/schedule/timeZone',
    ],
  ])('refuses a poison policy: %s', async (_what, policy, path) => {
    await expectRefused(
      (a) => {
        const e = a.started();
        (e.payload as { cleanupPolicy?: unknown }).cleanupPolicy = policy;
        return e;
      },
      path,
      /format|match|characters/,
    );
  });

  it('refuses timestamps that are no real moment', async () => {
    for (const timestamp of [
      '2026-13-45T99:99:99Z',
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00.000Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T00:00:00+24:00',
    ]) {
      await expectRefused((a) => ({ ...a.heartbeat(), timestamp }), '/timestamp', /date-time/);
    }
    const a = session({ user: 'leap' });
    const leap = { ...a.heartbeat(), timestamp: '2024-02-29T23:59:59.999+05:30' };
    expect((await postEvents(s, [a.started(), leap])).statusCode).toBe(200);
  });

  it('refuses many unknown keys with a bad payload with 400 naming the first key, never 500 (the validator keeps only its first errors)', async () => {
    const unknown = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`x${i}`, 1]));
    await expectRefused(
      (a) => ({ ...(a.started() as object), ...unknown, payload: { command: 42 } }),
      '/x0',
      /unknown property/,
    );
    await expectRefused(
      (a) => {
        const event = a.ns('ready') as { payload: Record<string, unknown> };
        return { ...event, payload: { ...event.payload, ...unknown, state: 'bogus' } };
      },
      '/payload/x0',
      /unknown property/,
    );
  });

  it('enforces the declared length of detail keys (256 characters)', async () => {
    const long = 'k'.repeat(257);
    await expectRefused(
      (a) => a.ns('ready', { detail: { [long]: true } }),
      // Named by its first 64 characters, as every path of a refused value (never echoed whole).
      `/payload/detail/${long.slice(0, 64)}`,
      /must not have more than 256 characters/,
    );
    const a = session({ user: 'key-256' });
    const ok = await postEvents(s, [a.started(), a.ns('ready', { detail: { ['k'.repeat(256)]: true } })]);
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('answers 400 for query and path values the database cannot take', async () => {
    const urls = [
      '/api/v1/environments?limit=Infinity',
      '/api/v1/environments?limit=1e400',
      '/api/v1/environments?staleSince=999999999d',
      '/api/v1/environments?project=sh%00op',
      '/api/v1/environments?environment=%00',
      '/api/v1/environments?staleSince=3d%00',
      '/api/v1/environments?cursor=a%00b',
      // A well-formed cursor whose text holds a NUL.
      `/api/v1/environments?cursor=${Buffer.from(JSON.stringify(['2030-01-01T00:00:00.000Z', 'a\u0000b'])).toString('base64url')}`,
      `/api/v1/environments/${envId}%00`,
      '/api/v1/audit?action=keep%00alive',
      '/api/v1/audit?environmentId=%00',
      '/api/v1/audit?before=%00',
      '/api/v1/audit?limit=Infinity',
    ];
    for (const url of urls) {
      const { status, body } = await getJson<ErrorBody>(s, url);
      expect(status, `${url}: ${JSON.stringify(body)}`).toBe(400);
      expect(body.error.code, url).toBe('TEND_SERVER_BAD_REQUEST');
    }
    for (const action of ['protect', 'unprotect', 'keep-alive']) {
      const res = await s.app.inject({
        method: 'POST',
        url: `/api/v1/environments/a%00b/${action}`,
        headers: s.auth(s.tokens.admin),
      });
      expect(res.statusCode, `${action}: ${res.body}`).toBe(400);
    }
    const dashboard = await s.app.inject({ method: 'GET', url: '/?project=%00' });
    expect(dashboard.statusCode).toBe(400);
    // Values it can take still work.
    expect((await getJson(s, '/api/v1/environments?staleSince=365d&limit=500')).status).toBe(200);
    expect((await getJson(s, `/api/v1/environments/${envId}`)).status).toBe(200);
  });
});

describe("the catalogue's format and limit checks (the plugin broker's too)", () => {
  it('takes only timestamps that name a real moment', () => {
    for (const good of [
      '2026-01-01T00:00:00Z',
      '2026-12-31T23:59:59.999Z',
      '2024-02-29T12:00:00+05:30',
      '2000-02-29T00:00:00-23:59',
      new Date().toISOString(),
    ]) {
      expect(isDateTime(good), good).toBe(true);
    }
    for (const bad of [
      '2026-13-45T99:99:99Z',
      '2026-00-10T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '1900-02-29T00:00:00Z',
      '2026-01-01T23:60:00Z',
      '2026-01-01T23:59:60Z',
      '2026-01-01T00:00:00+23:60',
      '2026-01-01 00:00:00Z',
      '2026-01-01T00:00:00',
    ]) {
      expect(isDateTime(bad), bad).toBe(false);
    }
  });

  it('refuses a detail key over 256 characters wherever namespaceStatus is checked', () => {
    const payload = (key: string) => ({
      pluginName: 'p',
      providerName: 'p',
      namespaceName: 'ns',
      state: 'ready',
      role: 'app',
      cause: 'created',
      target: { kind: 'local', hostId: 'h', path: '/x' },
      project: 'shop',
      environment: 'dev',
      detail: { [key]: 1 },
    });
    expect(checkPayload('namespaceStatus', payload('k'.repeat(256)))).toEqual([]);
    expect(checkPayload('namespaceStatus', payload('k'.repeat(257)))).not.toEqual([]);
    expect(checkPayload('namespaceStatus', payload('a\nb'))).toEqual([]);
  });
});

describe.each(dialects)('hostile input to the newer routes, on %s', (dialect) => {
  let s: TestServer;
  let envId: string;
  beforeAll(async () => {
    s = await createTestServer(dialect);
    const a = session({ user: 'existing' });
    await postEvents(s, [a.started(), a.ns('ready', { uid: 'u-existing' })]);
    envId = (await s.database.db.selectFrom('environments').select('id').executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => s.close());

  it('search, the cleanup notice and resume answer 4xx, never 500', async () => {
    const status = async (url: string, token: string, method: 'GET' | 'POST' = 'GET') => {
      const res = await s.app.inject({ method, url, headers: s.auth(token) });
      return `${res.statusCode} ${url}`;
    };
    expect(await status('/api/v1/environments?search=%00', s.tokens.read)).toMatch(/^400 /);
    // A lone surrogate's UTF-8 bytes decode to U+FFFD: an ordinary search that matches nothing.
    expect(await status('/api/v1/environments?search=%ED%A0%80', s.tokens.read)).toMatch(/^200 /);
    expect(await status(`/api/v1/environments?search=${'x'.repeat(201)}`, s.tokens.read)).toMatch(/^400 /);
    // A path that is not UTF-8 once decoded is refused by the router itself, in tend's error shape.
    const undecodable = await s.app.inject({
      url: '/api/v1/environments/%ED%A0%80',
      headers: s.auth(s.tokens.read),
    });
    expect(undecodable.statusCode).toBe(400);
    expect(undecodable.json()).toMatchObject({ error: { code: 'TEND_SERVER_BAD_REQUEST' } });
    const notice = '/api/v1/cleanup/notice?project=p%00&environment=dev&namespace=ns';
    expect(await status(notice, s.tokens.ingest)).toMatch(/^400 /);
    expect(await status('/api/v1/environments/no-such-id/resume', s.tokens.admin, 'POST')).toMatch(/^404 /);
    // Another project's token does not learn that the environment exists.
    expect(await status(`/api/v1/environments/${envId}/resume`, s.tokens.otherProject, 'POST')).toMatch(
      /^404 /,
    );
    expect(await countRows(s.database.db, 'cleanup_jobs')).toBe(0);
  });

  it('refuses JSON bodies the database cannot store on every route, not only ingest', async () => {
    const post = async (url: string, token: string, payload: string) => {
      const res = await s.app.inject({
        method: 'POST',
        url,
        headers: { ...s.auth(token), 'content-type': 'application/json' },
        payload,
      });
      return { status: res.statusCode, message: res.json<{ error?: { message: string } }>().error?.message };
    };
    const heartbeat = (executorId: string) =>
      JSON.stringify({ executorId, name: 'x', kind: 'agent', version: '1', targets: [] });
    // A lone surrogate (stored as U+FFFD, another executor than was sent) and a NUL (PostgreSQL refuses it).
    expect(await post('/api/v1/agents/heartbeat', s.tokens.agent, heartbeat('e\ud800'))).toEqual({
      status: 400,
      message: 'body field "executorId" contains a lone UTF-16 surrogate (not valid Unicode)',
    });
    expect((await post('/api/v1/agents/heartbeat', s.tokens.agent, heartbeat('e\u0000'))).status).toBe(400);
    const complete = JSON.stringify({ executorId: 'e', outcome: 'done', message: 'gone\u0000' });
    expect((await post('/api/v1/cleanup/jobs/j1/complete', s.tokens.agent, complete)).status).toBe(400);
    expect(await countRows(s.database.db, 'cleanup_executors')).toBe(0);
    // A pair is fine.
    expect((await post('/api/v1/agents/heartbeat', s.tokens.agent, heartbeat('e\ud83d\ude00'))).status).toBe(
      200,
    );
  });
});

describe.each(dialects)('hostile executor input, on %s', (dialect) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer(dialect);
  });
  afterAll(async () => s.close());

  const inventory = (items: unknown, raw?: string) =>
    s.app.inject({
      method: 'POST',
      url: '/api/v1/agents/inventory',
      headers: { ...s.auth(s.tokens.agent), 'content-type': 'application/json' },
      payload:
        raw ??
        JSON.stringify({
          executorId: 'e1',
          targetKey: 'kubernetes/c1',
          pluginName: 'kubernetes',
          complete: true,
          items,
        }),
    });
  const item = (extra: Record<string, unknown>) => ({
    namespaceName: 'shop-a',
    uid: 'u1',
    version: '1',
    state: 'active',
    managedByTend: true,
    ...extra,
  });

  it("answers 4xx, never 500, to NUL, lone surrogates, huge numbers, deep JSON and another project's token", async () => {
    for (const bad of [
      item({ namespaceName: 'shop\u0000a' }),
      item({ uid: 'u\ud800' }),
      item({ detail: { path: 'x\u0000' } }),
      item({ lastActivityAt: '1e400' }),
      item({ version: Number.MAX_VALUE }),
    ]) {
      const res = await inventory([bad]);
      expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, res.body).toBeLessThan(500);
    }
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    const nested = await inventory(
      undefined,
      `{"executorId":"e1","targetKey":"kubernetes/c1","items":${deep}}`,
    );
    expect(nested.statusCode).toBe(400);
    const numeric = await inventory(
      undefined,
      '{"executorId":"e1","targetKey":"kubernetes/c1","pluginName":"kubernetes","complete":true,"items":[{"namespaceName":"shop-a","uid":"u1","version":1e400,"state":"active","managedByTend":true}]}',
    );
    expect(numeric.statusCode).toBe(400);
    const foreign = await s.app.inject({
      method: 'POST',
      url: '/api/v1/cleanup/jobs/claim',
      headers: s.auth(s.tokens.otherProject),
      payload: { executorId: 'e1', targetKeys: ['kubernetes/c1'] },
    });
    expect(foreign.statusCode).toBe(403);
    // Nothing of it was stored.
    expect(await countRows(s.database.db, 'cleanup_inventory_items')).toBe(0);
  });
});
