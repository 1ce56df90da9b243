import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, dialects, getJson, postEvents, session, type TestServer } from './helpers.js';

interface EnvItem {
  id: string;
  project: string;
  name: string;
  namespace: string;
  state: string;
  protected: boolean;
  keepAliveUntil: string | null;
  lastActivity: { at: string };
}
interface Page {
  items: EnvItem[];
  nextCursor: string | null;
}

describe.each(dialects)('JSON API on %s', (dialect) => {
  let s: TestServer;
  let clock = new Date('2030-01-01T00:00:00.000Z');
  beforeAll(async () => {
    s = await createTestServer(dialect, { now: () => clock });
    // 7 environments in two projects, each active one minute after the previous.
    for (let i = 0; i < 7; i++) {
      clock = new Date(Date.parse('2030-01-01T00:00:00.000Z') + i * 60_000);
      const a = session({ project: i < 5 ? 'shop' : 'blog', user: `user${i}` });
      await postEvents(s, [a.started(), a.ns('ready', { uid: `uid${i}` })]);
    }
    clock = new Date('2030-01-01T01:00:00.000Z');
  });
  afterAll(async () => s.close());

  it('lists environments newest activity first', async () => {
    const { status, body } = await getJson<Page>(s, '/api/v1/environments');
    expect(status).toBe(200);
    expect(body.items.map((e) => e.namespace)).toEqual([
      'blog-user6',
      'blog-user5',
      'shop-user4',
      'shop-user3',
      'shop-user2',
      'shop-user1',
      'shop-user0',
    ]);
    expect(body.nextCursor).toBeNull();
  });

  it('pages with a cursor without gaps or repeats', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/api/v1/environments?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const page: Page = (await getJson<Page>(s, url)).body;
      seen.push(...page.items.map((e) => e.namespace));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(7);
    expect(new Set(seen).size).toBe(7);
  });

  it('filters by project, environment, state and staleness', async () => {
    const byProject = await getJson<Page>(s, '/api/v1/environments?project=blog');
    expect(byProject.body.items.map((e) => e.namespace)).toEqual(['blog-user6', 'blog-user5']);
    const byName = await getJson<Page>(s, '/api/v1/environments?environment=prod');
    expect(byName.body.items).toEqual([]);
    const active = await getJson<Page>(s, '/api/v1/environments?state=active');
    expect(active.body.items).toHaveLength(7);
    // Now is 01:00; activity was 00:00–00:06. Stale since 57m: activity before 00:03.
    const stale = await getJson<Page>(s, '/api/v1/environments?staleSince=57m');
    expect(stale.body.items.map((e) => e.namespace)).toEqual(['shop-user2', 'shop-user1', 'shop-user0']);
    const staleIso = await getJson<Page>(s, '/api/v1/environments?staleSince=2030-01-01T00:01:00.000Z');
    expect(staleIso.body.items.map((e) => e.namespace)).toEqual(['shop-user0']);
  });

  it.each([
    ['state=gone', /state/],
    ['limit=0', /limit/],
    ['limit=501', /limit/],
    ['staleSince=whenever', /staleSince/],
    ['cursor=bogus', /cursor/],
  ])('rejects the query %s with 400', async (query, message) => {
    const { status, body } = await getJson<{ error: { code: string; message: string } }>(
      s,
      `/api/v1/environments?${query}`,
    );
    expect(status).toBe(400);
    expect(body.error.code).toBe('TEND_SERVER_BAD_REQUEST');
    expect(body.error.message).toMatch(message);
  });

  it('answers 404 for an unknown environment', async () => {
    const { status, body } = await getJson<{ error: { code: string } }>(s, '/api/v1/environments/nope');
    expect(status).toBe(404);
    expect(body.error.code).toBe('TEND_ENVIRONMENT_NOT_FOUND');
    const post = await s.app.inject({
      method: 'POST',
      url: '/api/v1/environments/nope/protect',
      headers: s.auth(s.tokens.admin),
    });
    expect(post.statusCode).toBe(404);
  });

  it('protects, unprotects and keeps alive, each audited with its actor', async () => {
    const id = (await getJson<Page>(s, '/api/v1/environments?project=blog')).body.items[0]!.id;
    const post = (path: string, token: string, payload?: object) =>
      s.app.inject({
        method: 'POST',
        url: `/api/v1/environments/${id}/${path}`,
        headers: s.auth(token),
        ...(payload ? { payload } : {}),
      });

    const protect = await post('protect', s.tokens.admin);
    expect(protect.statusCode).toBe(200);
    expect(protect.json<{ environment: EnvItem & { protectedBy: string } }>().environment).toMatchObject({
      protected: true,
      protectedBy: 'token:ops',
    });
    // A read token changes nothing: keeping alive is a write.
    const byReader = await post('keep-alive', s.tokens.read, { for: '3d' });
    expect(byReader.statusCode).toBe(403);
    expect(byReader.json<{ error: { message: string } }>().error.message).toContain('needs "developer"');
    const kept = await post('keep-alive', s.tokens.developer, { for: '3d' });
    expect(kept.statusCode).toBe(200);
    expect(kept.json<{ environment: EnvItem }>().environment.keepAliveUntil).toBe('2030-01-04T01:00:00.000Z');
    // A keep-alive only ever extends: the default 24h does not shorten the 3 days.
    const defaultKeep = await post('keep-alive', s.tokens.developer);
    expect(defaultKeep.statusCode).toBe(200);
    expect(defaultKeep.json<{ environment: EnvItem }>().environment.keepAliveUntil).toBe(
      '2030-01-04T01:00:00.000Z',
    );
    const longer = await post('keep-alive', s.tokens.developer, { for: '5d' });
    expect(longer.json<{ environment: EnvItem }>().environment.keepAliveUntil).toBe(
      '2030-01-06T01:00:00.000Z',
    );
    const tooLong = await post('keep-alive', s.tokens.developer, { for: '90d' });
    expect(tooLong.statusCode).toBe(400);
    const unprotect = await post('unprotect', s.tokens.admin);
    expect(unprotect.json<{ environment: EnvItem }>().environment.protected).toBe(false);

    const audit = await getJson<{
      items: { action: string; actor: string; environmentId: string; detail: Record<string, unknown> }[];
    }>(s, `/api/v1/audit?environmentId=${id}`);
    expect(audit.body.items.map((a) => [a.action, a.actor])).toEqual([
      ['unprotect', 'token:ops'],
      ['keep-alive', 'token:maker'],
      ['keep-alive', 'token:maker'],
      ['keep-alive', 'token:maker'],
      ['protect', 'token:ops'],
    ]);
    expect(audit.body.items.slice(1, 4).map((a) => a.detail.extended)).toEqual([true, false, true]);
    expect(audit.body.items[0]!.detail).toMatchObject({ project: 'blog', environment: 'dev' });
  });

  it('serves an OpenAPI document generated from the route schemas', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<{ openapi: string; paths: Record<string, Record<string, unknown>> }>();
    expect(doc.openapi).toBe('3.1.0');
    for (const path of [
      '/api/v1/events',
      '/api/v1/environments',
      '/api/v1/environments/{id}',
      '/api/v1/environments/{id}/protect',
      '/api/v1/environments/{id}/unprotect',
      '/api/v1/environments/{id}/keep-alive',
      '/api/v1/audit',
      '/healthz',
      '/readyz',
      '/metrics',
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
    expect(Object.keys(doc.paths).some((p) => p === '/' || p.startsWith('/login'))).toBe(false);
    const text = JSON.stringify(doc);
    expect(text).toContain('namespaceStatus');
    expect(text).not.toContain('token_hash');
  });

  it('exposes Prometheus metrics', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/metrics', headers: s.auth(s.tokens.read) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toMatch(/^tend_ingest_events_total\{result="accepted"\} 14$/m);
    expect(res.body).toMatch(/^tend_ingest_batches_total\{outcome="accepted"\} 7$/m);
    expect(res.body).toMatch(/^tend_ingest_batch_duration_seconds_count 7$/m);
    expect(res.body).toMatch(/^tend_environments\{state="active"\} 7$/m);
  });
});
