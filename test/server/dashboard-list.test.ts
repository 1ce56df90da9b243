/**
 * The environments list and page of the dashboard: substring search (server-side, bounded,
 * escaped, LIKE wildcards taken literally), counts per state, clusters by their context name or
 * API server (never the kube-system uid), no Protect/Keep alive on cleaned environments, and the
 * chart of environments by state over time (server-side SVG from the daily counts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TendEvent } from '../../src/events/catalog.js';
import { Migrator } from 'kysely';
import { migrateToLatest, migrations } from '../../src/server/db/database.js';
import { EnvironmentRepository } from '../../src/server/db/repositories/environments.js';
import { firstDay, stateDays, statesChart } from '../../src/server/dashboard/pages/environments-chart.js';
import {
  countRows,
  createTestDatabase,
  createTestServer,
  dialects,
  postEvents,
  session,
  type TestServer,
} from './helpers.js';
import { postLogin } from './helpers.js';

const day = 86_400_000;
let clock: Date;

describe.each(dialects)('dashboard list on %s', (dialect) => {
  let s: TestServer;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    clock = new Date('2026-11-10T12:00:00.000Z');
    s = await createTestServer(dialect, { now: () => clock });
    const envs = [
      session({ project: 'shop', user: 'alice', namespace: 'shop-alice' }),
      session({ project: 'shop', user: 'Bob', namespace: 'shop-bob', environment: 'preview' }),
      session({ project: 'blog', user: 'carol', namespace: 'pct%lit' }),
      session({ project: 'blog', user: 'dave', namespace: 'under_lit' }),
    ];
    for (const e of envs) await postEvents(s, [e.started(), e.ns('ready', { uid: `uid-${e.namespace}` })]);
    // An environment on a target without a context: shown by its API server.
    const noContext = session({ project: 'ops', user: 'erin', namespace: 'ops-erin' });
    const ns = noContext.ns('ready', { uid: 'uid-ops' }) as TendEvent & { payload: Record<string, unknown> };
    ns.payload.target = {
      kind: 'kubernetes',
      clusterId: 'kube-system-uid-7',
      server: 'https://api.ops:6443',
      context: '',
    };
    await postEvents(s, [noContext.started(), ns]);
    // dave's environment is cleaned.
    await postEvents(s, [envs[3]!.ns('missing', { uid: 'uid-under_lit' })]);
    for (const row of await s.database.db.selectFrom('environments').select(['id', 'namespace']).execute()) {
      ids[row.namespace] = row.id;
    }
  });
  afterAll(async () => s.close());

  const login = async (token = s.tokens.admin) => {
    const res = await postLogin(s.app, { token, next: '/' });
    const cookie = res.cookies.find((c) => c.name === 'tend_session')!;
    return `tend_session=${cookie.value}`;
  };
  const page = async (url: string, token?: string) =>
    s.app.inject({ method: 'GET', url, headers: { cookie: await login(token) } });
  const rows = (body: string) => [...body.matchAll(/<tr data-environment-id="([^"]+)"/g)].map((m) => m[1]);
  const namespaces = (body: string) =>
    rows(body).map((id) => Object.entries(ids).find(([, v]) => v === id)?.[0]);

  it('searches project, environment, namespace and owner, case-insensitively', async () => {
    expect(namespaces((await page('/?search=ALI')).body)).toEqual(['shop-alice']);
    expect(namespaces((await page('/?search=bob')).body)).toEqual(['shop-bob']);
    expect(namespaces((await page('/?search=previe')).body)).toEqual(['shop-bob']);
    expect(namespaces((await page('/?search=blo')).body).sort()).toEqual(['pct%lit', 'under_lit']);
    // With the other filters.
    expect(namespaces((await page('/?search=lit&state=active')).body)).toEqual(['pct%lit']);
    // The API takes the same parameter.
    const api = await s.app.inject({
      method: 'GET',
      url: '/api/v1/environments?search=CAROL',
      headers: s.auth(s.tokens.read),
    });
    expect(api.json<{ items: { namespace: string }[] }>().items.map((e) => e.namespace)).toEqual(['pct%lit']);
  });

  it('takes LIKE wildcards and quotes in the search literally', async () => {
    expect(namespaces((await page('/?search=%25')).body)).toEqual(['pct%lit']);
    expect(namespaces((await page('/?search=_')).body)).toEqual(['under_lit']);
    expect(namespaces((await page('/?search=%5C')).body)).toEqual([]);
    const injection = await page(`/?search=${encodeURIComponent("' or 1=1; drop table environments; --")}`);
    expect(injection.statusCode).toBe(200);
    expect(rows(injection.body)).toEqual([]);
    expect(await countRows(s.database.db, 'environments')).toBe(5);
  });

  it('escapes hostile search text and refuses what is too long or unstorable', async () => {
    const hostile = '"><script>alert(1)</script>';
    const res = await page(`/?search=${encodeURIComponent(hostile)}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('<script>alert(1)');
    expect(res.body).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect((await page(`/?search=${'x'.repeat(201)}`)).statusCode).toBe(400);
    expect((await page(`/?search=${'x'.repeat(200)}`)).statusCode).toBe(200);
    expect((await page('/?search=a%00b')).statusCode).toBe(400);
    expect((await page('/?search=%ED%A0%80')).statusCode).toBe(200); // decoded as U+FFFD, stored nowhere
    expect(await countRows(s.database.db, 'environments')).toBe(5);
  });

  it('counts environments per state under the filter, each a link keeping the search', async () => {
    const all = (await page('/')).body;
    expect(all).toMatch(/data-state="all"\s+aria-current="page"\s*>All <strong>5<\/strong>/);
    expect(all).toMatch(/data-state="active"\s*>active <strong>4<\/strong>/);
    expect(all).toMatch(/data-state="cleaned"\s*>cleaned <strong>1<\/strong>/);
    const blog = (await page('/?search=blog&state=cleaned')).body;
    expect(blog).toMatch(
      /href="\/\?search=blog&amp;state=active"\s+data-state="active"\s*>active <strong>1<\/strong>/,
    );
    expect(blog).toMatch(/data-state="cleaned"\s+aria-current="page"\s*>cleaned <strong>1<\/strong>/);
    expect(blog).toMatch(/href="\/\?search=blog"\s+data-state="all"\s*>All <strong>2<\/strong>/);
  });

  it('names clusters by context or API server, never by the kube-system uid', async () => {
    const shop = (await page(`/environments/${ids['shop-alice']}`)).body;
    expect(shop).toMatch(/class="target"[^>]*>\s*kubernetes · dev\s*</);
    expect(shop).not.toContain('cluster-1');
    const ops = (await page(`/environments/${ids['ops-erin']}`)).body;
    expect(ops).toMatch(/class="target"[^>]*>\s*kubernetes · https:\/\/api.ops:6443\s*</);
    expect(ops).not.toContain('kube-system-uid-7');
  });

  it('offers no Protect or Keep alive on a cleaned environment, and refuses them', async () => {
    const active = (await page(`/environments/${ids['shop-alice']}`)).body;
    expect(active).toContain('>\n        Protect\n');
    expect(active).toMatch(/Keep alive/);
    // Cleaned by a namespaceStatus, not by a job: the list says so instead of "not planned yet".
    const list = (await page('/?search=under')).body;
    const listRow = new RegExp(`data-environment-id="${ids.under_lit}"[\\s\\S]*?</tr>`).exec(list)![0];
    expect(listRow).toContain('by hand (&#96;tend cleanup env&#96;) or found gone');
    expect(listRow).not.toContain('not planned yet');
    const cleanedPage = await page(`/environments/${ids.under_lit}`);
    expect(cleanedPage.body).toContain('id="cleaned-note"');
    expect(cleanedPage.body).not.toMatch(/action="\/environments\/[^"]+\/(protect|keep-alive)"/);

    const cookie = await login();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(
      (await s.app.inject({ method: 'GET', url: '/', headers: { cookie } })).body,
    )![1]!;
    const audits = await countRows(s.database.db, 'audit_log');
    for (const action of ['protect', 'keep-alive']) {
      const res = await s.app.inject({
        method: 'POST',
        url: `/environments/${ids.under_lit}/${action}`,
        headers: { cookie },
        payload: { _csrf: csrf, for: '8h' },
      });
      expect(res.statusCode).toBe(409);
      expect(res.body).toContain('is cleaned: nothing is left to');
    }
    const row = await s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('id', '=', ids.under_lit!)
      .executeTakeFirstOrThrow();
    expect([row.protected, row.keep_alive_until]).toEqual([0, null]);
    expect(await countRows(s.database.db, 'audit_log')).toBe(audits);
  });

  it('charts environments by state per day from the recorded counts, today counted live', async () => {
    const repo = new EnvironmentRepository(s.database.db, s.database.reader);
    // Two days ago, before carol's environment existed in the record: pretend with a fresh count.
    await repo.recordStateCounts(new Date(clock.getTime() - 2 * day));
    await repo.recordStateCounts(new Date(clock.getTime() - day));
    // Recorded again the same day: the counts are replaced, not added.
    await repo.recordStateCounts(new Date(clock.getTime() - day));
    const body = (await page('/')).body;
    const svg = /<svg[\s\S]*?<\/svg>/.exec(body)?.[0] ?? '';
    expect(svg).toContain('role="img"');
    expect(svg).toContain('<title>2026-11-08 active: 4</title>');
    expect(svg).toContain('<title>2026-11-09 active: 4</title>');
    expect(svg).toContain('<title>2026-11-09 cleaned: 1</title>');
    expect(svg).toContain('<title>2026-11-10 active: 4</title>');
    expect(svg).toContain('<title>2026-11-07: not recorded</title>');
    expect(svg).not.toMatch(/<script|on\w+=/i);
    expect(body).toContain('Environments by state, 2026-10-12 to 2026-11-10 (UTC days) · all projects');

    // A state that empties drops to 0 on that day's record.
    await postEvents(s, [
      session({ project: 'blog', user: 'dave', namespace: 'under_lit' }).ns('ready', {
        uid: 'uid-under_lit-2',
      }),
    ]);
    await repo.recordStateCounts(new Date(clock.getTime()));
    const today = await s.database.db
      .selectFrom('environment_state_days')
      .select(['state', 'count'])
      .where('day', '=', '2026-11-10')
      .where('project', '=', 'blog')
      .orderBy('state')
      .execute();
    expect(today.map((r) => [r.state, Number(r.count)])).toEqual([['active', 2]]);

    // The next day, yesterday's record stays as it was.
    clock = new Date(clock.getTime() + day);
    const next = /<svg[\s\S]*?<\/svg>/.exec((await page('/')).body)?.[0] ?? '';
    expect(next).toContain('<title>2026-11-10 active: 5</title>');
    expect(next).toContain('<title>2026-11-11 active: 5</title>');
    expect(next).not.toContain('2026-11-10 cleaned');
  });

  it('charts only its project for a project-bound token, and the project of the filter', async () => {
    const blog = (await page('/?project=blog')).body;
    expect(blog).toContain('· project blog</figcaption>');
    expect(blog).toMatch(/<title>2026-11-09 active: 1<\/title>/);
    const other = (await page('/', s.tokens.otherProject)).body;
    expect(other).toContain('· project other</figcaption>');
    expect(other).not.toMatch(/<rect data-day/);
    const hostile = (await page(`/?project=${encodeURIComponent('<b>x</b>')}`)).body;
    expect(hostile).toContain('· project &lt;b&gt;x&lt;/b&gt;</figcaption>');
  });
});

describe.each(dialects)('the estimated history of migration 0007 on %s', (dialect) => {
  it('fills the 30 days before it from first-seen and cleaned times, marked as estimates', async () => {
    const testDb = await createTestDatabase(dialect);
    const database = await testDb.open();
    try {
      const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
      expect((await migrator.migrateTo('0003_cleanup')).error).toBeUndefined();
      const now = Date.now();
      const ago = (days: number) => new Date(now - days * day).toISOString();
      const env = (id: string, createdDaysAgo: number, cleanedDaysAgo?: number) => ({
        id,
        project: 'p',
        name: id,
        namespace: id,
        state: cleanedDaysAgo === undefined ? ('active' as const) : ('cleaned' as const),
        protected: 0,
        created_at: ago(createdDaysAgo),
        updated_at: ago(0),
        cleaned_at: cleanedDaysAgo === undefined ? null : ago(cleanedDaysAgo),
        last_activity_at: ago(0),
      });
      await database.db
        .insertInto('environments')
        .values([env('old', 40), env('ten', 10), env('cleaned', 5, 2), env('new', 0)])
        .execute();
      await migrateToLatest(database);

      const todayStart = Math.floor(now / day) * day;
      const dayOf = (daysAgo: number) => new Date(todayStart - daysAgo * day).toISOString().slice(0, 10);
      const rows = await database.db.selectFrom('environment_state_days').selectAll().execute();
      const at = (daysAgo: number) =>
        Object.fromEntries(
          rows.filter((r) => r.day === dayOf(daysAgo)).map((r) => [r.state, Number(r.count)]),
        );
      expect(at(1)).toEqual({ active: 2, cleaned: 1 });
      expect(at(2)).toEqual({ active: 2, cleaned: 1 });
      expect(at(3)).toEqual({ active: 3 });
      expect(at(7)).toEqual({ active: 2 });
      expect(at(12)).toEqual({ active: 1 });
      expect(at(30)).toEqual({ active: 1 });
      expect(at(31)).toEqual({});
      expect(at(0)).toEqual({}); // today is recorded by the server, not estimated
      expect(rows.every((r) => Number(r.estimated) === 1)).toBe(true);

      // The chart draws them paler and says so.
      const repo = new EnvironmentRepository(database.db, database.reader);
      const svg = statesChart(
        stateDays(
          await repo.stateHistory(firstDay(new Date(now)), new Set(['p'])),
          { active: 3 },
          new Date(now),
        ),
        'project p',
      ).value;
      expect(svg).toContain(`<title>${dayOf(1)} cleaned: 1 (estimated)</title>`);
      expect(svg).toContain(`<title>${dayOf(0)} active: 3</title>`);
      expect(svg).toContain('paler: estimated from first-seen and cleaned times');
    } finally {
      await database.close();
      await testDb.drop();
    }
  });
});
