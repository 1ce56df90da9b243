/**
 * What cleanup saved, end to end on SQLite and PostgreSQL: pods with requests applied to
 * kube-sim with real kubectl (kube-sim defaults requests from limits), the executor's inventory
 * carrying them through the real client, a deletion and a pause planned and carried out, a
 * command that resumes the paused environment and a redeploy that brings the deleted one back
 * (each stops its savings), then the report over real HTTP — the API, `tend cleanup report`, the
 * dashboard's Savings page and /metrics — and the bad input each refuses.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CleanupExecutor } from '../../../src/executor/executor.js';
import { cleanupReportCommand } from '../../../src/commands/cleanup-report.js';
import type { SavingsReport } from '../../../src/api/savings.js';
import type { TendError } from '../../../src/errors.js';
import { kubectl, startSim, type SimHandle } from '../../plugins/kubernetes/helpers.js';
import { waitFor } from '../../helpers/project.js';
import {
  recordingEvents,
  seedNamespace,
  servedClusters,
  testClock,
  testProtection,
} from '../../cleanup/helpers.js';
import { createTestServer, dialects, postEvents, postLogin, type TestServer } from '../helpers.js';

const hour = 3_600_000;
const gib = 2 ** 30;

const manifests = (ns: string, withRequests: boolean) => `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: ${ns}
  labels: { app.kubernetes.io/managed-by: tend }
spec:
  replicas: 2
  selector: { matchLabels: { app: api } }
  template:
    metadata: { labels: { app: api } }
    spec:
      containers:
        - name: api
          image: shop/api:v1
${withRequests ? '          resources: { requests: { cpu: 250m, memory: 256Mi } }' : ''}
${
  withRequests
    ? `---
apiVersion: v1
kind: Pod
metadata:
  name: worker
  namespace: ${ns}
spec:
  containers:
    - name: worker
      image: shop/worker:v1
      resources: { limits: { cpu: "0.5", memory: 512Mi } }
`
    : ''
}`;

describe.each(dialects)('cleanup savings (%s)', (dialect) => {
  let handle: SimHandle;
  let server: TestServer;
  let url: string;
  let dir: string;
  const clock = testClock();

  beforeAll(async () => {
    // This describe's clock is the world's (each dialect's describe has its own).
    handle = await startSim({ namespaceDeleteDelayMs: 20, now: () => clock.now().getTime() });
    delete process.env.KUBECONFIG;
    server = await createTestServer(dialect, {
      now: clock.now,
      cleanup: { maxPerPass: 100 },
      prices: { cpuHour: 0.04, gibHour: 0.005 },
    });
    url = await server.app.listen({ port: 0, host: '127.0.0.1' });
    dir = mkdtempSync(join(tmpdir(), 'tend-savings-'));
  });
  afterAll(async () => {
    await server?.close();
    await handle?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const executor = () =>
    new CleanupExecutor({
      queue: server.app.cleanup.queue,
      plugins: servedClusters(handle.kubeconfig),
      protection: testProtection,
      kind: 'embedded',
      name: 'embedded-1',
      version: 'test',
      concurrency: 4,
    });

  async function apply(ns: string, withRequests: boolean) {
    const file = join(dir, `${ns}.yaml`);
    writeFileSync(file, manifests(ns, withRequests));
    await kubectl(handle.kubeconfig, 'apply', '-f', file);
    const pods = withRequests ? 3 : 2;
    await waitFor(() => handle.sim.store.list('pods', ns).length === pods, `${pods} pods in ${ns}`);
  }

  async function record(
    ns: { name: string; uid: string; resourceVersion: string },
    environment: string,
    action: string,
  ) {
    const events = recordingEvents(handle.sim, [ns], { project: 'shop', environment }) as {
      type: string;
      payload: { cleanupPolicy?: { action: string } };
    }[];
    for (const e of events) if (e.payload.cleanupPolicy) e.payload.cleanupPolicy.action = action;
    expect((await postEvents(server, events)).statusCode).toBe(200);
  }

  const report = async (query: string, token = server.tokens.read) => {
    const res = await fetch(`${url}/api/v1/cleanup/report${query}`, { headers: server.auth(token) });
    return {
      status: res.status,
      body: (await res.json()) as SavingsReport & { error?: { message: string } },
    };
  };
  const finishedAt = async (namespace: string, action: string) =>
    Date.parse(
      (
        await server.database.db
          .selectFrom('cleanup_jobs')
          .select('finished_at')
          .where('namespace_name', '=', namespace)
          .where('action', '=', action)
          .where('state', '=', 'done')
          .executeTakeFirstOrThrow()
      ).finished_at!,
    );

  it('values a deletion and a pause at the requests before them, until the environment came back', async () => {
    const deleted = seedNamespace(handle.sim, `save-del-${dialect}`, { project: 'shop', environment: 'del' });
    const paused = seedNamespace(handle.sim, `save-pause-${dialect}`, {
      project: 'shop',
      environment: 'pause',
    });
    await apply(deleted.name, true);
    await apply(paused.name, false);
    // kube-sim defaulted the limits-only container's requests, as an API server does.
    const worker = JSON.parse(
      await kubectl(handle.kubeconfig, 'get', 'pod', 'worker', '-n', deleted.name, '-o', 'json'),
    );
    expect(worker.spec.containers[0].resources.requests).toEqual({ cpu: '0.5', memory: '512Mi' });
    expect(worker.status.qosClass).toBe('Guaranteed');

    await record(deleted, 'del', 'delete');
    await record(paused, 'pause', 'pause');
    await server.app.cleanup.switches.enforce('shop', undefined, 'test');
    const ex = executor();
    // The inventory carries what the pods request: 2 × 250m + 500m, 2 × 256Mi + 512Mi.
    expect((await ex.runPass()).errors).toEqual([]);
    const items = await server.database.db
      .selectFrom('cleanup_inventory_items')
      .select(['namespace_name', 'cpu_millicores', 'memory_bytes', 'pods'])
      .where('namespace_name', 'in', [deleted.name, paused.name])
      .orderBy('namespace_name')
      .execute();
    expect(items.map((i) => ({ ...i, memory_bytes: Number(i.memory_bytes) }))).toEqual([
      { namespace_name: deleted.name, cpu_millicores: 1000, memory_bytes: gib, pods: 3 },
      { namespace_name: paused.name, cpu_millicores: 0, memory_bytes: 0, pods: 2 },
    ]);

    clock.advance(2 * hour);
    await ex.runPass();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(2);
    const pass = await ex.runPass();
    expect(pass.jobs.map((j) => j.outcome).sort()).toEqual(['done', 'done']);
    await waitFor(() => !handle.sim.store.get('namespaces', '', deleted.name), 'the namespace to be gone');
    const deletedAt = await finishedAt(deleted.name, 'delete');
    const pausedAt = await finishedAt(paused.name, 'pause');

    // Three hours later a `tend deploy` in the paused environment resumes it: its savings stop.
    clock.advance(3 * hour);
    const resumed = recordingEvents(handle.sim, [paused], { project: 'shop', environment: 'pause' });
    expect((await postEvents(server, resumed)).statusCode).toBe(200);
    const resumedAt = clock.now().getTime();
    clock.advance(5 * hour);
    // The deleted environment is deployed again (a new namespace, a new uid): its savings stop.
    const again = seedNamespace(handle.sim, deleted.name, { project: 'shop', environment: 'del' });
    await record(again, 'del', 'delete');
    const backAt = clock.now().getTime();
    clock.advance(2 * hour);

    const { status, body } = await report('?since=30d');
    expect(status).toBe(200);
    const delHours = (backAt - deletedAt) / hour;
    const pauseHours = (resumedAt - pausedAt) / hour;
    expect(body.method).toMatch(/requested .* before its deletion or pause × the hours since/);
    expect(body.prices).toEqual({ cpuHour: 0.04, gibHour: 0.005 });
    expect(body.byAction.delete.environmentHours).toBeCloseTo(delHours, 3);
    expect(body.byAction.delete.cpuHours).toBeCloseTo(delHours, 3);
    expect(body.byAction.delete.gibHours).toBeCloseTo(delHours, 3);
    expect(body.byAction.delete.cost).toBeCloseTo(delHours * 0.045, 3);
    expect(body.byAction.pause).toEqual({
      environmentHours: expect.closeTo(pauseHours, 3),
      cpuHours: 0,
      gibHours: 0,
      cost: 0,
    });
    expect(
      body.environments.map((e) => [
        e.environment,
        e.action,
        e.basis,
        e.cpuMillicores,
        e.memoryBytes,
        e.ongoing,
      ]),
    ).toEqual([
      ['del', 'delete', 'requests', 1000, gib, false],
      ['pause', 'pause', 'weight', 0, 0, false],
    ]);
    expect(body.projects.map((p) => p.project)).toEqual(['shop']);
    const daySum = body.days.filter((d) => d.action === 'delete').reduce((n, d) => n + d.cpuHours, 0);
    expect(daySum).toBeCloseTo(delHours, 2);

    // A window that starts after the environment came back holds nothing of it.
    expect((await report('?since=1h')).body.total.environmentHours).toBe(0);

    // tend cleanup report: the same over real HTTP, for people and as JSON.
    const cli = await cleanupReportCommand({ server: url, token: server.tokens.read, since: '30d' });
    expect(cli.data.total).toEqual(body.total);
    expect(cli.human).toMatch(/^shop\s+delete\s+8\.0\s+8\.0\s+8\.0\s+0\.36$/m);
    expect(cli.human).toContain('1 environment(s) had no known pod requests: counted by weight');
    expect(cli.human).toContain('Method: freed = ');

    // /metrics: the last 30 days per project and action.
    const metrics = await (
      await fetch(`${url}/metrics`, { headers: server.auth(server.tokens.admin) })
    ).text();
    expect(metrics).toMatch(/^tend_cleanup_freed_cpu_hours\{project="shop",action="delete"\} 8(\.0+\d*)?$/m);
    expect(metrics).toContain('tend_cleanup_freed_environment_hours{project="shop",action="pause"} 3');
    expect(metrics).toMatch(/^tend_cleanup_saved_cost\{project="shop",action="delete"\} 0\.36/m);

    // The dashboard's Savings page: a chart per week, deletions against pauses.
    const login = await postLogin(server.app, { token: server.tokens.read, next: '/savings' });
    const cookie = `tend_session=${login.cookies.find((c) => c.name === 'tend_session')!.value}`;
    const page = await fetch(`${url}/savings?since=30d&measure=environmentHours`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const pageHtml = await page.text();
    expect(pageHtml).toContain('id="savings-chart"');
    expect(pageHtml).toMatch(/data-action="delete"/);
    expect(pageHtml).toMatch(/data-action="pause"/);
    expect(pageHtml).toContain('Method: freed = ');
    expect(pageHtml).toContain('1000m CPU, 1024 MiB');
    const bad = await fetch(`${url}/savings?since=Infinity`, { headers: { cookie } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('since takes a duration from 1m to 365d');
  });

  it("shows a project-bound token its project only, and refuses another project's report", async () => {
    const other = await report('?since=30d', server.tokens.otherProject);
    expect(other.status).toBe(200);
    expect(other.body.projects).toEqual([]);
    expect(other.body.total.environmentHours).toBe(0);
    const refused = await report('?since=30d&project=shop', server.tokens.otherProject);
    expect(refused.status).toBe(403);
    expect(refused.body.error?.message).toContain('bound to project "other"');
    const metrics = await fetch(`${url}/metrics`, { headers: server.auth(server.tokens.otherProject) });
    expect(metrics.status).toBe(403);
    // The Savings page likewise: its own project's figures, another project's a 403.
    const login = await postLogin(server.app, { token: server.tokens.otherProject, next: '/savings' });
    const cookie = `tend_session=${login.cookies.find((c) => c.name === 'tend_session')!.value}`;
    const own = await fetch(`${url}/savings`, { headers: { cookie } });
    expect(own.status).toBe(200);
    const ownHtml = await own.text();
    expect(ownHtml).toContain('project <strong>other</strong>');
    expect(ownHtml).not.toContain('save-del-');
    const foreign = await fetch(`${url}/savings?project=shop`, { headers: { cookie } });
    expect(foreign.status).toBe(403);
    expect(await foreign.text()).toContain('This token is bound to project other.');
    await expect(
      cleanupReportCommand({ server: url, token: server.tokens.otherProject, project: 'shop' }),
    ).rejects.toMatchObject({ code: 'TEND_AUTH_FORBIDDEN' } satisfies Partial<TendError>);
  });

  it('refuses a window that is not a duration from 1m to 365d', async () => {
    for (const since of ['Infinity', '-1d', '0m', '366d', '1e400', '99999999999999999999d', '30', 'NaN']) {
      const res = await report(`?since=${encodeURIComponent(since)}`);
      expect(res.status, since).toBe(400);
      expect(res.body.error?.message, since).toContain('since takes a duration from 1m to 365d');
    }
    expect((await report('?since=30d', 'tend_nope')).status).toBe(401);
  });
});
