import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { countRows, createTestServer, dialects, postEvents, session, type TestServer } from './helpers.js';
import { postLogin } from './helpers.js';

const hostile = {
  project: '<script>alert("p")</script>',
  user: '<img src=x onerror=alert(1)>',
  namespace: 'ns-"><script>alert(2)</script>',
  command: "deploy' onmouseover='alert(3)",
};

describe.each(dialects)('dashboard on %s', (dialect) => {
  let s: TestServer;
  let hostileId: string;
  beforeAll(async () => {
    s = await createTestServer(dialect);
    const h = session(hostile);
    await postEvents(s, [h.started(), h.ns('ready', { uid: '<b>uid</b>' })]);
    hostileId = (await s.database.db.selectFrom('environments').select('id').executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => s.close());

  const login = async (token: string) => {
    const res = await postLogin(s.app, { token, next: '/' });
    const cookie = res.cookies.find((c) => c.name === 'tend_session');
    return { res, cookie: cookie ? `tend_session=${cookie.value}` : undefined, raw: cookie };
  };
  const page = (url: string, cookie: string) => s.app.inject({ method: 'GET', url, headers: { cookie } });
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

  it('sends visitors without a session to the login form', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/environments/x' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/login?next=%2Fenvironments%2Fx');
    const form = await s.app.inject({ method: 'GET', url: '/login', headers: { host: 'tend.example:8080' } });
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('<form method="post" action="/login">');
    // Where a token comes from: the command, with this server's URL for an admin elsewhere.
    expect(form.body).toContain(
      'tend server token create --server http://tend.example:8080 --name you --scope read',
    );
    const hostile = await s.app.inject({
      method: 'GET',
      url: '/login',
      headers: { host: 'x"><script>a()</script>' },
    });
    expect(hostile.body).not.toContain('<script>a()');
  });

  it('refuses unknown, revoked and ingest-only tokens', async () => {
    expect((await login('tend_nope')).res.statusCode).toBe(401);
    expect((await login(s.tokens.revoked)).res.statusCode).toBe(401);
    const ingest = await login(s.tokens.ingest);
    expect(ingest.res.statusCode).toBe(403);
    expect(ingest.res.body).toContain('needs &quot;read&quot;');
    expect(ingest.cookie).toBeUndefined();
  });

  it('logs in with a read token into an HttpOnly SameSite=Lax session cookie that is not the token', async () => {
    const { res, raw } = await login(s.tokens.read);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/');
    expect(raw).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(raw!.value).not.toContain(s.tokens.read);
    expect(String(res.headers['set-cookie'])).not.toContain(s.tokens.read);
  });

  it('refuses a login form posted without its CSRF value, or from another site (login CSRF), and logs no one in', async () => {
    const sessions = () => countRows(s.database.db, 'dashboard_sessions');
    const before = await sessions();
    // Another site's form: no cookie of ours, or one without the matching value.
    const bare = await s.app.inject({
      method: 'POST',
      url: '/login',
      payload: { token: s.tokens.read, next: '/' },
    });
    expect(bare.statusCode).toBe(403);
    expect(bare.body).toContain('sent from another site');
    const wrong = await postLogin(s.app, { token: s.tokens.read, next: '/', _csrf: 'x'.repeat(32) });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.cookies.find((c) => c.name === 'tend_session')).toBeUndefined();
    expect(await sessions()).toBe(before);
    // The cookie is this site's only, and never readable by scripts.
    const form = await s.app.inject({ method: 'GET', url: '/login' });
    expect(form.cookies.find((c) => c.name === 'tend_login_csrf')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
      path: '/login',
    });
    // The refusal page carries a fresh form that works.
    const retry = await s.app.inject({
      method: 'POST',
      url: '/login',
      headers: { cookie: `tend_login_csrf=${bare.cookies.find((c) => c.name === 'tend_login_csrf')!.value}` },
      payload: { token: s.tokens.read, next: '/', _csrf: csrfOf(bare.body) },
    });
    expect(retry.statusCode).toBe(303);
  });

  it('never redirects to another site after login', async () => {
    const res = await postLogin(s.app, { token: s.tokens.read, next: '//evil.example/' });
    expect(res.headers.location).toBe('/');
  });

  it('keeps `next` to paths of this site: tabs, line breaks, backslashes and non-ASCII fall back to /', async () => {
    for (const next of [
      '/\t/evil.example',
      '/%09/evil.example',
      '\t//evil.example',
      '/\\evil.example',
      '/\r\nSet-Cookie: x=1',
      '/\n/evil.example',
      '/caf\u00e9',
      '/\u2028/evil.example',
      '/ok\u0000',
      'https://evil.example/',
    ]) {
      const res = await postLogin(s.app, { token: s.tokens.read, next });
      const expected = next === '/%09/evil.example' ? next : '/';
      expect(res.statusCode, JSON.stringify(next)).toBe(303);
      expect(res.headers.location, JSON.stringify(next)).toBe(expected);
    }
    // As a browser posts the login form: the tab arrives percent-encoded.
    const loginForm = await s.app.inject({ method: 'GET', url: '/login' });
    const loginCsrf = loginForm.cookies.find((c) => c.name === 'tend_login_csrf')!.value;
    const posted = await s.app.inject({
      method: 'POST',
      url: '/login',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: `tend_login_csrf=${loginCsrf}`,
      },
      payload: `token=${encodeURIComponent(s.tokens.read)}&next=/%09/evil.example&_csrf=${csrfOf(loginForm.body)}`,
    });
    expect(posted.statusCode).toBe(303);
    expect(posted.headers.location).toBe('/');
    const form = await s.app.inject({ method: 'GET', url: '/login?next=%2F%09%2Fevil.example' });
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('name="next" value="/"');
    const kept = await s.app.inject({ method: 'GET', url: '/login?next=%2Fenvironments%2Fx%3Fa%3D1' });
    expect(kept.body).toContain('name="next" value="/environments/x?a=1"');
  });

  it('writes no session row for a refused login, whatever its `next`', async () => {
    const sessions = () => countRows(s.database.db, 'dashboard_sessions');
    const before = await sessions();
    for (const next of ['/\r\nx: y', '/caf\u00e9', '/\t/evil.example']) {
      for (const token of ['tend_nope', s.tokens.ingest, s.tokens.revoked]) {
        const res = await postLogin(s.app, { token, next });
        expect([401, 403]).toContain(res.statusCode);
        expect(res.cookies.find((c) => c.name === 'tend_session')).toBeUndefined();
      }
    }
    expect(await sessions()).toBe(before);
  });

  it('renders hostile names escaped on the list and the environment page', async () => {
    const { cookie } = await login(s.tokens.read);
    for (const url of ['/', `/environments/${hostileId}`]) {
      const res = await page(url, cookie!);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.body).not.toMatch(/<script>alert/);
      expect(res.body).not.toContain('<img src=x');
      expect(res.body).not.toContain("' onmouseover='");
      expect(res.body).toContain('&lt;script&gt;alert(&quot;p&quot;)&lt;/script&gt;');
    }
    const detail = await page(`/environments/${hostileId}`, cookie!);
    expect(detail.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(detail.body).toContain('&lt;b&gt;uid&lt;/b&gt;');
  });

  it('treats empty filter fields as "any"', async () => {
    const { cookie } = await login(s.tokens.read);
    const res = await page('/?project=&environment=&state=', cookie!);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`data-environment-id="${hostileId}"`);
  });

  it('requires the CSRF token on forms', async () => {
    const { cookie } = await login(s.tokens.admin);
    const res = await s.app.inject({
      method: 'POST',
      url: `/environments/${hostileId}/protect`,
      headers: { cookie: cookie! },
      payload: { _csrf: 'forged' },
    });
    expect(res.statusCode).toBe(403);
    const env = await s.database.db
      .selectFrom('environments')
      .select('protected')
      .where('id', '=', hostileId)
      .executeTakeFirstOrThrow();
    expect(Number(env.protected)).toBe(0);
  });

  it('lets an admin protect and a developer keep alive; a reader neither', async () => {
    const admin = await login(s.tokens.admin);
    const before = await page(`/environments/${hostileId}`, admin.cookie!);
    const protect = await s.app.inject({
      method: 'POST',
      url: `/environments/${hostileId}/protect`,
      headers: { cookie: admin.cookie! },
      payload: { _csrf: csrfOf(before.body) },
    });
    expect(protect.statusCode).toBe(303);
    const after = await page(`/environments/${hostileId}`, admin.cookie!);
    expect(after.body).toContain('<span class="badge protected">protected</span>');
    expect(after.body).toContain('by dashboard:ops');

    const reader = await login(s.tokens.read);
    const readerPage = await page(`/environments/${hostileId}`, reader.cookie!);
    expect(readerPage.body).toContain('Protecting needs a developer or admin token.');
    const denied = await s.app.inject({
      method: 'POST',
      url: `/environments/${hostileId}/unprotect`,
      headers: { cookie: reader.cookie! },
      payload: { _csrf: csrfOf(readerPage.body) },
    });
    expect(denied.statusCode).toBe(403);
    const readerKeep = await s.app.inject({
      method: 'POST',
      url: `/environments/${hostileId}/keep-alive`,
      headers: { cookie: reader.cookie! },
      payload: { _csrf: csrfOf(readerPage.body), for: '8h' },
    });
    expect(readerKeep.statusCode).toBe(403);
    expect(readerPage.body).not.toContain(`action="/environments/${hostileId}/keep-alive"`);

    const developer = await login(s.tokens.developer);
    const developerPage = await page(`/environments/${hostileId}`, developer.cookie!);
    const keep = await s.app.inject({
      method: 'POST',
      url: `/environments/${hostileId}/keep-alive`,
      headers: { cookie: developer.cookie! },
      payload: { _csrf: csrfOf(developerPage.body), for: '8h' },
    });
    expect(keep.statusCode).toBe(303);
    const kept = await s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('id', '=', hostileId)
      .executeTakeFirstOrThrow();
    expect(kept.keep_alive_by).toBe('dashboard:maker');
    expect(Number(kept.protected)).toBe(1);
  });

  it('ends the session on logout and when the token is revoked', async () => {
    const a = await login(s.tokens.read);
    const home = await page('/', a.cookie!);
    const out = await s.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { cookie: a.cookie! },
      payload: { _csrf: csrfOf(home.body) },
    });
    expect(out.statusCode).toBe(303);
    expect((await page('/', a.cookie!)).statusCode).toBe(303);

    const repo = new TokenRepository(s.database.db);
    const { token } = await repo.create({ name: 'temp', scope: 'read' });
    const b = await login(token);
    expect((await page('/', b.cookie!)).statusCode).toBe(200);
    await repo.revoke('temp');
    expect((await page('/', b.cookie!)).statusCode).toBe(303);
  });
});
