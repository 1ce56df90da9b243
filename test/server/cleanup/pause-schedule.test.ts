/**
 * Pause, resume and schedules through the server on SQLite and PostgreSQL: a schedule puts an
 * environment to sleep (a pause job, the rule named in the decision), wakes what it paused at
 * wakeAt (a resume job), the registry shows `paused` in the list and its filter, a command that
 * resumes at its start makes it active again, and `POST /environments/:id/resume` plans a resume
 * job through the same checks (409 when nothing is paused).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dialects, postEvents, session } from '../helpers.js';
import { postLogin } from '../helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './fixture.js';

const minute = 60_000;
const schedule = {
  sleepAt: '20:00',
  wakeAt: '08:00',
  weekdays: ['mon', 'tue', 'wed', 'thu', 'fri'] as ('mon' | 'tue' | 'wed' | 'thu' | 'fri')[],
  timeZone: 'Europe/Berlin',
};

describe.each(dialects)('pause and schedules on %s', (dialect) => {
  let f: CleanupFixture;
  beforeEach(async () => {
    // 2026-03-29T00:00Z: Sunday night in Berlin, the night the clocks spring forward.
    f = await cleanupFixture(dialect);
  });
  afterEach(async () => {
    await f.close();
  });

  const cleanup = () => f.server.app.cleanup;
  /** Claims, starts and completes every planned job as one executor; returns the jobs. */
  async function execute(outcome = 'done') {
    const claimed = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'e1', targetKeys: [target] },
      f.server.tokens.agent,
    );
    for (const job of claimed.body.jobs) {
      const started = await f.call(
        'POST',
        `/api/v1/cleanup/jobs/${job.id}/start`,
        { executorId: 'e1' },
        f.server.tokens.agent,
      );
      expect(started.body.proceed).toBe(true);
      const done = await f.call(
        'POST',
        `/api/v1/cleanup/jobs/${job.id}/complete`,
        { executorId: 'e1', outcome, message: `${job.action}d` },
        f.server.tokens.agent,
      );
      expect(done.status).toBe(200);
    }
    return claimed.body.jobs as { action: string; reason: string }[];
  }
  const plan = async () =>
    (await f.call('GET', '/api/v1/cleanup/plan?within=7d', undefined, f.server.tokens.read)).body.items[0];
  const environment = async (id: string) =>
    (await f.call('GET', `/api/v1/environments/${id}`)).body.environment;

  async function scheduled() {
    const s = session({ user: 'alice', command: 'build' });
    await postEvents(f.server, [
      s.started({ afterInactivity: '3d', action: 'pause', schedule }),
      s.ns('ready', { uid: 'uid-alice', role: 'build' }),
      s.completed(),
    ]);
    const list = await f.call('GET', '/api/v1/environments?project=shop');
    const env = list.body.items[0] as { id: string; namespace: string };
    expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' })).status).toBe(200);
    return { ...env, session: s };
  }

  it('sleeps outside working hours, wakes at wakeAt what it paused, and explains which rule decided', async () => {
    const env = await scheduled();
    expect((await environment(env.id)).policy).toEqual({ afterInactivity: '3d', action: 'pause', schedule });

    // Used on Sunday night (asleep): paused after 30 minutes idle, by the schedule.
    f.advance(31 * minute);
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    expect(await cleanup().pass.run()).toMatchObject({ planned: 1 });
    const pausing = await plan();
    expect(pausing).toMatchObject({ kind: 'due', action: 'pause' });
    expect(pausing.sentence).toMatch(
      /^schedule awake 08:00–20:00 Europe\/Berlin, mon tue wed thu fri: used while asleep, idle 30m since; last activity/,
    );
    const [job] = await execute();
    expect(job).toMatchObject({ action: 'pause' });
    const paused = await environment(env.id);
    expect(paused).toMatchObject({ state: 'paused', pausedBy: 'schedule', pausedAt: expect.any(String) });
    const filtered = await f.call('GET', '/api/v1/environments?state=paused');
    expect(filtered.body.items.map((e: { id: string }) => e.id)).toEqual([env.id]);

    // Next: resumed at Monday 08:00 in Berlin (CEST since the night): 06:00 UTC.
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    await cleanup().pass.run();
    const waking = await plan();
    expect(waking).toMatchObject({ kind: 'scheduled', action: 'resume', dueAt: '2026-03-30T06:00:00.000Z' });
    expect(waking.sentence).toMatch(
      /^resumed at 2026-03-30 08:00 \+02:00 Europe\/Berlin \(2026-03-30 06:00 UTC\) by the schedule/,
    );

    f.advance(Date.parse('2026-03-30T06:00:10Z') - f.now().getTime());
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    expect(await cleanup().pass.run()).toMatchObject({ planned: 1 });
    const [resume] = await execute();
    expect(resume).toMatchObject({ action: 'resume' });
    expect(resume!.reason).toMatch(/^schedule .*: awake since 2026-03-30 08:00 \+02:00 Europe\/Berlin/);
    expect(await environment(env.id)).toMatchObject({ state: 'active', pausedBy: null });

    // Awake: the next decision is the pause at 20:00 CEST.
    await cleanup().pass.run();
    expect(await plan()).toMatchObject({
      kind: 'scheduled',
      action: 'pause',
      dueAt: '2026-03-30T18:00:00.000Z',
    });
  });

  it('a paused environment is active again after a command that resumes it; resume through the API needs it paused', async () => {
    const env = await scheduled();
    const resumeNow = () =>
      f.call('POST', `/api/v1/environments/${env.id}/resume`, {}, f.server.tokens.developer);
    const refused = await resumeNow();
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/not paused/);

    f.advance(31 * minute);
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    await cleanup().pass.run();
    await execute();
    expect((await environment(env.id)).state).toBe('paused');

    // Resume through the API: a resume job, the same path and checks.
    const accepted = await resumeNow();
    expect(accepted.status).toBe(200);
    expect(accepted.body.jobs).toMatchObject([{ action: 'resume', namespaceName: env.namespace }]);
    const audit = await f.call('GET', '/api/v1/audit?action=resume-now', undefined, f.server.tokens.read);
    expect(audit.body.items).toHaveLength(1);
    await execute();
    expect((await environment(env.id)).state).toBe('active');

    // Paused again; a `tend build` does not resume it, a `tend deploy` does (the CLI resumes first).
    f.advance(31 * minute);
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    await cleanup().pass.run();
    await execute();
    expect((await environment(env.id)).state).toBe('paused');
    const build = session({ user: 'alice', command: 'build' });
    await postEvents(f.server, [
      build.started({ afterInactivity: '3d', action: 'pause', schedule }),
      build.completed(),
    ]);
    expect((await environment(env.id)).state).toBe('paused');
    const deploy = session({ user: 'alice', command: 'deploy' });
    await postEvents(f.server, [
      deploy.started({ afterInactivity: '3d', action: 'pause', schedule }),
      deploy.completed(),
    ]);
    expect(await environment(env.id)).toMatchObject({ state: 'active', pausedAt: null });
  });

  it('the dashboard shows a paused environment with a Resume button: the same resume job, CSRF checked', async () => {
    const env = await scheduled();
    const res = await postLogin(f.server.app, { token: f.server.tokens.developer, next: '/' });
    const cookie = `tend_session=${res.cookies.find((c) => c.name === 'tend_session')!.value}`;
    const page = (as = cookie) =>
      f.server.app.inject({ method: 'GET', url: `/environments/${env.id}`, headers: { cookie: as } });
    const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)?.[1] ?? '';
    const resumeForm = `action="/environments/${env.id}/resume"`;
    expect((await page()).body).not.toContain(resumeForm);

    f.advance(31 * minute);
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    await cleanup().pass.run();
    await execute();
    const paused = await page();
    expect(paused.body).toContain(resumeForm);
    // A reader sees no Resume button: resuming is a write.
    const readerLogin = await postLogin(f.server.app, { token: f.server.tokens.read, next: '/' });
    const reader = `tend_session=${readerLogin.cookies.find((c) => c.name === 'tend_session')!.value}`;
    expect((await page(reader)).body).not.toContain(resumeForm);
    const list = await f.server.app.inject({ method: 'GET', url: '/?state=paused', headers: { cookie } });
    expect(list.body).toContain(env.namespace);

    const forged = await f.server.app.inject({
      method: 'POST',
      url: `/environments/${env.id}/resume`,
      headers: { cookie },
      payload: { _csrf: 'forged' },
    });
    expect(forged.statusCode).toBe(403);
    const jobs = async () =>
      (await f.call('GET', `/api/v1/cleanup/jobs?environmentId=${env.id}`, undefined, f.server.tokens.read))
        .body.items as { action: string; state: string }[];
    expect((await jobs()).filter((j) => j.action === 'resume')).toEqual([]);

    const pressed = await f.server.app.inject({
      method: 'POST',
      url: `/environments/${env.id}/resume`,
      headers: { cookie },
      payload: { _csrf: csrfOf(paused.body) },
    });
    expect(pressed.statusCode).toBe(303);
    expect((await jobs()).filter((j) => j.action === 'resume')).toMatchObject([{ state: 'planned' }]);
  });
});
