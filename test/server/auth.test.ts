import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearerPrincipal,
  requiredRole,
  requiredScope,
  tokenGrants,
  type Permission,
  type Principal,
} from '../../src/server/auth.js';
import { hashToken } from '../../src/server/db/credentials.js';
import { TendError } from '../../src/errors.js';
import { createTestServer, dialects, postEvents, session, type TestServer } from './helpers.js';

describe.each(dialects)('authentication and scopes on %s', (dialect) => {
  let s: TestServer;
  let envId: string;
  beforeAll(async () => {
    s = await createTestServer(dialect);
    const a = session();
    await postEvents(s, [a.started(), a.ns('ready', { uid: 'u' })]);
    envId = (await s.database.db.selectFrom('environments').select('id').executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => s.close());

  const routes = () =>
    [
      ['POST', '/api/v1/events', 'ingest', { events: [] }],
      ['GET', '/api/v1/auth/whoami', 'ingest', undefined],
      ['GET', '/api/v1/environments', 'read', undefined],
      ['GET', `/api/v1/environments/${envId}`, 'read', undefined],
      ['GET', '/api/v1/audit', 'read', undefined],
      ['GET', '/metrics', 'read', undefined],
      ['POST', `/api/v1/environments/${envId}/keep-alive`, 'developer', {}],
      ['POST', `/api/v1/environments/${envId}/protect`, 'developer', undefined],
      ['POST', `/api/v1/environments/${envId}/unprotect`, 'developer', undefined],
    ] as const;

  const call = (
    method: 'GET' | 'POST',
    url: string,
    payload: object | undefined,
    headers: Record<string, string>,
  ) => s.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

  it('answers 401 without a token on every API route', async () => {
    for (const [method, url, , payload] of routes()) {
      const res = await call(method, url, payload, {});
      expect(res.statusCode, `${method} ${url}`).toBe(401);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('TEND_AUTH');
    }
  });

  it('answers 401 for an unknown token, a revoked token and a malformed header', async () => {
    for (const header of [
      'Bearer tend_notarealtoken',
      `Bearer ${s.tokens.revoked}`,
      `Basic ${Buffer.from('a:b').toString('base64')}`,
      s.tokens.admin,
    ]) {
      const res = await call('GET', '/api/v1/environments', undefined, { authorization: header });
      expect(res.statusCode, header.slice(0, 12)).toBe(401);
    }
  });

  it('answers 403 when the scope is too small, naming the scope needed', async () => {
    const order = ['ingest', 'read', 'developer', 'admin'] as const;
    for (const [method, url, needed, payload] of routes()) {
      for (const scope of order) {
        const res = await call(method, url, payload, s.auth(s.tokens[scope]));
        if (order.indexOf(scope) >= order.indexOf(needed)) {
          expect(res.statusCode, `${scope} ${method} ${url}`).toBe(200);
        } else {
          expect(res.statusCode, `${scope} ${method} ${url}`).toBe(403);
          const body = res.json<{ error: { code: string; message: string } }>();
          expect(body.error.code).toBe('TEND_AUTH_FORBIDDEN');
          expect(body.error.message).toContain(`needs "${needed}"`);
        }
      }
    }
  });

  it('gives a developer token the developer role: clean up now and resume, not the switches, tokens or webhooks', async () => {
    const as = (scope: 'read' | 'developer', method: 'GET' | 'POST', url: string) =>
      s.app.inject({
        method,
        url,
        headers: s.auth(s.tokens[scope]),
        ...(method === 'POST' ? { payload: {} } : {}),
      });
    // Not refused for the scope: the job path answers (200 with jobs, or 409 naming a check).
    for (const path of ['cleanup', 'resume']) {
      const res = await as('developer', 'POST', `/api/v1/environments/${envId}/${path}`);
      expect([200, 409], `${path}: ${res.body}`).toContain(res.statusCode);
    }
    const readClean = await as('read', 'POST', `/api/v1/environments/${envId}/cleanup`);
    expect(readClean.statusCode).toBe(403);
    expect(readClean.json<{ error: { message: string } }>().error.message).toContain('needs "developer"');
    for (const [method, url] of [
      ['POST', '/api/v1/cleanup/halt'],
      ['GET', '/api/v1/tokens'],
      ['GET', '/api/v1/webhooks'],
    ] as const) {
      const res = await as('developer', method, url);
      expect(res.statusCode, url).toBe(403);
      expect(res.json<{ error: { message: string } }>().error.message).toContain('needs "admin"');
    }
  });

  it('leaves health checks open', async () => {
    expect((await s.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await s.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', database: dialect });
  });

  it('checks the token before reading the body', async () => {
    const res = await s.app.inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(res.statusCode).toBe(401);
  });

  it('stores only the hash of a token, and never answers with it', async () => {
    const rows = await s.database.db.selectFrom('api_tokens').selectAll().execute();
    const all = JSON.stringify(rows);
    for (const token of Object.values(s.tokens)) expect(all).not.toContain(token);
    expect(rows.map((r) => r.token_hash)).toContain(hashToken(s.tokens.admin));
    const who = await s.app.inject({
      method: 'GET',
      url: '/api/v1/auth/whoami',
      headers: s.auth(s.tokens.admin),
    });
    expect(who.json()).toEqual({ name: 'ops', scope: 'admin', project: null });
  });

  it('confines a project-bound token to its project', async () => {
    const other = session({ project: 'other', user: 'bob' });
    const own = await postEvents(s, [other.started()], s.tokens.otherProject);
    expect(own.statusCode).toBe(200);
    const foreign = await postEvents(s, [session({ project: 'shop' }).started()], s.tokens.otherProject);
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json<{ error: { message: string } }>().error.message).toContain('events[0]');
    const list = await s.app.inject({
      method: 'GET',
      url: '/api/v1/environments',
      headers: s.auth(s.tokens.otherProject),
    });
    const projects = list.json<{ items: { project: string }[] }>().items.map((e) => e.project);
    expect(new Set(projects)).toEqual(new Set(['other']));
    const hidden = await s.app.inject({
      method: 'GET',
      url: `/api/v1/environments/${envId}`,
      headers: s.auth(s.tokens.otherProject),
    });
    expect(hidden.statusCode).toBe(404);
  });
});

describe('the smallest scope and role a permission needs (the 403 messages name them)', () => {
  it('names, for each permission, the scope and the role it always named', () => {
    const expected: Record<Permission, [scope: string, role: string]> = {
      ingest: ['ingest', 'admin'],
      agent: ['agent', 'admin'],
      read: ['read', 'viewer'],
      'keep-alive': ['developer', 'developer'],
      resume: ['developer', 'developer'],
      protect: ['developer', 'developer'],
      'clean-now': ['developer', 'developer'],
      secrets: ['developer', 'developer'],
      restore: ['admin', 'admin'],
      admin: ['admin', 'admin'],
    };
    for (const [permission, [scope, role]] of Object.entries(expected) as [Permission, [string, string]][]) {
      expect([permission, requiredScope(permission), requiredRole(permission)]).toEqual([
        permission,
        scope,
        role,
      ]);
    }
  });
});

describe('the principal of an API route', () => {
  const token: Principal = {
    tokenId: 't1',
    tokenName: 'ci',
    scope: 'read',
    project: 'shop',
    clusters: null,
    via: 'bearer',
    person: null,
    grants: tokenGrants('read', 'shop'),
  };

  it('is the bearer token, with its scope; a session or no principal is a server mistake, not a guessed scope', () => {
    expect(bearerPrincipal(token).scope).toBe('read');
    const person: Principal = {
      tokenId: null,
      tokenName: 'alice@example.com',
      scope: null,
      project: null,
      clusters: null,
      via: 'oidc',
      person: { subject: 'a', email: 'alice@example.com' },
      grants: new Map(),
    };
    for (const [principal, message] of [
      [person, 'an API route was reached without a bearer token (via oidc)'],
      [
        { ...token, via: 'dashboard' as const },
        'an API route was reached without a bearer token (via dashboard)',
      ],
      [null, 'an API route was reached without a bearer token (no principal)'],
    ] as const) {
      expect(() => bearerPrincipal(principal)).toThrow(new TendError('TEND_INTERNAL', message));
    }
  });
});
