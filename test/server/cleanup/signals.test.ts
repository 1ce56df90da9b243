/**
 * Every cleanup signal tells the truth, through a listening server, a real webhook receiver on
 * 127.0.0.1 and the real CLI (bin/tend.js, run `npm run build` first): a policy that is not
 * enforced "would be deleted … once enforced" in the plan, `tend status`, the dashboard and no
 * command's warning line, and sends no `cleanup.warning`; an environment kept alive past its due
 * time is blocked, never "deleted in 1m"; `tend cleanup env` prints no "will be deleted"; a
 * schedule's wake-up sends no warning, and its sleep's warning names the schedule and the local
 * time; dry-runs are audited when they come due, not while they are ahead.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { postEvents, postLogin, session } from '../helpers.js';
import { cleanupFixture, type CleanupFixture } from './fixture.js';
import { cleanupWarning } from '../../../src/remote/cleanup-plan.js';
import { formatNotice, type Notice } from '../../../src/server/notifications/webhooks.js';
import type { PlanItemView } from '../../../src/api/cleanup.js';

const minute = 60_000;
const hour = 60 * minute;

/** A webhook receiver that records what arrives. */
async function receiver() {
  const received: { event: string; body: Record<string, unknown> }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        event: String(req.headers['tend-event']),
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function project(name: string, namespace: string): string {
  return makeProject({
    'tend.yml': [
      'kind: Project',
      `name: ${name}`,
      'environments:',
      '  - name: dev',
      `    defaultNamespace: ${namespace}`,
      '    cleanup: { afterInactivity: 8h, warnBefore: 1h }',
      'providers:',
      '  - name: exec',
      '',
    ].join('\n'),
    'api.tend.yml': 'kind: Build\ntype: exec\nname: api\nspec:\n  command: [node, -e, "0"]\n',
  });
}

describe('cleanup signals through the server, webhooks and the CLI', () => {
  let f: CleanupFixture;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let url: string;
  let configDir: string;
  const env = () => ({
    TEND_CONFIG_DIR: configDir,
    TEND_SERVER_URL: url,
    TEND_TOKEN: f.server.tokens.ingest,
  });
  const planItems = async (query: string) =>
    (await f.call('GET', `/api/v1/cleanup/plan?within=24h&${query}`, undefined, f.server.tokens.read)).body
      .items as {
      kind: string;
      reason: string | null;
      sentence: string;
      warning: boolean;
      warnAt: string | null;
    }[];
  const page = async (path: string) => {
    const login = await postLogin(f.server.app, { token: f.server.tokens.read, next: '/' });
    const cookie = `tend_session=${login.cookies.find((c) => c.name === 'tend_session')!.value}`;
    return (await f.server.app.inject({ method: 'GET', url: path, headers: { cookie } })).body;
  };
  const warnings = () => rx.received.filter((r) => r.event === 'cleanup.warning');
  const notify = () => f.server.app.notifications.pass();

  let shop: { id: string; namespace: string };
  let blog: { id: string; namespace: string };
  let shopRoot: string;
  let blogRoot: string;

  beforeAll(async () => {
    f = await cleanupFixture('sqlite');
    url = await f.server.app.listen({ port: 0, host: '127.0.0.1' });
    rx = await receiver();
    configDir = mkdtempSync(join(tmpdir(), 'tend-config-'));
    await f.server.app.notifications.addWebhook({ url: rx.url, events: ['cleanup.warning'] }, 'test');
    // shop: its policy is not enforced. blog: enforced, and kept alive past its due time.
    shop = await f.environment({ user: 'alice', policyExtra: { warnBefore: '1h' } });
    blog = await f.environment({ user: 'bob', project: 'blog', policyExtra: { warnBefore: '1h' } });
    expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'blog' })).status).toBe(200);
    shopRoot = project('shop', shop.namespace);
    blogRoot = project('blog', blog.namespace);
    f.advance(7.5 * hour);
    const kept = await f.call('POST', `/api/v1/environments/${blog.id}/keep-alive`, { for: '4h' });
    expect(kept.status).toBe(200);
    await f.report('e1', [
      f.item(shop.namespace, 'uid-alice'),
      f.item(blog.namespace, 'uid-bob', {}, 'blog'),
    ]);
    await f.server.app.cleanup.pass.run();
    await notify();
  }, 60_000);
  afterAll(async () => {
    rmSync(configDir, { recursive: true, force: true });
    removeProjects();
    await f?.close();
    await rx?.close();
  });

  it('a policy not enforced "would be deleted … once enforced" everywhere, and sends no warning', async () => {
    const [item] = await planItems('project=shop');
    expect(item).toMatchObject({ kind: 'dry-run', warning: false, warnAt: null });
    expect(item!.sentence).toMatch(
      /^would be deleted at 08:00 UTC once enforced \(`tend cleanup enforce --project shop`\) — no activity since 00:00 UTC/,
    );
    expect(warnings()).toEqual([]);

    const build = await runTend(['build'], { cwd: shopRoot, env: env() });
    expect(build.code, build.stderr).toBe(0);
    expect(build.stderr).not.toContain('tend: this environment');
    const status = await runTend(['status'], { cwd: shopRoot, env: env() });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      'cleanup: dry-run: would be deleted at 08:00 UTC once enforced (`tend cleanup enforce --project shop`)',
    );
    expect(status.stdout).not.toMatch(/will be|deleted in/);

    const detail = await page(`/environments/${shop.id}`);
    expect(detail).toContain('would be deleted at 08:00 UTC once enforced');
    expect(detail).not.toContain('>warning</span');
    expect(detail).not.toContain('will be deleted');
  }, 60_000);

  it('kept alive past its due time: blocked, never "deleted in …", no warning', async () => {
    const [item] = await planItems('project=blog');
    expect(item).toMatchObject({ kind: 'blocked', reason: 'kept-alive', warning: false, warnAt: null });
    expect(item!.sentence).toMatch(
      /^not cleaned while kept alive until 11:30 UTC; due at 08:00 UTC otherwise — no activity since/,
    );
    expect(warnings()).toEqual([]);
    const status = await runTend(['status'], { cwd: blogRoot, env: env() });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      'cleanup: not cleaned (kept-alive): not cleaned while kept alive until 11:30 UTC',
    );
    expect(status.stdout).not.toMatch(/will be|deleted in/);
  }, 60_000);

  it('once enforced, the same environment will be deleted: the warning is sent and every command says so', async () => {
    expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' })).status).toBe(200);
    // The commands above were activity (at 07:30): due at 15:30 now, warned from 14:30.
    f.advance(7.5 * hour);
    await f.report('e1', [
      f.item(shop.namespace, 'uid-alice'),
      f.item(blog.namespace, 'uid-bob', {}, 'blog'),
    ]);
    await f.server.app.cleanup.pass.run();
    await notify();
    const [item] = await planItems(`project=shop&namespace=${shop.namespace}`);
    expect(item).toMatchObject({ kind: 'scheduled', warning: true });
    expect(item!.sentence).toMatch(/^will be deleted at 15:30 UTC unless used/);
    const shopWarnings = warnings().filter(
      (w) => (w.body.environment as { project: string }).project === 'shop',
    );
    expect(shopWarnings.map((w) => w.body.action)).toEqual(['delete']);
    const build = await runTend(['build'], { cwd: shopRoot, env: env() });
    expect(build.stderr).toContain(
      'tend: this environment will be deleted at 15:30 UTC (in 30m) unless used',
    );
  }, 60_000);

  it('after tend cleanup env no line says the environment will be deleted', async () => {
    const cleaned = await runTend(['cleanup', 'env'], { cwd: shopRoot, env: env() });
    expect(cleaned.code, cleaned.stderr).toBe(0);
    expect(cleaned.stderr).not.toContain('will be deleted');
  }, 60_000);
});

describe('schedules: a wake-up is no warning; a sleep names the schedule and the local time', () => {
  let f: CleanupFixture;
  let rx: Awaited<ReturnType<typeof receiver>>;
  const schedule = {
    sleepAt: '19:00',
    wakeAt: '08:00',
    weekdays: ['mon', 'tue', 'wed', 'thu', 'fri'] as ('mon' | 'tue' | 'wed' | 'thu' | 'fri')[],
    timeZone: 'Europe/Berlin',
  };

  beforeAll(async () => {
    f = await cleanupFixture('sqlite');
    rx = await receiver();
    await f.server.app.notifications.addWebhook({ url: rx.url, events: ['cleanup.warning'] }, 'test');
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    await rx?.close();
  });

  it('sends no cleanup.warning for the resume at wakeAt, and warns of the pause at 19:00 Europe/Berlin', async () => {
    const s = session({ user: 'alice', command: 'build' });
    await postEvents(f.server, [
      s.started({ afterInactivity: '3d', action: 'pause', schedule, warnBefore: '1h' }),
      s.ns('ready', { uid: 'uid-alice', role: 'build' }),
      s.completed(),
    ]);
    expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' })).status).toBe(200);
    const list = await f.call('GET', '/api/v1/environments?project=shop');
    const id = list.body.items[0].id as string;
    // Sunday night in Berlin: used while asleep, paused after 30 minutes idle.
    f.advance(31 * minute);
    await f.report('e1', [f.item(s.namespace, 'uid-alice')]);
    expect(await f.server.app.cleanup.pass.run()).toMatchObject({ planned: 1 });
    const claimed = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'e1', targetKeys: ['kubernetes/cluster-1'] },
      f.server.tokens.agent,
    );
    const job = claimed.body.jobs[0] as { id: string };
    await f.call('POST', `/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' }, f.server.tokens.agent);
    await f.call(
      'POST',
      `/api/v1/cleanup/jobs/${job.id}/complete`,
      { executorId: 'e1', outcome: 'done', message: 'paused' },
      f.server.tokens.agent,
    );
    expect((await f.call('GET', `/api/v1/environments/${id}`)).body.environment.state).toBe('paused');

    // Monday 07:30 in Berlin (05:30 UTC): the wake at 08:00 is half an hour away.
    f.advance(Date.parse('2026-03-30T05:30:00Z') - f.now().getTime());
    await f.report('e1', [f.item(s.namespace, 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
    await f.server.app.notifications.pass();
    const waking = (await f.call('GET', '/api/v1/cleanup/plan?within=24h', undefined, f.server.tokens.read))
      .body.items[0];
    expect(waking).toMatchObject({ kind: 'scheduled', action: 'resume', warnAt: null, warning: false });
    expect(rx.received).toEqual([]);

    // Resumed at 08:00; at 17:30 UTC (19:30 CEST) … the pause at 19:00 CEST is 17:00 UTC: warn at 16:00.
    f.advance(Date.parse('2026-03-30T06:00:10Z') - f.now().getTime());
    await f.report('e1', [f.item(s.namespace, 'uid-alice')]);
    expect(await f.server.app.cleanup.pass.run()).toMatchObject({ planned: 1 });
    const resume = (
      await f.call(
        'POST',
        '/api/v1/cleanup/jobs/claim',
        { executorId: 'e1', targetKeys: ['kubernetes/cluster-1'] },
        f.server.tokens.agent,
      )
    ).body.jobs[0] as { id: string };
    await f.call(
      'POST',
      `/api/v1/cleanup/jobs/${resume.id}/start`,
      { executorId: 'e1' },
      f.server.tokens.agent,
    );
    await f.call(
      'POST',
      `/api/v1/cleanup/jobs/${resume.id}/complete`,
      { executorId: 'e1', outcome: 'done', message: 'resumed' },
      f.server.tokens.agent,
    );
    f.advance(Date.parse('2026-03-30T16:30:00Z') - f.now().getTime());
    await f.report('e1', [f.item(s.namespace, 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
    await f.server.app.notifications.pass();
    expect(rx.received.map((r) => [r.event, r.body.action])).toEqual([['cleanup.warning', 'pause']]);
    expect(String(rx.received[0]!.body.reason)).toMatch(
      /^will be paused at 2026-03-30 19:00 \+02:00 Europe\/Berlin \(17:00 UTC\) by the schedule \(awake 08:00–19:00 Europe\/Berlin, mon tue wed thu fri\) unless used/,
    );
    // The headline of every warning names the schedule's local time too, not UTC alone.
    expect(rx.received[0]!.body.dueLocal).toBe('2026-03-30 19:00 +02:00 Europe/Berlin');
    const slack = JSON.parse(formatNotice(rx.received[0]!.body as unknown as Notice, 'slack')) as {
      text: string;
    };
    expect(slack.text).toContain(
      'will be paused at 2026-03-30 19:00 +02:00 Europe/Berlin (2026-03-30 17:00 UTC) by the schedule unless used',
    );
    const plan = (await f.call('GET', '/api/v1/cleanup/plan?within=24h', undefined, f.server.tokens.read))
      .body.items as PlanItemView[];
    expect(plan[0]).toMatchObject({
      action: 'pause',
      warning: true,
      dueLocal: '2026-03-30 19:00 +02:00 Europe/Berlin',
    });
    expect(cleanupWarning(plan, f.now())).toBe(
      'tend: this environment will be paused at 2026-03-30 19:00 +02:00 Europe/Berlin (17:00 UTC) (in 30m) by the schedule unless used; `tend keep-alive` to postpone',
    );
  }, 60_000);
});
