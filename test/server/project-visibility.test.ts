/**
 * Who sees which projects: a person signed in sees exactly the projects they hold a role in (all
 * of them with a role for "*"), a project-bound token its project; in every list, count, search,
 * chart, the savings, the Cleanup page, the audit log and by id (another project's environment is
 * not found, so an id does not tell that it exists). On both databases.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PersonSessionRepository } from '../../src/server/db/repositories/person-sessions.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';
import { personSessionCookie, sessionTtlMs } from '../../src/server/dashboard/common/session.js';
import { RolesFile } from '../../src/server/oidc/roles-file.js';
import { cleanupFixture, target, type CleanupFixture } from './cleanup/fixture.js';
import { dialects } from './helpers.js';

const hour = 3_600_000;
const projects = ['alpha', 'beta', 'gamma'] as const;
type Project = (typeof projects)[number];

const roles = `roles:
  - project: alpha
    role: developer
    groups: [alpha-devs]
  - project: beta
    role: viewer
    groups: [beta-viewers]
  - project: "*"
    role: admin
    groups: [platform]
`;

describe.each(dialects)('what each principal sees, on %s', (dialect) => {
  let f: CleanupFixture;
  let dir: string;
  /** Per project: an environment cleanup deleted (`dev`) and one left active (`live`). */
  const ids = {} as Record<Project, { cleaned: string; live: string }>;
  let alphaToken: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tend-visibility-'));
    const rolesFile = join(dir, 'roles.yaml');
    writeFileSync(rolesFile, roles);
    f = await cleanupFixture(dialect, 10, {
      prices: { cpuHour: 0.04, gibHour: 0.005 },
      oidc: {
        issuer: 'https://login.example.com/realms/platform',
        clientId: 'tend',
        clientSecret: 'visibility-test-client-secret',
        groupsClaim: 'groups',
        scopes: 'openid email profile',
        roles: new RolesFile(rolesFile),
      },
    });
    alphaToken = (
      await new TokenRepository(f.server.database.db).create({
        name: 'alpha-ci',
        scope: 'read',
        project: 'alpha',
      })
    ).token;
    const requests = { cpuMillicores: 1000, memoryBytes: 2 ** 30, pods: 1 };
    for (const project of projects) {
      const cleaned = await f.environment({ user: `${project}user`, project });
      const live = await f.environment({
        user: `${project}live`,
        project,
        environment: 'live',
        policy: null,
      });
      ids[project] = { cleaned: cleaned.id, live: live.id };
      expect((await f.call('POST', '/api/v1/cleanup/enforce', { project })).status).toBe(200);
    }
    // Nine hours idle: the 8h policies delete each project's `dev`; the executor does it.
    f.advance(9 * hour);
    const live = projects.map((p) => f.item(`${p}-${p}live`, `uid-${p}live`, { environment: 'live' }, p));
    await f.report('e1', [
      ...projects.map((p) => f.item(`${p}-${p}user`, `uid-${p}user`, { requests }, p)),
      ...live,
    ]);
    await f.server.app.cleanup.pass.run();
    const agent = f.server.tokens.agent;
    const claimed = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'e1', targetKeys: [target] },
      agent,
    );
    expect(claimed.body.jobs).toHaveLength(3);
    for (const job of claimed.body.jobs as { id: string }[]) {
      await f.call('POST', `/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' }, agent);
      const done = { executorId: 'e1', outcome: 'done', message: 'done' };
      expect((await f.call('POST', `/api/v1/cleanup/jobs/${job.id}/complete`, done, agent)).status).toBe(200);
    }
    f.advance(hour);
    await f.report('e1', live);
    await f.server.app.cleanup.pass.run();
    // An audit entry of each project's live environment.
    for (const project of projects) {
      expect(
        (await f.call('POST', `/api/v1/environments/${ids[project].live}/keep-alive`, { for: '1h' })).status,
      ).toBe(200);
    }
  });
  afterAll(async () => {
    await f?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A cookie of a person signed in with `groups` (a session as the sign-in callback makes it). */
  async function signedIn(groups: string[]): Promise<string> {
    const { id } = await new PersonSessionRepository(f.server.database.db).create(
      {
        issuer: 'https://login.example.com/realms/platform',
        subject: `subject-${groups.join('-') || 'none'}`,
        email: `${groups[0] ?? 'nobody'}@example.com`,
        name: 'Person',
        groups,
      },
      sessionTtlMs,
      f.now(),
    );
    return `${personSessionCookie}=${f.server.app.oidc!.sign(id)}`;
  }

  const page = async (cookie: string, url: string) => {
    const res = await f.server.app.inject({ url, headers: { cookie } });
    return { status: res.statusCode, body: res.body };
  };

  /** The counts per state above the list: state (or `all`) → number. */
  const countsOf = (body: string) =>
    Object.fromEntries(
      [...body.matchAll(/data-state="([a-z]+)"[^>]*>[^<]*<strong>(\d+)<\/strong>/g)].map((m) => [
        m[1]!,
        Number(m[2]),
      ]),
    );

  /** Which of the three projects a page names (each project's namespaces start with its name). */
  const projectsOn = (body: string) =>
    projects.filter((p) => body.includes(`${p}-${p}`) || body.includes(`>${p}<`));

  it('a developer of alpha and viewer of beta sees alpha and beta, never gamma, on every page', async () => {
    const cookie = await signedIn(['alpha-devs', 'beta-viewers']);
    const list = await page(cookie, '/');
    expect(list.status).toBe(200);
    expect(list.body).toContain('alpha-alphalive');
    expect(list.body).toContain('beta-betalive');
    expect(list.body).not.toContain('gamma');
    // The counts and the chart are of alpha and beta: two live and two cleaned environments.
    expect(list.body).toContain('projects alpha, beta');
    expect(countsOf(list.body)).toEqual({ all: 4, active: 2, cleaned: 2 });
    const today = f.now().toISOString().slice(0, 10);
    expect(list.body).toContain(`<title>${today} active: 2</title>`);
    expect(countsOf((await page(cookie, '/?project=gamma')).body)).toEqual({ all: 0 });
    for (const url of ['/?search=gamma', '/?project=gamma', '/?search=live&limit=500', '/?state=cleaned']) {
      const res = await page(cookie, url);
      expect(res.status, url).toBe(200);
      // (The search text itself is echoed in the filter form.)
      expect(projectsOn(res.body), url).not.toContain('gamma');
    }
    expect((await page(cookie, '/?search=live')).body).toContain('beta-betalive');

    for (const project of ['alpha', 'beta'] as const) {
      const env = await page(cookie, `/environments/${ids[project].live}`);
      expect(env.status).toBe(200);
      expect(env.body).toContain(`${project}-${project}live`);
    }
    // Another project's environment is not found, as one that does not exist.
    for (const id of [ids.gamma.live, ids.gamma.cleaned, '01HZZZZZZZZZZZZZZZZZZZZZZZ']) {
      const env = await page(cookie, `/environments/${id}`);
      expect(env.status).toBe(404);
      expect(env.body).not.toContain('gamma');
    }

    const savings = await page(cookie, '/savings');
    expect(savings.status).toBe(200);
    expect(projectsOn(savings.body)).toEqual(['alpha', 'beta']);
    const gammaSavings = await page(cookie, '/savings?project=gamma');
    expect(gammaSavings.status).toBe(403);
    expect(gammaSavings.body).toContain('You hold no role in project gamma.');
    expect(projectsOn((await page(cookie, '/savings?project=beta')).body)).toEqual(['beta']);

    const cleanup = await page(cookie, '/cleanup');
    expect(cleanup.status).toBe(200);
    expect(cleanup.body).toContain('alpha');
    expect(cleanup.body).toContain('beta');
    expect(cleanup.body).not.toContain('gamma');
  });

  it('a person with a role for every project sees every project', async () => {
    const cookie = await signedIn(['platform']);
    const list = await page(cookie, '/');
    for (const project of projects) expect(list.body).toContain(`${project}-${project}live`);
    expect(list.body).toContain('all projects');
    expect(countsOf(list.body)).toEqual({ all: 6, active: 3, cleaned: 3 });
    expect(projectsOn((await page(cookie, '/savings')).body)).toEqual([...projects]);
    expect((await page(cookie, '/cleanup')).body).toContain('gamma');
    expect((await page(cookie, `/environments/${ids.gamma.live}`)).status).toBe(200);
  });

  it('a page asked for a project the person cannot see shows nothing of it, nor of any other', async () => {
    const cookie = await signedIn(['alpha-devs', 'beta-viewers']);
    const own = await page(cookie, '/savings?project=alpha');
    expect(own.status).toBe(200);
    expect(projectsOn(own.body)).toEqual(['alpha']);
    const savings = await page(cookie, '/savings?project=gamma');
    expect(savings.status).toBe(403);
    expect(projectsOn(savings.body)).toEqual([]);
    // The list and its chart, narrowed to a project not visible: empty, not every project.
    const list = await page(cookie, '/?project=gamma');
    expect(list.status).toBe(200);
    expect(projectsOn(list.body)).toEqual([]);
    expect(countsOf(list.body).all ?? 0).toBe(0);
    expect(list.body).toContain('projects (none)');
    expect(list.body).not.toMatch(/\d{4}-\d{2}-\d{2} [a-z]+: [1-9]/);
    // Narrowed to a project it sees, the chart counts that project's environments.
    expect((await page(cookie, '/?project=alpha')).body).toMatch(/\d{4}-\d{2}-\d{2} [a-z]+: [1-9]/);
  });

  it('a person with no role sees nothing: the page saying whom to ask, on every page', async () => {
    const cookie = await signedIn(['interns']);
    for (const url of ['/', '/savings', '/cleanup', `/environments/${ids.alpha.live}`]) {
      const res = await page(cookie, url);
      expect(res.status, url).toBe(403);
      expect(res.body, url).toContain('No access yet');
      expect(projectsOn(res.body), url).toEqual([]);
    }
  });

  it('a developer of alpha and viewer of beta may protect in alpha, not in beta (403, nothing changed, no button)', async () => {
    const cookie = await signedIn(['alpha-devs', 'beta-viewers']);
    const alpha = await page(cookie, `/environments/${ids.alpha.live}`);
    expect(alpha.body).toMatch(/<button[^>]*>\s*Protect\s*</);
    const beta = await page(cookie, `/environments/${ids.beta.live}`);
    expect(beta.body).not.toMatch(/<button[^>]*>\s*Protect\s*</);
    expect(beta.body).toContain('Protecting needs the developer role in this project.');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(beta.body)![1]!;
    const post = (id: string) =>
      f.server.app.inject({
        method: 'POST',
        url: `/environments/${id}/protect`,
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ _csrf: csrf }).toString(),
      });
    const refused = await post(ids.beta.live);
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain('protect needs the developer role in this project.');
    // Gamma's is not found at all.
    expect((await post(ids.gamma.live)).statusCode).toBe(404);
    const protectedOf = async (id: string) =>
      (await f.call('GET', `/api/v1/environments/${id}`)).body.environment.protected as boolean;
    expect(await protectedOf(ids.beta.live)).toBe(false);
    expect(await protectedOf(ids.gamma.live)).toBe(false);
    // The same form in alpha protects: the refusal above is the role's, not the form's.
    expect((await post(ids.alpha.live)).statusCode).toBe(303);
    expect(await protectedOf(ids.alpha.live)).toBe(true);
  });

  it('a token bound to alpha sees alpha only in the API: lists, by id, audit, savings, cleanup', async () => {
    const get = (url: string) => f.call('GET', url, undefined, alphaToken);
    const listed = (await get('/api/v1/environments?limit=500')).body.items as { project: string }[];
    expect(new Set(listed.map((e) => e.project))).toEqual(new Set(['alpha']));
    expect((await get('/api/v1/environments?search=gamma')).body.items).toEqual([]);
    expect((await get(`/api/v1/environments/${ids.beta.live}`)).status).toBe(404);
    expect((await get(`/api/v1/environments/${ids.alpha.live}`)).status).toBe(200);
    const audit = (await get('/api/v1/audit?limit=500')).body.items as {
      detail: { project?: string } | null;
    }[];
    expect(audit.length).toBeGreaterThan(0);
    expect(new Set(audit.map((a) => a.detail?.project))).toEqual(new Set(['alpha']));
    const report = (await get('/api/v1/cleanup/report')).body as { projects: { project: string }[] };
    expect(report.projects.map((p) => p.project)).toEqual(['alpha']);
    expect((await get('/api/v1/cleanup/report?project=beta')).status).toBe(403);
    const jobs = (await get('/api/v1/cleanup/jobs')).body.items as { project: string }[];
    expect(jobs.map((j) => j.project)).toEqual(['alpha']);
    // An unbound read token sees every project.
    const all = (await f.call('GET', '/api/v1/cleanup/jobs', undefined, f.server.tokens.read)).body.items as {
      project: string;
    }[];
    expect(new Set(all.map((j) => j.project))).toEqual(new Set(projects));
  });
});
