/**
 * The dashboard's cleanup parts over a real server and database: the "Next" column, an
 * environment's plan and "Clean up now", the Cleanup page and its admin switches (enforce,
 * halt/resume, breaker reset) — hostile names escaped, CSRF and scopes checked, refusals
 * answered with the reason and nothing changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects } from './helpers.js';
import { postLogin } from './helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './cleanup/fixture.js';

const hour = 3_600_000;
const hostileProject = '<script>alert("p")</script>';
const hostileExecutor = '<img src=x onerror=alert(1)>';
const hostileNamespace = 'ns-"><script>alert(2)</script>';

describe.each(dialects)('dashboard cleanup on %s', (dialect) => {
  let f: CleanupFixture;
  let hostile: { id: string; namespace: string };
  let shop: { id: string; namespace: string };

  const login = async (token: string) => {
    const res = await postLogin(f.server.app, { token, next: '/' });
    const cookie = res.cookies.find((c) => c.name === 'tend_session');
    return `tend_session=${cookie!.value}`;
  };
  const page = (url: string, cookie: string) =>
    f.server.app.inject({ method: 'GET', url, headers: { cookie } });
  const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)?.[1] ?? '';
  const post = async (url: string, cookie: string, payload: Record<string, string> = {}, csrf?: string) =>
    f.server.app.inject({
      method: 'POST',
      url,
      headers: { cookie },
      payload: { _csrf: csrf ?? csrfOf((await page('/cleanup', cookie)).body), ...payload },
    });
  const expectEscaped = (body: string) => {
    expect(body).not.toMatch(/<script>alert/);
    expect(body).not.toContain('<img src=x');
  };
  const reportAll = async () => {
    await f.report('exec-1', [
      f.item(hostile.namespace, 'uid-alice', {}, hostileProject),
      f.item(shop.namespace, 'uid-bob'),
      f.item(hostileNamespace, 'uid-unrecorded', { environment: '<b>env</b>' }, hostileProject),
    ]);
    const hb = await f.call(
      'POST',
      '/api/v1/agents/heartbeat',
      {
        executorId: 'exec-1',
        name: hostileExecutor,
        kind: 'agent',
        version: '<i>0.1</i>',
        targets: [{ targetKey: target, pluginName: 'kubernetes', description: '<u>dev</u>' }],
      },
      f.server.tokens.agent,
    );
    expect(hb.status).toBe(200);
  };
  const control = () =>
    f.server.database.db.selectFrom('cleanup_control').selectAll().executeTakeFirstOrThrow();

  beforeAll(async () => {
    f = await cleanupFixture(dialect);
    hostile = await f.environment({ user: 'alice', project: hostileProject });
    shop = await f.environment({ user: 'bob', policy: null });
    f.advance(9 * hour);
    await reportAll();
    await f.server.app.cleanup.pass.run();
  });
  afterAll(async () => f?.close());

  it('shows the next decision of each environment in the list, escaped', async () => {
    const cookie = await login(f.server.tokens.read);
    const res = await page('/', cookie);
    expect(res.statusCode).toBe(200);
    expectEscaped(res.body);
    const row = new RegExp(`data-environment-id="${hostile.id}"[\\s\\S]*?</tr>`).exec(res.body)![0];
    expect(row).toContain('kind-dry-run');
    expect(row).toContain('delete');
    expect(row).toMatch(/no activity since \d\d:\d\d UTC, policy 8h/);
    const shopRow = new RegExp(`data-environment-id="${shop.id}"[\\s\\S]*?</tr>`).exec(res.body)![0];
    expect(shopRow).toContain('no cleanup policy');
  });

  it('renders the Cleanup page with hostile names as text', async () => {
    const cookie = await login(f.server.tokens.read);
    const res = await page('/cleanup', cookie);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expectEscaped(res.body);
    expect(res.body).toContain('&lt;script&gt;alert(&quot;p&quot;)&lt;/script&gt;');
    expect(res.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(res.body).toContain('ns-&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(res.body).toContain('&lt;u&gt;dev&lt;/u&gt;');
    expect(res.body).toContain('Cleanup is running.');
    for (const id of [
      'cleanup-plan',
      'cleanup-blocked',
      'cleanup-policies',
      'cleanup-breakers',
      'cleanup-jobs',
      'cleanup-executors',
      'cleanup-unrecorded',
    ]) {
      expect(res.body, id).toContain(`id="${id}"`);
    }
    // A reader sees the policy as a dry run, but no admin buttons.
    expect(res.body).toContain('badge mode-dry-run');
    expect(res.body).not.toContain('>Enforce</button>');
    expect(res.body).not.toContain('Halt all cleanup');
  });

  it('refuses the switches to readers, to forged forms and to other projects, changing nothing', async () => {
    const reader = await login(f.server.tokens.read);
    const denied = await post('/cleanup/halt', reader);
    expect(denied.statusCode).toBe(403);
    expect(denied.body).toContain('needs an admin token');
    const admin = await login(f.server.tokens.admin);
    expect((await post('/cleanup/halt', admin, {}, 'forged')).statusCode).toBe(403);
    const other = await login(f.server.tokens.otherProject);
    const bound = await post('/cleanup/enforce', other, { project: hostileProject });
    expect(bound.statusCode).toBe(403);
    expect((await post('/cleanup/halt', other)).statusCode).toBe(403);
    expect(Number((await control()).halted)).toBe(0);
    expect(await f.server.database.db.selectFrom('cleanup_policies').selectAll().execute()).toEqual([]);
  });

  it('answers bad switch input with the reason and changes nothing', async () => {
    const admin = await login(f.server.tokens.admin);
    const noProject = await post('/cleanup/enforce', admin);
    expect(noProject.statusCode).toBe(400);
    expect(noProject.body).toContain('enforce needs a project');
    const unknown = await post('/cleanup/enforce', admin, { project: 'nope' });
    expect(unknown.statusCode).toBe(409);
    expect(unknown.body).toContain('no cleanup policy seen');
    const closed = await post('/cleanup/breakers/reset', admin, { project: '<b>x</b>' });
    expect(closed.statusCode).toBe(409);
    expect(closed.body).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(await f.server.database.db.selectFrom('cleanup_policies').selectAll().execute()).toEqual([]);
  });

  it('enforces a policy from the Cleanup page; the next pass plans the job', async () => {
    const admin = await login(f.server.tokens.admin);
    const before = await page('/cleanup', admin);
    expect(before.body).toContain('>Enforce</button>');
    const res = await post('/cleanup/enforce', admin, { project: hostileProject, environment: 'dev' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/cleanup');
    const policies = await f.server.database.db.selectFrom('cleanup_policies').selectAll().execute();
    expect(policies).toMatchObject([
      { project: hostileProject, environment: 'dev', enforced_by: 'dashboard:ops' },
    ]);

    await reportAll();
    await f.server.app.cleanup.pass.run();
    const after = await page('/cleanup', admin);
    expectEscaped(after.body);
    expect(after.body).toContain('badge mode-enforced');
    expect(after.body).toContain('badge job-planned');
    const list = await page('/', admin);
    const row = new RegExp(`data-environment-id="${hostile.id}"[\\s\\S]*?</tr>`).exec(list.body)![0];
    expect(row).toContain('kind-due');
  });

  it('halts and resumes from the Cleanup page', async () => {
    const admin = await login(f.server.tokens.admin);
    expect((await post('/cleanup/halt', admin)).statusCode).toBe(303);
    expect(Number((await control()).halted)).toBe(1);
    const halted = await page('/cleanup', admin);
    expect(halted.body).toContain('Cleanup is halted');
    expect(halted.body).toContain('Unhalt cleanup');
    expect((await post('/cleanup/resume', admin)).statusCode).toBe(303);
    expect(Number((await control()).halted)).toBe(0);
  });

  it('resets an open breaker (admin)', async () => {
    await f.server.app.cleanup.control.openBreakers(
      [{ project: 'shop', dueCount: 3, activeCount: 4 }],
      'planner',
      f.now(),
    );
    const admin = await login(f.server.tokens.admin);
    const open = await page('/cleanup', admin);
    expect(open.body).toMatch(/3 of 4 environments under enforced policies were due at once/);
    expect((await post('/cleanup/breakers/reset', admin, { project: 'shop' })).statusCode).toBe(303);
    expect(await f.server.database.db.selectFrom('cleanup_breakers').selectAll().execute()).toEqual([]);
  });

  it('cleans up now from the environment page through the job path, or says why not', async () => {
    const reader = await login(f.server.tokens.read);
    const readerPage = await page(`/environments/${shop.id}`, reader);
    expect(readerPage.body).toContain('Cleaning up now needs a developer or admin token.');
    const denied = await post(`/environments/${shop.id}/cleanup`, reader, {}, csrfOf(readerPage.body));
    expect(denied.statusCode).toBe(403);

    const admin = await login(f.server.tokens.admin);
    const detail = await page(`/environments/${shop.id}`, admin);
    expect(detail.body).toContain('id="plan"');
    expect(detail.body).toContain('>Clean up now</button>');
    const jobs = () =>
      f.server.database.db
        .selectFrom('cleanup_jobs')
        .selectAll()
        .where('environment_id', '=', shop.id)
        .execute();
    expect(await jobs()).toEqual([]);
    const now = await post(`/environments/${shop.id}/cleanup`, admin, {}, csrfOf(detail.body));
    expect(now.statusCode).toBe(303);
    expect(await jobs()).toMatchObject([{ trigger: 'now', state: 'planned', actor: 'dashboard:ops' }]);
    const again = await post(`/environments/${shop.id}/cleanup`, admin, {}, csrfOf(detail.body));
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain('a cleanup job is already open');
    expect(await jobs()).toHaveLength(1);
    const shown = await page(`/environments/${shop.id}`, admin);
    expect(shown.body).toContain('id="environment-jobs"');
    expect(shown.body).toContain('dashboard:ops (clean up now)');

    // The hostile environment's page: its plan, escaped.
    const hostilePage = await page(`/environments/${hostile.id}`, admin);
    expectEscaped(hostilePage.body);
    expect(hostilePage.body).toContain('kind-due');

    // The executor does the job: the list then says when the environment was cleaned and by which job.
    const [job] = await jobs();
    const agent = f.server.tokens.agent;
    const claimed = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'exec-1', targetKeys: [target] },
      agent,
    );
    expect(claimed.body.jobs.map((j: { id: string }) => j.id)).toContain(job!.id);
    expect(
      (await f.call('POST', `/api/v1/cleanup/jobs/${job!.id}/start`, { executorId: 'exec-1' }, agent)).body,
    ).toMatchObject({ proceed: true });
    const completed = await f.call(
      'POST',
      `/api/v1/cleanup/jobs/${job!.id}/complete`,
      { executorId: 'exec-1', outcome: 'done', message: 'deleted' },
      agent,
    );
    expect(completed.status).toBe(200);
    const list = (await page(`/?search=${encodeURIComponent(shop.namespace)}`, reader)).body;
    const row = new RegExp(`data-environment-id="${shop.id}"[\\s\\S]*?</tr>`).exec(list)![0];
    expect(row).toMatch(/cleaned <time[^>]*>/);
    expect(row).toContain(`by cleanup job <code title="${job!.id}">${job!.id.slice(0, 8)}</code>`);
    expect(row).not.toContain('not planned yet');
  });
});
