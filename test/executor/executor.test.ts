/**
 * The executor against the server's job queue in process (the embedded home) and kube-sim: a
 * whole cleanup (record, enforce, plan, inventory, claim, verify, delete, audit), and what must
 * stop it — failing, truncated or expired-continue lists, a namespace re-created between plan and
 * act, activity stamped after planning — plus 429 storms and two executors on one queue.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NamespaceStatusPayload, TendEvent } from '../../src/events/catalog.js';
import { CleanupExecutor } from '../../src/executor/executor.js';
import { composeCleanup, type ServerCleanup } from '../../src/server/cleanup/compose.js';
import { defaultCleanupSettings } from '../../src/server/cleanup/settings.js';
import { Metrics } from '../../src/server/metrics.js';
import { kubectl, startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestServer, type TestServer } from '../server/helpers.js';
import { waitFor } from '../helpers/project.js';
import { call } from '../../tools/kube-sim/test/helpers.js';
import {
  countNamespaceDeletes,
  dueEnvironments,
  servedClusters,
  testProtection,
  exists,
  seedNamespace,
  testClock,
} from '../cleanup/helpers.js';

let handle: SimHandle;
let server: TestServer;
let service: ServerCleanup;
let clock: ReturnType<typeof testClock>;
let counter = 0;

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  delete process.env.KUBECONFIG;
});
afterAll(() => handle.stop());

beforeEach(async () => {
  clock = testClock();
  server = await createTestServer('sqlite', { now: clock.now });
  service = composeCleanup(server.database.db, server.database.reader, new Metrics(), clock.now, {
    ...defaultCleanupSettings,
    maxPerPass: 1000,
  });
  handle.sim.faults.clear();
});
afterEach(() => server.close());

function executor(name = 'embedded-1', onEvent?: (event: TendEvent) => void) {
  return new CleanupExecutor({
    queue: service.queue,
    plugins: servedClusters(handle.kubeconfig),
    protection: testProtection,
    kind: 'embedded',
    name,
    version: 'test',
    concurrency: 8,
    ...(onEvent ? { onEvent } : {}),
  });
}

/** n idle, enforced environments (dueEnvironments); `counter` names the test's other namespaces. */
const due = async (n: number) => {
  counter++;
  return {
    namespaces: await dueEnvironments({ sim: handle.sim, server, clock, cleanup: service.switches }, n),
  };
};

async function auditActions(): Promise<string[]> {
  const rows = await server.database.db.selectFrom('audit_log').select('action').orderBy('id').execute();
  return rows.map((r) => r.action);
}

/** The job's row and its namespace's recorded state, as the server holds them. */
async function recorded(namespace: string) {
  const db = server.database.db;
  const job = await db
    .selectFrom('cleanup_jobs')
    .select(['state', 'result', 'not_before', 'attempts', 'outcome_message'])
    .where('namespace_name', '=', namespace)
    .executeTakeFirstOrThrow();
  const resource = await db
    .selectFrom('resources')
    .select('state')
    .where('namespace_name', '=', namespace)
    .executeTakeFirstOrThrow();
  return { job, resourceState: resource.state };
}

/** The namespace DELETEs kube-sim received for `name` since `mark`. */
function deletesOf(name: string, mark = 0) {
  return handle.sim.requests
    .list({ since: mark })
    .filter((r) => r.verb === 'delete' && r.resource === 'namespaces' && r.namespace === name);
}

describe('the executor with the in-process queue', () => {
  it('cleans idle, enforced environments: inventory, plan, claim, verify, delete, audit', async () => {
    const { namespaces } = await due(3);
    const foreign = handle.sim.store.create('namespaces', '', { metadata: { name: `foreign-${counter}` } });
    const deletes = countNamespaceDeletes(handle.sim);
    const ex = executor();
    const first = await ex.runPass();
    expect(first.errors).toEqual([]);
    expect(first.inventories).toEqual([
      expect.objectContaining({ targetKey: `kubernetes/${handle.sim.clusterId}`, complete: true }),
    ]);
    expect(first.jobs).toEqual([]);
    const planned = await service.pass.run();
    expect(planned?.planned).toBe(3);
    const second = await ex.runPass();
    expect(second.jobs.map((j) => j.outcome)).toEqual(['done', 'done', 'done']);
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(false);
    expect(exists(handle.sim, foreign.metadata.name!)).toBe(true);
    expect(deletes()).toBe(3);
    // Each DELETE carried the uid and resourceVersion of the executor's fresh read as preconditions.
    for (const ns of namespaces) {
      expect(deletesOf(ns.name).map((r) => r.preconditions)).toEqual([
        { uid: ns.uid, resourceVersion: ns.resourceVersion },
      ]);
    }
    expect((await auditActions()).filter((a) => a === 'cleanup-done')).toHaveLength(3);
    // Nothing left to do.
    await service.pass.run();
    expect((await ex.runPass()).jobs).toEqual([]);
    expect(deletes()).toBe(3);
  });

  it.each([
    ['a failing list', { type: 'list-fail' as const, resource: 'namespaces' }],
    ['a truncated list', { type: 'list-truncate' as const, resource: 'namespaces' }],
    ['an expired continue token', { type: 'continue-expire' as const, resource: 'namespaces' }],
  ])('deletes nothing in a pass with %s', async (_what, fault) => {
    // More than one page, so the continue token is used.
    const { namespaces } = await due(2);
    for (let i = 0; i < 510; i++) seedNamespace(handle.sim, `filler-${counter}-${i}`, { project: 'filler' });
    const ex = executor();
    await ex.runPass();
    expect((await service.pass.run())?.planned).toBe(2);
    const deletes = countNamespaceDeletes(handle.sim);
    const id = handle.sim.faults.add(fault);
    const report = await ex.runPass();
    expect(report.inventories[0]).toMatchObject({ complete: false });
    expect(report.jobs).toEqual([]);
    expect(deletes()).toBe(0);
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(true);
    // Once the list works again, the same jobs run.
    handle.sim.faults.remove(id);
    const after = await ex.runPass();
    expect(after.jobs.map((j) => j.outcome)).toEqual(['done', 'done']);
    expect(deletes()).toBe(2);
  });

  it('does not delete a namespace re-created with the same name between plan and act', async () => {
    const { namespaces } = await due(1);
    const ex = executor();
    await ex.runPass();
    expect((await service.pass.run())?.planned).toBe(1);
    const [ns] = namespaces;
    await kubectlDelete(ns!.name);
    const again = seedNamespace(handle.sim, ns!.name, { project: ns!.name.replace(/-dev$/, '') });
    expect(again.uid).not.toBe(ns!.uid);
    const report = await ex.runPass();
    expect(report.jobs.map((j) => j.outcome)).toEqual(['cancelled']);
    expect(handle.sim.store.get('namespaces', '', ns!.name)?.metadata.uid).toBe(again.uid);
  });

  it('keeps a namespace changed between its fresh read and the DELETE: the precondition fails, the job is cancelled', async () => {
    const [ns] = (await due(1)).namespaces;
    const ex = executor();
    await ex.runPass();
    expect((await service.pass.run())?.planned).toBe(1);
    // The DELETE is held back long enough for the namespace to change after the executor read it.
    handle.sim.faults.add({
      type: 'latency',
      ms: 1500,
      verb: 'delete',
      resource: 'namespaces',
      namespace: ns!.name,
      times: 1,
    });
    const mark = handle.sim.requests.latest();
    const pass = ex.runPass();
    await waitFor(() => deletesOf(ns!.name, mark).length > 0, 'the DELETE to arrive');
    const touched = await call(
      handle.sim,
      'PATCH',
      `/api/v1/namespaces/${ns!.name}`,
      { metadata: { annotations: { 'example.com/touched': 'yes' } } },
      { contentType: 'application/merge-patch+json' },
    );
    expect(touched.status).toBe(200);
    const report = await pass;
    expect(report.jobs.map((j) => [j.outcome, j.message])).toEqual([
      ['cancelled', expect.stringMatching(/changed since the check/)],
    ]);
    const [sent] = deletesOf(ns!.name, mark);
    expect(sent).toMatchObject({
      status: 409,
      preconditions: { uid: ns!.uid, resourceVersion: ns!.resourceVersion },
    });
    const kept = handle.sim.store.get('namespaces', '', ns!.name);
    expect(kept?.metadata.uid).toBe(ns!.uid);
    expect(kept?.metadata.annotations?.['example.com/touched']).toBe('yes');
    expect(kept?.status?.phase).not.toBe('Terminating');
    expect((await recorded(ns!.name)).job).toMatchObject({ state: 'cancelled', result: 'cancelled' });
    const audits = await auditActions();
    expect(audits).toContain('cleanup-cancelled');
    expect(audits).not.toContain('cleanup-done');
  });

  it.each([500, 403])(
    'a %i on the fresh read fails the job (retried later): nothing deleted, the namespace still ready, reported unverified',
    async (status) => {
      const [ns] = (await due(1)).namespaces;
      const events: NamespaceStatusPayload[] = [];
      const ex = executor('embedded-1', (e) => {
        if (e.type === 'namespaceStatus') events.push(e.payload as NamespaceStatusPayload);
      });
      await ex.runPass();
      expect((await service.pass.run())?.planned).toBe(1);
      const deletes = countNamespaceDeletes(handle.sim);
      handle.sim.faults.add({
        type: 'error',
        status,
        verb: 'get',
        resource: 'namespaces',
        namespace: ns!.name,
      });
      const report = await ex.runPass();
      expect(report.jobs.map((j) => j.outcome)).toEqual(['failed']);
      expect(deletes()).toBe(0);
      expect(exists(handle.sim, ns!.name)).toBe(true);
      const { job, resourceState } = await recorded(ns!.name);
      expect(job).toMatchObject({
        state: 'planned',
        result: null,
        attempts: 1,
        outcome_message: expect.stringMatching(new RegExp(`read namespace ${ns!.name}`)),
      });
      expect(job.not_before).not.toBeNull();
      expect(resourceState).toBe('ready');
      // The namespace it could not read is still reported, marked unverified, never as missing.
      expect(events.filter((e) => e.namespaceName === ns!.name)).toEqual([
        expect.objectContaining({
          state: 'ready',
          cause: 'observed',
          detail: { unverified: expect.stringMatching(/could not read namespace/) },
        }),
      ]);
      const audits = await auditActions();
      expect(audits).toContain('cleanup-retry');
      expect(audits).not.toContain('cleanup-done');
    },
  );

  it.each([
    ['its inventory', 'list'],
    ['a DELETE', 'delete'],
  ])(
    'says it is alive each interval while %s takes longer, not only at the start of the pass',
    async (_what, verb) => {
      // The server takes an executor unseen for three intervals for gone and withdraws the jobs it
      // planned: one busy with a slow request for longer must keep being seen.
      service = composeCleanup(server.database.db, server.database.reader, new Metrics(), clock.now, {
        ...defaultCleanupSettings,
        maxPerPass: 1000,
        intervalMs: 1000,
      });
      const [ns] = (await due(1)).namespaces;
      const ex = executor('embedded-slow');
      await ex.runPass();
      expect((await service.pass.run())?.planned).toBe(1);
      handle.sim.faults.add({
        type: 'latency',
        ms: 4000,
        verb,
        resource: 'namespaces',
        ...(verb === 'delete' ? { namespace: ns!.name } : {}),
        times: 1,
      });
      const mark = handle.sim.requests.latest();
      let finished = false;
      const pass = ex.runPass().finally(() => (finished = true));
      const held = () =>
        handle.sim.requests.list({ since: mark }).some((r) => r.verb === verb && r.resource === 'namespaces');
      await waitFor(held, `the ${verb} to arrive`);
      const lastSeen = async () =>
        (
          await server.database.db
            .selectFrom('cleanup_executors')
            .select('last_seen_at')
            .where('name', '=', 'embedded-slow')
            .executeTakeFirstOrThrow()
        ).last_seen_at;
      const before = String(await lastSeen());
      clock.advance(1500);
      // Seen again while the request is held (the server's clock moved, so a new sighting shows).
      await waitFor(async () => String(await lastSeen()) !== before, `a heartbeat during the ${verb}`);
      expect(finished).toBe(false);
      const report = await pass;
      expect(report.jobs.map((j) => j.outcome)).toEqual(['done']);
    },
  );

  it('a 500 on every DELETE fails the job: planned again for a retry, the namespace kept, no cleanup-done', async () => {
    const [ns] = (await due(1)).namespaces;
    const ex = executor();
    await ex.runPass();
    expect((await service.pass.run())?.planned).toBe(1);
    const refused = handle.sim.faults.add({
      type: 'error',
      status: 500,
      verb: 'delete',
      resource: 'namespaces',
      namespace: ns!.name,
    });
    const report = await ex.runPass();
    expect(report.jobs.map((j) => [j.outcome, j.message])).toEqual([
      ['failed', expect.stringMatching(/could not delete namespace/)],
    ]);
    expect(handle.sim.faults.fired(refused)).toBeGreaterThan(1);
    expect(exists(handle.sim, ns!.name)).toBe(true);
    const { job, resourceState } = await recorded(ns!.name);
    expect(job).toMatchObject({
      state: 'planned',
      result: null,
      attempts: 1,
      outcome_message: expect.stringMatching(/could not delete namespace/),
    });
    expect(job.not_before).not.toBeNull();
    expect(resourceState).toBe('ready');
    const audits = await auditActions();
    expect(audits).toContain('cleanup-retry');
    expect(audits).not.toContain('cleanup-done');
  });

  it('cancels when tend.dev/last-activity is stamped after planning', async () => {
    const { namespaces } = await due(1);
    const ex = executor();
    await ex.runPass();
    expect((await service.pass.run())?.planned).toBe(1);
    const [ns] = namespaces;
    await stampActivity(ns!.name, clock.now().toISOString());
    const report = await ex.runPass();
    expect(report.jobs.map((j) => j.outcome)).toEqual(['cancelled']);
    expect(report.jobs[0]!.message).toMatch(/used|activity/);
    expect(exists(handle.sim, ns!.name)).toBe(true);
  });

  it('gets through a 429 storm and deletes each namespace once', async () => {
    const { namespaces } = await due(4);
    const ex = executor();
    await ex.runPass();
    await service.pass.run();
    const deletes = countNamespaceDeletes(handle.sim);
    handle.sim.faults.add({
      type: 'error',
      status: 429,
      retryAfterSeconds: 0,
      resource: 'namespaces',
      times: 12,
    });
    await ex.runPass();
    const done = async () => (await auditActions()).filter((a) => a === 'cleanup-done').length;
    // Nothing is lost: the first twelve namespace calls are refused, more than this pass's retries
    // take, so work is left for later passes, after its backoff.
    expect(await done()).toBeLessThan(4);
    // Each round: past every backoff, then a pass (a fresh inventory, the jobs claimed), then the
    // planner on that inventory (planning on an hour-old one cancelled the jobs still open).
    for (let pass = 0; (await done()) < 4 && pass < 8; pass++) {
      clock.advance(3_600_000);
      await ex.runPass();
      await service.pass.run();
    }
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(false);
    const audits = await auditActions();
    expect(audits.filter((a) => a === 'cleanup-done')).toHaveLength(4);
    expect(deletes()).toBeLessThanOrEqual(4 + 12);
  });

  it('two executors on one queue delete each namespace exactly once', async () => {
    const { namespaces } = await due(30);
    const a = executor('a');
    const b = executor('b');
    await Promise.all([a.runPass(), b.runPass()]);
    expect((await service.pass.run())?.planned).toBe(30);
    const deletes = countNamespaceDeletes(handle.sim);
    const [ra, rb] = await Promise.all([a.runPass(), b.runPass()]);
    const done = [...ra.jobs, ...rb.jobs].filter((j) => j.outcome === 'done');
    expect(done).toHaveLength(30);
    expect(new Set(done.map((j) => j.id)).size).toBe(30);
    expect(deletes()).toBe(30);
    for (const ns of namespaces) expect(exists(handle.sim, ns.name)).toBe(false);
    expect((await auditActions()).filter((x) => x === 'cleanup-done')).toHaveLength(30);
  });
});

function kubectlDelete(name: string) {
  return kubectl(handle.kubeconfig, 'delete', 'namespace', name, '--wait=true');
}

function stampActivity(name: string, value: string) {
  return kubectl(
    handle.kubeconfig,
    'annotate',
    'namespace',
    name,
    `tend.dev/last-activity=${value}`,
    '--overwrite',
  );
}
