/**
 * Server administration through the API (routes/admin.ts), on both databases: an admin token
 * bound to no project creates, lists and revokes tokens and adds, lists and removes webhooks;
 * a new secret is in its creation answer only and stored hashed (tokens); every other token is
 * refused (401/403); hostile input gets a clear 4xx, never a 500, and changes nothing; no
 * token reaches the log.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logRedaction } from '../../src/server/app.js';
import { hashToken } from '../../src/server/db/credentials.js';
import { countRows, createTestServer, dialects, type TestServer } from './helpers.js';

interface ErrorBody {
  error: { code: string; message: string };
}

describe.each(dialects)('token and webhook administration through the API, on %s', (dialect) => {
  let s: TestServer;
  let log = '';
  beforeAll(async () => {
    // Everything the server logs, at the most talkative level, to look for secrets in.
    const sink = new Writable({
      write(chunk, _encoding, done) {
        log += String(chunk);
        done();
      },
    });
    s = await createTestServer(dialect, { logger: pino({ level: 'trace', redact: logRedaction }, sink) });
  });
  afterAll(async () => s.close());

  const call = (
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    token: string | undefined,
    payload?: unknown,
  ) =>
    s.app.inject({
      method,
      url,
      headers: token === undefined ? {} : s.auth(token),
      ...(payload !== undefined ? { payload: payload as object } : {}),
    });

  it('creates a token whose secret is answered once and stored only as its hash', async () => {
    const created = await call('POST', '/api/v1/tokens', s.tokens.admin, {
      name: 'agent-eu',
      scope: 'agent',
      clusters: ['uid-eu'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json<{ id: string; token: string; scope: string; clusters: string[] }>();
    expect(body).toMatchObject({ scope: 'agent', clusters: ['uid-eu'] });
    expect(body.token).toMatch(/^tend_[A-Za-z0-9_-]{43}$/);

    const row = await s.database.db
      .selectFrom('api_tokens')
      .selectAll()
      .where('id', '=', body.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(hashToken(body.token));
    expect(JSON.stringify(row)).not.toContain(body.token);

    // It works, with the scope it was given.
    const whoami = await call('GET', '/api/v1/auth/whoami', body.token);
    expect(whoami.json()).toEqual({ name: 'agent-eu', scope: 'agent', project: null });

    const listed = await call('GET', '/api/v1/tokens', s.tokens.admin);
    expect(listed.statusCode).toBe(200);
    expect(listed.body).not.toContain(body.token);
    const names = listed.json<{ items: { name: string; token?: string }[] }>().items;
    expect(names.map((t) => t.name)).toContain('agent-eu');
    expect(names.every((t) => t.token === undefined)).toBe(true);

    const audit = await s.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'token-create')
      .execute();
    expect(audit.map((a) => a.actor)).toEqual(['token:ops']);
    expect(JSON.stringify(audit)).not.toContain(body.token);
  });

  it('revokes a token by name: it is refused from then on', async () => {
    const { token } = (await call('POST', '/api/v1/tokens', s.tokens.admin, { name: 'short-lived' })).json<{
      token: string;
    }>();
    expect((await call('GET', '/api/v1/auth/whoami', token)).statusCode).toBe(200);
    const revoked = await call('POST', '/api/v1/tokens/short-lived/revoke', s.tokens.admin, {});
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.json<{ revokedAt: string | null }>().revokedAt).not.toBeNull();
    expect((await call('GET', '/api/v1/auth/whoami', token)).statusCode).toBe(401);
  });

  it('adds, lists and removes a webhook; its secret is answered once', async () => {
    const added = await call('POST', '/api/v1/webhooks', s.tokens.admin, {
      url: 'https://hooks.example.com/tend',
      events: ['cleanup.warning', 'cleanup.done'],
      format: 'slack',
      project: 'shop',
    });
    expect(added.statusCode, added.body).toBe(201);
    const webhook = added.json<{ id: string; secret: string; format: string }>();
    expect(webhook.format).toBe('slack');
    expect(webhook.secret.length).toBeGreaterThanOrEqual(32);
    const listed = await call('GET', '/api/v1/webhooks', s.tokens.admin);
    expect(listed.body).not.toContain(webhook.secret);
    expect(listed.json<{ items: { id: string; deliveries: { pending: number } }[] }>().items).toEqual([
      expect.objectContaining({ id: webhook.id, deliveries: expect.objectContaining({ pending: 0 }) }),
    ]);
    const removed = await call('DELETE', `/api/v1/webhooks/${webhook.id}`, s.tokens.admin);
    expect(removed.statusCode, removed.body).toBe(200);
    expect(await countRows(s.database.db, 'webhooks')).toBe(0);
  });

  it.each([
    ['no token', undefined, 401],
    ['a revoked admin token', 'revoked', 401],
    ['an ingest token', 'ingest', 403],
    ['an agent token', 'agent', 403],
    ['a read token', 'read', 403],
    ['an admin token bound to a project', 'otherProject', 403],
  ] as const)('refuses %s on every route', async (_what, scope, status) => {
    const token = scope === undefined ? undefined : s.tokens[scope];
    const tokensBefore = await countRows(s.database.db, 'api_tokens');
    for (const [method, url, payload] of [
      ['GET', '/api/v1/tokens', undefined],
      ['POST', '/api/v1/tokens', { name: 'sneaky', scope: 'admin' }],
      ['POST', '/api/v1/tokens/ops/revoke', {}],
      ['GET', '/api/v1/webhooks', undefined],
      ['POST', '/api/v1/webhooks', { url: 'https://x.example.com', events: ['cleanup.done'] }],
      ['DELETE', '/api/v1/webhooks/wh_1', undefined],
    ] as const) {
      const res = await call(method, url, token, payload);
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
      expect(res.json<ErrorBody>().error.code).toBe(status === 401 ? 'TEND_AUTH' : 'TEND_AUTH_FORBIDDEN');
    }
    expect(await countRows(s.database.db, 'api_tokens')).toBe(tokensBefore);
    expect((await call('GET', '/api/v1/auth/whoami', s.tokens.admin)).statusCode).toBe(200);
  });

  it("binds an agent token to another plugin's targets, listed with it", async () => {
    const created = await call('POST', '/api/v1/tokens', s.tokens.admin, {
      name: 'agent-dirs',
      scope: 'agent',
      targets: ['dirs/root-1', 'local/host-1'],
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ clusters: null, targets: ['dirs/root-1', 'local/host-1'] });
    const listed = await call('GET', '/api/v1/tokens', s.tokens.admin);
    const items = listed.json<{ items: { name: string; targets: string[] | null }[] }>().items;
    expect(items.find((t) => t.name === 'agent-dirs')?.targets).toEqual(['dirs/root-1', 'local/host-1']);
    expect(items.find((t) => t.name === 'ops')?.targets).toBeNull();
  });

  it.each([
    ['a name with a space', { name: 'two words' }, 400, /name/],
    ['a name of 64 characters', { name: 'a'.repeat(64) }, 400, /name/],
    ['a NUL in the name', { name: 'a\u0000b' }, 400, /name|NUL/],
    ['an unknown scope', { name: 'x1', scope: 'root' }, 400, /scope/],
    ['an unknown field', { name: 'x2', admin: true }, 400, /additional|admin/],
    ['clusters on an ingest token', { name: 'x3', clusters: ['c'] }, 400, /agent/],
    ['an empty cluster list', { name: 'x4', scope: 'agent', clusters: [] }, 400, /clusters/],
    ['targets on an ingest token', { name: 'x7', targets: ['dirs/r1'] }, 400, /agent/],
    ['a target that is not <kind>/<id>', { name: 'x8', scope: 'agent', targets: ['dirs'] }, 400, /targets/],
    ['a NUL in a target', { name: 'x9', scope: 'agent', targets: ['dirs/r\u0000'] }, 400, /targets/],
    [
      'a lone surrogate in a target',
      { name: 'x10', scope: 'agent', targets: ['dirs/\ud800'] },
      400,
      /targets/,
    ],
    [
      '10,000 targets',
      { name: 'x11', scope: 'agent', targets: Array.from({ length: 10_000 }, (_, i) => `dirs/r${i}`) },
      400,
      /targets/,
    ],
    ['a target that is a number', { name: 'x12', scope: 'agent', targets: [1e308] }, 400, /targets/],
    ['a project that is not a name', { name: 'x5', project: 'Not/A/Name' }, 400, /project/],
    ['a name already taken', { name: 'ops' }, 409, /already exists/],
    ['a body that is a list', [{ name: 'x6' }], 400, /object/],
    ['no body', undefined, 400, /body/],
  ])('answers a token request with %s clearly, storing nothing', async (_what, payload, status, message) => {
    const before = await countRows(s.database.db, 'api_tokens');
    const res = await call('POST', '/api/v1/tokens', s.tokens.admin, payload);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json<ErrorBody>().error.message).toMatch(message);
    expect(await countRows(s.database.db, 'api_tokens')).toBe(before);
  });

  it.each([
    ['a URL that is not one', { url: 'not a url', events: ['cleanup.done'] }, /not a URL/],
    ['a file: URL', { url: 'file:///etc/passwd', events: ['cleanup.done'] }, /http/],
    ['user info in the URL', { url: 'https://u:p@x.example.com', events: ['cleanup.done'] }, /user name/],
    [
      'a URL of 3000 characters',
      { url: `https://x.example.com/${'a'.repeat(3000)}`, events: ['cleanup.done'] },
      /url/,
    ],
    ['no events', { url: 'https://x.example.com', events: [] }, /events/],
    ['an unknown event', { url: 'https://x.example.com', events: ['cleanup.maybe'] }, /events/],
    [
      'an unknown format',
      { url: 'https://x.example.com', events: ['cleanup.done'], format: 'xml' },
      /format/,
    ],
  ])('answers a webhook request with %s with 400, adding nothing', async (_what, payload, message) => {
    const res = await call('POST', '/api/v1/webhooks', s.tokens.admin, payload);
    expect(res.statusCode, res.body).toBe(400);
    const error = res.json<ErrorBody>().error;
    expect(error.code).toBe('TEND_SERVER_BAD_REQUEST');
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('--');
    expect(await countRows(s.database.db, 'webhooks')).toBe(0);
  });

  it('answers unknown tokens and webhooks with 404, and path values it cannot take with 400', async () => {
    const token = await call('POST', '/api/v1/tokens/nobody/revoke', s.tokens.admin, {});
    expect(token.statusCode).toBe(404);
    expect(token.json<ErrorBody>().error.code).toBe('TEND_TOKEN_NOT_FOUND');
    const webhook = await call('DELETE', '/api/v1/webhooks/wh_nothing', s.tokens.admin);
    expect(webhook.statusCode).toBe(404);
    expect(webhook.json<ErrorBody>().error.code).toBe('TEND_WEBHOOK_NOT_FOUND');
    for (const url of ['/api/v1/tokens/a%00b/revoke', `/api/v1/tokens/${'x'.repeat(65)}/revoke`]) {
      const res = await call('POST', url, s.tokens.admin, {});
      expect(res.statusCode, res.body).toBe(400);
    }
  });

  it('logs no token: not the admin token of the requests, not the tokens created', async () => {
    const created = (await call('POST', '/api/v1/tokens', s.tokens.admin, { name: 'logged-not' })).json<{
      token: string;
    }>();
    expect(log.length).toBeGreaterThan(0);
    for (const secret of [s.tokens.admin, created.token, ...Object.values(s.tokens)]) {
      expect(log).not.toContain(secret);
      expect(log).not.toContain(secret.slice('tend_'.length));
    }
  });
});
