/**
 * A suspect inventory is not applied. An API server that answers an empty (or much shortened)
 * list that still looks complete — kube-sim's `list-truncate` with `keep: 0`, which the count
 * probe cannot see through because it is truncated too — must not make the recorded resources of
 * several projects `missing` and their environments `cleaned`; nor may a list that failed end a
 * delete job a dead executor began. Over real HTTP (the executor's
 * HTTP queue, the status route, the dashboard), a real SQLite file and kube-sim.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CleanupExecutor } from '../../src/executor/executor.js';
import { HttpCleanupQueue } from '../../src/executor/http-queue.js';
import { withCleanupChecks } from '../../src/plugin/cleanup-wrap.js';
import { kubernetesPlugin } from '../../src/plugins/kubernetes/index.js';
import type { ServedPlugin } from '../../src/router/cleanup.js';
import { runTend } from '../helpers/project.js';
import { kubectl, startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestServer, getJson, postLogin, type TestServer } from '../server/helpers.js';
import {
  clusterSettings,
  dueEnvironments,
  exists,
  servedClusters,
  testClock,
  testProtection,
} from '../cleanup/helpers.js';

let handle: SimHandle;
let server: TestServer;
let url: string;
let clock: ReturnType<typeof testClock>;

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  delete process.env.KUBECONFIG;
});
afterAll(() => handle.stop());

beforeEach(async () => {
  clock = testClock();
  server = await createTestServer('sqlite', { now: clock.now, cleanup: { maxPerPass: 1000 } });
  url = await server.app.listen({ port: 0, host: '127.0.0.1' });
  handle.sim.faults.clear();
});
afterEach(() => server.close());

const due = (n: number) =>
  dueEnvironments({ sim: handle.sim, server, clock, cleanup: server.app.cleanup.switches }, n, 's');

function executor(plugins = servedClusters(handle.kubeconfig)) {
  return new CleanupExecutor({
    queue: new HttpCleanupQueue({ server: url, token: server.tokens.agent, baseDelayMs: 5 }),
    plugins,
    protection: testProtection,
    kind: 'agent',
    name: 'suspect-test',
    version: 'test',
  });
}

/** Deleted behind tend's back, as a person with kubectl would. */
async function deleteByHand(names: string[]) {
  for (const name of names) await kubectl(handle.kubeconfig, 'delete', 'namespace', name, '--wait=true');
}

async function states() {
  const resources = await server.database.db
    .selectFrom('resources')
    .select(['namespace_name', 'state'])
    .execute();
  const environments = await server.database.db
    .selectFrom('environments')
    .select(['name', 'state'])
    .execute();
  return {
    missing: resources.filter((r) => r.state === 'missing').map((r) => r.namespace_name),
    cleaned: environments.filter((e) => e.state === 'cleaned').length,
  };
}

async function audits(action: string) {
  return server.database.db.selectFrom('audit_log').selectAll().where('action', '=', action).execute();
}

interface Status {
  suspectInventories: { targetKey: string; reason: string; wouldMarkMissing: number; recorded: number }[];
}

describe('a suspect inventory', () => {
  it('an empty list that looks complete marks nothing missing: audited, shown, and nothing deleted', async () => {
    const namespaces = await due(6);
    const ex = executor();
    const first = await ex.runPass();
    expect(first.inventories).toEqual([expect.objectContaining({ complete: true, items: 6 })]);
    expect((await server.app.cleanup.pass.run())?.planned).toBe(6);

    handle.sim.faults.add({ type: 'list-truncate', verb: 'list', resource: 'namespaces', keep: 0 });
    const attacked = await ex.runPass();
    // The plugin cannot tell (the count probe is truncated too): it reports a complete, empty list.
    expect(attacked.inventories[0]).toMatchObject({ complete: true, items: 0 });
    expect(attacked.inventories[0]!.response).toMatchObject({
      markedMissing: 0,
      suspect: expect.any(String),
    });
    expect(await states()).toEqual({ missing: [], cleaned: 0 });
    expect(attacked.jobs).toEqual([]);
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(true);

    const audited = await audits('inventory-suspect');
    expect(audited).toHaveLength(1);
    expect(JSON.parse(audited[0]!.detail!)).toMatchObject({
      targetKey: `kubernetes/${handle.sim.clusterId}`,
      wouldMarkMissing: 6,
      recorded: 6,
    });
    // Audited once, not once per pass.
    await ex.runPass();
    expect(await audits('inventory-suspect')).toHaveLength(1);
    expect(await states()).toEqual({ missing: [], cleaned: 0 });

    const status = await getJson<Status>(server, '/api/v1/cleanup/status');
    expect(status.body.suspectInventories).toEqual([
      expect.objectContaining({
        targetKey: `kubernetes/${handle.sim.clusterId}`,
        wouldMarkMissing: 6,
        recorded: 6,
        reason: expect.stringContaining('6 of 6'),
      }),
    ]);
    const cli = await runTend(['cleanup', 'status', '--server', url, '--token', server.tokens.read]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/held back as suspect[\s\S]*kubernetes\/\S+\s+the list is empty: 6 of 6/);
    const login = await postLogin(server.app, { token: server.tokens.read, next: '/' });
    const cookie = `tend_session=${login.cookies.find((c) => c.name === 'tend_session')!.value}`;
    const page = await server.app.inject({ method: 'GET', url: '/cleanup', headers: { cookie } });
    expect(page.body).toContain('id="cleanup-suspect"');
    expect(page.body).toMatch(/6 of 6/);

    // The target counts as not listed: the planner keeps its hands off it.
    await server.app.cleanup.pass.run();
    expect((await ex.runPass()).jobs).toEqual([]);
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(true);

    // The list heals: the next inventory is applied, the suspicion clears, the due jobs run.
    handle.sim.faults.clear();
    const healed = await ex.runPass();
    expect(healed.inventories[0]!.response).toMatchObject({ recorded: 6, markedMissing: 0 });
    expect(healed.inventories[0]!.response).not.toHaveProperty('suspect');
    expect((await getJson<Status>(server, '/api/v1/cleanup/status')).body.suspectInventories).toEqual([]);
    await server.app.cleanup.pass.run();
    expect((await ex.runPass()).jobs.map((j) => j.outcome)).toEqual(Array(6).fill('done'));
  });

  it('applies a small share gone (at most max(2, 20%)), and holds back a larger one', async () => {
    const namespaces = await due(10);
    const ex = executor();
    await ex.runPass();
    // Two gone by hand: within the bound, applied.
    await deleteByHand(namespaces.slice(0, 2).map((n) => n.name));
    const small = await ex.runPass();
    expect(small.inventories[0]!.response).toMatchObject({ markedMissing: 2 });
    expect((await states()).missing.sort()).toEqual(
      namespaces
        .slice(0, 2)
        .map((n) => n.name)
        .sort(),
    );
    // Three more of the eight left: more than max(2, 20% of 8), held back.
    await deleteByHand(namespaces.slice(2, 5).map((n) => n.name));
    const large = await ex.runPass();
    expect(large.inventories[0]!.response).toMatchObject({
      markedMissing: 0,
      suspect: expect.stringContaining('3 of 8'),
    });
    expect((await states()).missing).toHaveLength(2);
    expect(await audits('inventory-suspect')).toHaveLength(1);
  });

  it('judges the share gone only over what a list showed: records no list ever showed do not raise the bound', async () => {
    const namespaces = await due(3);
    const ex = executor();
    await ex.runPass();
    // Twenty owned records of namespaces no list ever showed (forged, say).
    const [template] = await server.database.db.selectFrom('resources').selectAll().limit(1).execute();
    await server.database.db
      .insertInto('resources')
      .values(
        Array.from({ length: 20 }, (_, i) => ({
          ...template!,
          id: `ghost-${i}`,
          namespace_name: `ghost-${i}`,
          namespace_uid: `ghost-uid-${i}`,
        })),
      )
      .execute();
    await deleteByHand(namespaces.map((n) => n.name));
    const pass = await ex.runPass();
    expect(pass.inventories[0]!.response).toMatchObject({
      markedMissing: 0,
      suspect: expect.stringContaining('3 of 3'),
    });
  });

  it('holds back an empty list even when few resources are recorded', async () => {
    const [ns] = await due(1);
    const ex = executor();
    await ex.runPass();
    handle.sim.faults.add({ type: 'list-truncate', verb: 'list', resource: 'namespaces', keep: 0 });
    const report = await ex.runPass();
    expect(report.inventories[0]!.response).toMatchObject({ markedMissing: 0, suspect: expect.any(String) });
    expect(await states()).toEqual({ missing: [], cleaned: 0 });
    expect(exists(handle.sim, ns!.name)).toBe(true);
  });

  it('a namespace whose deletion went out but whose job failed is left to that job: no suspicion, and done on the retry', async () => {
    const namespaces = await due(5);
    // The kubernetes plugin, but each namespace's first delete fails after the namespace is gone:
    // the DELETE went out, the answer was lost (a timeout, a dropped connection).
    const { verifyAndClean: _, ...primitives } = kubernetesPlugin.cleanup;
    const failedOnce = new Set<string>();
    const lossy: ServedPlugin = {
      plugin: {
        ...kubernetesPlugin,
        cleanup: withCleanupChecks({
          ...primitives,
          async delete(ctx, target, resource, precondition) {
            const result = await primitives.delete(ctx, target, resource, precondition);
            if (failedOnce.has(resource.name)) return result;
            failedOnce.add(resource.name);
            throw new Error(`the answer to the deletion of ${resource.name} was lost`);
          },
        }),
      } as ServedPlugin['plugin'],
      settings: clusterSettings(handle.kubeconfig),
    };
    const ex = executor([lossy]);
    await ex.runPass();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(5);
    const failed = await ex.runPass();
    expect(failed.jobs.map((j) => j.outcome)).toEqual(Array(5).fill('failed'));
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(false);

    // Five of five recorded namespaces are gone from the list, each by a delete job of tend's that
    // is waiting for its retry: expected, not suspect, and left to the jobs (not marked missing
    // by the list, which would cancel them and never say cleanup deleted them).
    const listed = await ex.runPass();
    expect(listed.inventories[0]!.response).not.toHaveProperty('suspect');
    expect(listed.inventories[0]!.response).toMatchObject({ markedMissing: 0 });
    expect(await audits('inventory-suspect')).toEqual([]);
    expect(await states()).toEqual({ missing: [], cleaned: 0 });

    clock.advance(31_000);
    const retried = await ex.runPass();
    expect(retried.jobs.map((j) => [j.outcome, j.message])).toEqual(
      Array(5).fill(['done', expect.stringContaining('lacks it')]),
    );
    expect((await states()).missing.sort()).toEqual(namespaces.map((n) => n.name).sort());
    expect(await audits('cleanup-done')).toHaveLength(5);
    const causes = await server.database.db.selectFrom('resources').select('last_cause').execute();
    expect(causes.map((c) => c.last_cause)).toEqual(Array(5).fill('cleanup'));
  });

  it('a delete begun by an executor that died is neither done nor cancelled until a complete list says what became of it', async () => {
    const [ns] = await due(1);
    const ex = executor();
    await ex.runPass();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
    // An executor that begins the job, confirms it, sends the DELETE and dies before it reports.
    const queue = new HttpCleanupQueue({ server: url, token: server.tokens.agent, baseDelayMs: 5 });
    const dying = { executorId: 'dying-executor' };
    const [job] = (await queue.claim({ ...dying, targetKeys: [`kubernetes/${handle.sim.clusterId}`] })).jobs;
    expect((await queue.start(job!.id, dying)).proceed).toBe(true);
    expect((await queue.start(job!.id, dying)).proceed).toBe(true);
    await deleteByHand([ns!.name]);

    // Its lease runs out; the next executor's list fails (incomplete), so the last complete one is
    // from before the attempt began and stale: nothing says whether the namespace is gone.
    clock.advance(121_000);
    handle.sim.faults.add({ type: 'list-fail', verb: 'list', resource: 'namespaces' });
    const blind = await ex.runPass();
    expect(blind.inventories[0]).toMatchObject({ complete: false });
    expect(blind.jobs.map((j) => j.outcome)).not.toContain('cancelled');
    expect(await audits('cleanup-cancelled')).toEqual([]);
    // Nobody takes the job without a complete list of its target: it stays as the dead executor left it.
    const waiting = await server.database.db.selectFrom('cleanup_jobs').select(['state']).execute();
    expect(waiting.map((j) => j.state)).toEqual(['executing']);

    // A complete list lacks it: the job is done, and the namespace's end is cleanup's.
    handle.sim.faults.clear();
    clock.advance(31_000);
    const seen = await ex.runPass();
    expect(seen.jobs.map((j) => [j.outcome, j.message])).toEqual([
      ['done', expect.stringContaining('lacks it')],
    ]);
    expect(await audits('cleanup-done')).toHaveLength(1);
    const causes = await server.database.db.selectFrom('resources').select('last_cause').execute();
    expect(causes.map((c) => c.last_cause)).toEqual(['cleanup']);
  });
});
