/**
 * The dashboard's Restore button and `POST /api/v1/environments/:id/restore`
 * (docs/cleanup.md#undo), end to end on kube-sim: the real CLI deploys with its events streamed to
 * a real server, the executor archives and deletes, then restores from a restore job — its
 * namespace created through the gate and recorded from the restore session's events, owned like
 * any namespace a command creates (cleanup can delete it again). And the attacks: who may ask,
 * a namespace that exists again (recorded, or created behind tend's back), a protected name,
 * forged session events from an executor, an executor that does not know restores.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultClaimedActions } from '../../../src/cleanup/protocol.js';
import { archiveKeyOf } from '../../../src/server/cleanup/archive-key.js';
import { HttpCleanupQueue } from '../../../src/executor/http-queue.js';
import { CleanupExecutor } from '../../../src/executor/executor.js';
import type { CleanupQueue } from '../../../src/cleanup/protocol.js';
import { servedClusters, testProtection } from '../../cleanup/helpers.js';
import type { TendEvent } from '../../../src/events/catalog.js';
import { removeProjects, waitFor } from '../../helpers/project.js';
import { stage, type Stage } from '../../adversarial/harness.js';
import { kubectl } from '../../plugins/kubernetes/helpers.js';
import { dialects, postLogin } from '../helpers.js';
import { launchChromium } from '../../helpers/chromium.js';
import { secretsProject } from './archive-project.js';

const day = 86_400_000;
let s: Stage | undefined;

afterEach(async () => {
  await s?.stop();
  s = undefined;
  removeProjects();
});

/** A project deployed, then cleaned automatically (archived, deleted): its environment id. */
async function deployedAndCleaned(st: Stage, name: string, namespace: string) {
  const root = st.project({ name, namespace });
  writeFileSync(path.join(root, 'tend.yml'), secretsProject(name, namespace));
  const deploy = await st.tend(root, 'deploy');
  expect(deploy.code, deploy.stderr).toBe(0);
  const id = await waitFor(async () => {
    const row = await st.server.database.db
      .selectFrom('environments')
      .select('id')
      .where('project', '=', name)
      .executeTakeFirst();
    return row?.id;
  }, `environment ${name} recorded`);
  await st.enforce(name);
  st.advance(3 * day);
  const { after } = await st.cleanupRound();
  expect(after.jobs.map((j) => [j.namespaceName, j.outcome])).toEqual([[namespace, 'done']]);
  expect(st.namespaceExists(namespace)).toBe(false);
  return { root, id };
}

function askRestore(st: Stage, id: string, token: string, body?: unknown) {
  return st.server.app.inject({
    method: 'POST',
    url: `/api/v1/environments/${id}/restore`,
    headers: st.server.auth(token),
    ...(body !== undefined ? { payload: body as object } : {}),
  });
}

async function environmentRow(st: Stage, id: string) {
  return st.server.database.db
    .selectFrom('environments')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

describe.each(dialects)('restore jobs on %s', (dialect) => {
  it('the executor restores from a restore job: recorded and owned by its restore session, and cleanup can delete it again', async () => {
    s = await stage(dialect);
    const st = s;
    const { root, id } = await deployedAndCleaned(st, 'back', 'back-dev');

    // Only an admin of the project asks; another project's admin sees no such environment.
    expect((await askRestore(st, id, st.server.tokens.developer)).statusCode).toBe(403);
    expect((await askRestore(st, id, st.server.tokens.otherProject)).statusCode).toBe(404);
    const asked = await askRestore(st, id, st.server.tokens.admin);
    expect(asked.statusCode, asked.body).toBe(202);
    const job = asked.json<{ job: { id: string; action: string; state: string; namespaceName: string } }>()
      .job;
    expect(job).toMatchObject({ action: 'restore', state: 'planned', namespaceName: 'back-dev' });
    // One at a time.
    const twice = await askRestore(st, id, st.server.tokens.admin);
    expect(twice.statusCode).toBe(409);
    expect(twice.json<{ error: { message: string } }>().error.message).toMatch(/has an open cleanup job/);

    const pass = await st.executor.runPass();
    const report = pass.jobs.find((j) => j.id === job.id);
    expect(report?.outcome, report?.message).toBe('done');
    expect(report?.message).toMatch(/restored 4 object\(s\) into namespace back-dev/);
    expect(report?.message).toMatch(/Secret\/db-password \(its content was not archived/);
    expect(st.namespaceExists('back-dev')).toBe(true);
    expect(st.sim.sim.store.get('configmaps', 'back-dev', 'settings')).toBeDefined();
    const ns = st.sim.sim.store.get('namespaces', '', 'back-dev') as {
      metadata: { uid: string; annotations: Record<string, string>; labels: Record<string, string> };
    };
    expect(ns.metadata.labels['app.kubernetes.io/managed-by']).toBe('tend');
    expect(ns.metadata.annotations['tend.dev/project']).toBe('back');

    // Recorded by construction: the restore session's `created` event, owned, the environment
    // active with its policy kept, the archive marked restored, every step audited.
    const env = await environmentRow(st, id);
    expect(env).toMatchObject({ state: 'active', policy_after_inactivity: '1h', policy_action: 'delete' });
    const resource = await st.server.database.db
      .selectFrom('resources')
      .select(['ownership', 'state', 'namespace_uid'])
      .where('environment_id', '=', id)
      .orderBy('generation', 'desc')
      .executeTakeFirstOrThrow();
    expect(resource).toEqual({ ownership: 'owned', state: 'ready', namespace_uid: ns.metadata.uid });
    const session = await st.server.database.db
      .selectFrom('sessions')
      .select(['command', 'user_name', 'status'])
      .where('command', '=', 'restore')
      .executeTakeFirstOrThrow();
    // One object was not restored (the Secret's content): the session says so, as tend restore's does.
    expect(session).toEqual({ command: 'restore', user_name: 'token:ops', status: 'failed' });
    const archive = await st.server.database.db
      .selectFrom('environment_archives')
      .select('restored_at')
      .executeTakeFirstOrThrow();
    expect(archive.restored_at).not.toBeNull();
    const audit = await st.server.database.db
      .selectFrom('audit_log')
      .select(['action', 'actor'])
      .where('environment_id', '=', id)
      .orderBy('id')
      .execute();
    const actions = audit.map((a) => a.action);
    expect(actions).toEqual(
      expect.arrayContaining(['restore-requested', 'archive-read', 'archive-restored', 'cleanup-done']),
    );
    expect(audit.find((a) => a.action === 'restore-requested')?.actor).toBe('token:ops');

    // A command in it now finds its own namespace (not adopted), and the button is gone.
    const deploy = await st.tend(root, 'deploy');
    expect(deploy.code, deploy.stderr).toBe(0);
    const after = st.sim.sim.store.get('namespaces', '', 'back-dev') as {
      metadata: { annotations: Record<string, string> };
    };
    expect(after.metadata.annotations['tend.dev/adopted']).toBeUndefined();
    const gone = await askRestore(st, id, st.server.tokens.admin);
    expect(gone.statusCode).toBe(409);
    expect(gone.json<{ error: { message: string } }>().error.message).toMatch(/recorded as present again/);

    // Owned: cleanup deletes it again through every check.
    st.advance(3 * day);
    const { after: again } = await st.cleanupRound();
    expect(again.jobs.map((j) => [j.namespaceName, j.outcome])).toEqual([['back-dev', 'done']]);
    expect(st.namespaceExists('back-dev')).toBe(false);
  }, 240_000);

  it('a namespace created behind tend’s back, or a protected name, is never restored into; into a new namespace works', async () => {
    s = await stage(dialect);
    const st = s;
    const { id } = await deployedAndCleaned(st, 'race', 'race-dev');
    const asked = await askRestore(st, id, st.server.tokens.admin);
    expect(asked.statusCode).toBe(202);
    // Someone's namespace of that name, unknown to tend, appears before the executor runs.
    await kubectl(st.sim.kubeconfig, 'create', 'namespace', 'race-dev');
    const pass = await st.executor.runPass();
    const job = pass.jobs.find((j) => j.id === asked.json<{ job: { id: string } }>().job.id);
    expect(job?.outcome).toBe('cancelled');
    expect(job?.message).toMatch(/namespace race-dev exists again/);
    expect(st.sim.sim.store.get('configmaps', 'race-dev', 'settings')).toBeUndefined();
    // Recorded as the restore session saw it (every namespace a command touches is), never owned.
    const seen = await st.server.database.db
      .selectFrom('resources')
      .select(['ownership'])
      .where('environment_id', '=', id)
      .orderBy('generation', 'desc')
      .executeTakeFirstOrThrow();
    expect(seen.ownership).not.toBe('owned');
    const labels = (
      st.sim.sim.store.get('namespaces', '', 'race-dev') as { metadata: { labels?: Record<string, string> } }
    ).metadata.labels;
    expect(labels?.['app.kubernetes.io/managed-by']).toBeUndefined();

    // Bad names are a clear 400.
    for (const into of ['Race_Dev', '', 'x'.repeat(64), 'a\u0000b']) {
      const bad = await askRestore(st, id, st.server.tokens.admin, { into });
      expect(bad.statusCode, into).toBe(400);
    }
    expect(
      (await askRestore(st, id, st.server.tokens.admin, { into: 'race-dev', other: 1 })).statusCode,
    ).toBe(400);
    // A protected name is refused before any job exists.
    const kube = await askRestore(st, id, st.server.tokens.admin, { into: 'kube-restored' });
    expect(kube.statusCode).toBe(400);
    expect(kube.json<{ error: { message: string } }>().error.message).toMatch(
      /namespace kube-restored is protected \(kube-\*\)/,
    );
    expect((await st.executor.runPass()).jobs).toEqual([]);
    expect(st.namespaceExists('kube-restored')).toBe(false);

    const into = await askRestore(st, id, st.server.tokens.admin, { into: 'race-back' });
    expect(into.statusCode).toBe(202);
    const done = await st.executor.runPass();
    expect(done.jobs.map((j) => j.outcome)).toEqual(['done']);
    expect(st.sim.sim.store.get('configmaps', 'race-back', 'settings')).toBeDefined();
    // Another namespace is another environment record (project, environment, namespace), as with tend restore --into.
    const resources = await st.server.database.db
      .selectFrom('resources')
      .select(['namespace_name', 'ownership', 'state'])
      .where('namespace_name', '=', 'race-back')
      .execute();
    expect(resources).toEqual([{ namespace_name: 'race-back', ownership: 'owned', state: 'ready' }]);
  }, 240_000);

  it('the namespace is recorded the moment it is created: an agent that dies before reporting leaves it owned, and the retry stops', async () => {
    s = await stage(dialect);
    const st = s;
    const { id } = await deployedAndCleaned(st, 'crash', 'crash-dev');
    expect((await askRestore(st, id, st.server.tokens.admin)).statusCode).toBe(202);
    // An agent over HTTP whose outcome never reaches the server (it dies after the restore).
    const http = new HttpCleanupQueue({ server: st.url, token: st.server.tokens.agent, retries: 0 });
    const dying: CleanupQueue = {
      heartbeat: (b) => http.heartbeat(b),
      inventory: (b) => http.inventory(b),
      claim: (b) => http.claim(b),
      start: (jobId, b) => http.start(jobId, b),
      archive: (jobId, e, a) => http.archive(jobId, e, a),
      restoreOrder: (jobId, e) => http.restoreOrder(jobId, e),
      restoreEvents: (jobId, b) => http.restoreEvents(jobId, b),
      complete: () => Promise.reject(new Error('the agent died')),
    };
    const agent = new CleanupExecutor({
      queue: dying,
      plugins: servedClusters(st.sim.kubeconfig),
      protection: testProtection,
      kind: 'agent',
      name: 'dying',
      version: 'test',
    });
    const pass = await agent.runPass();
    expect(pass.jobs.map((j) => [j.outcome, j.message])).toEqual([
      ['failed', expect.stringMatching(/the agent died/)],
    ]);
    expect(st.sim.sim.store.get('configmaps', 'crash-dev', 'settings')).toBeDefined();
    const ns = st.sim.sim.store.get('namespaces', '', 'crash-dev') as { metadata: { uid: string } };
    const resource = await st.server.database.db
      .selectFrom('resources')
      .select(['ownership', 'state', 'namespace_uid'])
      .where('environment_id', '=', id)
      .orderBy('generation', 'desc')
      .executeTakeFirstOrThrow();
    expect(resource).toEqual({ ownership: 'owned', state: 'ready', namespace_uid: ns.metadata.uid });
    expect((await environmentRow(st, id)).state).toBe('active');
    // The lease (renewed at start for the server's --cleanup-lease) returns the job; the re-check
    // finds the namespace recorded and ends it.
    st.advance(60 * 60_000);
    const retry = await st.executor.runPass();
    expect(retry.jobs.map((j) => [j.outcome, j.message])).toEqual([
      ['cancelled', expect.stringMatching(/recorded as present again/)],
    ]);
  }, 240_000);

  it('an executor reporting events that do not match its restore job records nothing; one that does not claim restores never gets one', async () => {
    s = await stage(dialect);
    const st = s;
    const { id } = await deployedAndCleaned(st, 'forge', 'forge-dev');
    const asked = await askRestore(st, id, st.server.tokens.admin);
    const jobId = asked.json<{ job: { id: string; targetKey: string } }>().job.id;
    const targetKey = asked.json<{ job: { targetKey: string } }>().job.targetKey;
    const queue = st.server.app.cleanup.queue;

    // An executor of an earlier version (no `actions`) is never handed a restore job.
    const old = await queue.claim({ executorId: 'old', targetKeys: [targetKey], max: 10, leaseSeconds: 60 });
    expect(old.jobs).toEqual([]);
    const claimed = await queue.claim({
      executorId: 'forger',
      targetKeys: [targetKey],
      max: 10,
      leaseSeconds: 60,
      actions: [...defaultClaimedActions, 'restore'],
    });
    expect(claimed.jobs.map((j) => j.id)).toEqual([jobId]);
    // The archive goes only to the lease holder of the started job.
    // The archive goes only to the lease holder of the started job, over the agent route too.
    const agent = new HttpCleanupQueue({ server: st.url, token: st.server.tokens.agent, retries: 0 });
    await expect(agent.restoreOrder(jobId, 'forger')).rejects.toThrow(/not started/);
    expect((await queue.start(jobId, { executorId: 'forger' })).proceed).toBe(true);
    await expect(agent.restoreOrder(jobId, 'someone-else')).rejects.toThrow(/does not hold the lease/);
    const reader = await st.server.app.inject({
      method: 'GET',
      url: `/api/v1/cleanup/jobs/${jobId}/archive?executorId=forger`,
      headers: st.server.auth(st.server.tokens.read),
    });
    expect(reader.statusCode).toBe(403);
    const order = await agent.restoreOrder(jobId, 'forger');
    expect(order).toMatchObject({ requestedBy: 'token:ops', cleanupPolicy: { afterInactivity: '1h' } });

    const sessionId = '01JAAAAAAAAAAAAAAAAAAAAAAA';
    const event = (n: number, type: string, payload: Record<string, unknown>) =>
      ({
        id: `01JAAAAAAAAAAAAAAAAAAAAB${String(n).padStart(2, '0')}`,
        type,
        sessionId,
        timestamp: new Date().toISOString(),
        payload,
      }) as unknown as TendEvent;
    const started = (namespace: string, project = 'forge') =>
      event(1, 'sessionStarted', {
        command: 'restore',
        args: [],
        project,
        environment: 'dev',
        namespace,
        user: 'x',
        hostId: 'h',
        cliVersion: '1',
      });
    const created = (namespace: string, uid: string, project = 'forge') =>
      event(2, 'namespaceStatus', {
        namespaceName: namespace,
        namespaceUid: uid,
        state: 'ready',
        role: 'app',
        cause: 'created',
        target: claimed.jobs[0]!.target,
        project,
        environment: 'dev',
        pluginName: 'kubernetes',
        providerName: 'kubernetes',
        handler: 'cleanup.restore',
      });
    // Someone else's namespace, under this job: refused, nothing recorded of it.
    await kubectl(st.sim.kubeconfig, 'create', 'namespace', 'victim');
    const victimUid = (st.sim.sim.store.get('namespaces', '', 'victim') as { metadata: { uid: string } })
      .metadata.uid;
    const forgeries: [string, unknown[]][] = [
      ['another namespace', [started('forge-dev'), created('victim', victimUid)]],
      ['another project', [started('forge-dev', 'other'), created('forge-dev', victimUid, 'other')]],
      ['no session start', [created('forge-dev', victimUid)]],
      ['not an event', [{ id: 'x' }]],
      ['a 10,000-deep value', [JSON.parse('['.repeat(10_000) + ']'.repeat(10_000))]],
    ];
    for (const [what, events] of forgeries) {
      await expect(
        queue.complete(jobId, {
          executorId: 'forger',
          outcome: 'done',
          message: 'x',
          events: events as never,
        }),
        what,
      ).rejects.toThrow(/events\[\d+\]|restore session/);
    }
    // With the created event that would complete it: only the event's type refuses the batch.
    const withCreated = (type: string, environment: string) => [
      started('forge-dev'),
      created('forge-dev', 'uid-forged'),
      event(3, type, { project: 'forge', environment }),
    ];
    for (const [what, events] of [
      ["another plugin's own type", withCreated('buckets.bucketCreated', 'dev')],
      ["the restoring plugin's own type, of another environment", withCreated('kubernetes.restored', 'prod')],
    ] as const) {
      await expect(
        queue.complete(jobId, {
          executorId: 'forger',
          outcome: 'done',
          message: 'x',
          events: events as never,
        }),
        what,
      ).rejects.toThrow(/events\[2\]: a restore session does not report/);
    }
    // Only the session's start names another project; the namespace it reports is the job's.
    await expect(
      queue.complete(jobId, {
        executorId: 'forger',
        outcome: 'done',
        message: 'x',
        events: [started('forge-dev', 'other'), created('forge-dev', victimUid)] as never,
      }),
    ).rejects.toThrow(/events\[0\]: the session is "restore" of other\/dev in forge-dev/);
    await expect(
      queue.complete(jobId, { executorId: 'forger', outcome: 'done', message: 'restored' }),
    ).rejects.toThrow(/only with the restore session's event that created namespace forge-dev/);
    const victim = await st.server.database.db
      .selectFrom('resources')
      .select('id')
      .where('namespace_name', '=', 'victim')
      .execute();
    expect(victim).toEqual([]);
    // Events belong to restore jobs only.
    await expect(
      queue.complete(jobId, { executorId: 'forger', outcome: 'failed', message: 'gave up' }),
    ).resolves.toBeDefined();
    expect((await environmentRow(st, id)).state).toBe('cleaned');
  }, 240_000);

  it('a namespace that appears between the check and the create is not restored into: nothing is applied', async () => {
    s = await stage(dialect);
    const st = s;
    const { id } = await deployedAndCleaned(st, 'late', 'late-dev');
    expect((await askRestore(st, id, st.server.tokens.admin)).statusCode).toBe(202);
    // The restore's create of the namespace is answered late; meanwhile someone creates it.
    st.sim.sim.faults.add({ type: 'latency', verb: 'create', resource: 'namespaces', ms: 2000, times: 1 });
    const since = st.sim.sim.requests.latest();
    const pass = st.executor.runPass();
    await waitFor(
      () =>
        st.sim.sim.requests
          .list({ since })
          .some((r) => r.verb === 'create' && r.path === '/api/v1/namespaces'),
      'the restore creating namespace late-dev',
    );
    st.sim.sim.store.create('namespaces', '', { metadata: { name: 'late-dev' } });
    const { jobs } = await pass;
    expect(jobs.map((j) => [j.outcome, j.message])).toEqual([
      [
        'cancelled',
        expect.stringMatching(/namespace late-dev was created by another command while this restore ran/),
      ],
    ]);
    expect(st.sim.sim.store.get('configmaps', 'late-dev', 'settings')).toBeUndefined();
    expect(
      st.sim.sim.requests
        .list({ since })
        .filter((r) => r.namespace === 'late-dev' && r.verb !== 'get' && r.verb !== 'list')
        .map((r) => [r.verb, r.status]),
    ).toEqual([['create', 409]]);
    const seen = await st.server.database.db
      .selectFrom('resources')
      .select(['ownership'])
      .where('environment_id', '=', id)
      .orderBy('generation', 'desc')
      .executeTakeFirstOrThrow();
    expect(seen.ownership).not.toBe('owned');
  }, 240_000);

  it('a restore that can never succeed (a tampered archive, another project’s namespace) ends for good, not retried', async () => {
    s = await stage(dialect, {
      archive: { key: archiveKeyOf(Buffer.from(randomBytes(32).toString('hex')), 'test') },
    });
    const st = s;
    const restoreJob = (namespace: string) =>
      st.server.database.db
        .selectFrom('cleanup_jobs')
        .select(['state', 'not_before', 'outcome_message'])
        .where('action', '=', 'restore')
        .where('namespace_name', '=', namespace)
        .executeTakeFirstOrThrow();

    const tampered = await deployedAndCleaned(st, 'sealed', 'sealed-dev');
    expect((await askRestore(st, tampered.id, st.server.tokens.admin)).statusCode).toBe(202);
    // Someone with the database changes the archived body: its seal no longer matches.
    const row = await st.server.database.db
      .selectFrom('environment_archives')
      .select(['id', 'body'])
      .where('environment_id', '=', tampered.id)
      .executeTakeFirstOrThrow();
    const body = JSON.parse(gunzipSync(Buffer.from(row.body, 'base64')).toString()) as { objects: unknown[] };
    body.objects = [];
    await st.server.database.db
      .updateTable('environment_archives')
      .set({ body: gzipSync(JSON.stringify(body)).toString('base64') })
      .where('id', '=', row.id)
      .execute();
    const first = await st.executor.runPass();
    expect(first.jobs.map((j) => j.outcome)).toEqual(['failed']);
    expect(await restoreJob('sealed-dev')).toEqual({
      state: 'failed',
      not_before: null,
      outcome_message: expect.stringMatching(
        /not retried: its archive cannot be restored: .*fails authentication/,
      ),
    });
    expect(st.namespaceExists('sealed-dev')).toBe(false);

    const taken = await deployedAndCleaned(st, 'taken', 'taken-dev');
    expect((await askRestore(st, taken.id, st.server.tokens.admin)).statusCode).toBe(202);
    // Another project's namespace of that name appears on the cluster.
    st.sim.sim.store.create('namespaces', '', {
      metadata: {
        name: 'taken-dev',
        labels: { 'app.kubernetes.io/managed-by': 'tend' },
        annotations: { 'tend.dev/project': 'someone-else', 'tend.dev/environment': 'dev' },
      },
    });
    // The framework reads the name before any plugin restores: it exists, the job is cancelled.
    const second = await st.executor.runPass();
    expect(second.jobs.map((j) => j.outcome)).toEqual(['cancelled']);
    expect(await restoreJob('taken-dev')).toEqual({
      state: 'cancelled',
      not_before: null,
      outcome_message: expect.stringMatching(/not restored: namespace taken-dev exists again/),
    });
    expect(st.sim.sim.store.get('configmaps', 'taken-dev', 'settings')).toBeUndefined();
    // Nothing comes back, however long one waits.
    st.advance(2 * 3_600_000);
    expect((await st.executor.runPass()).jobs).toEqual([]);
  }, 240_000);
});

describe('the Restore button', () => {
  it('shows for admins only, on a cleaned environment with an archive, and queues the restore job', async () => {
    s = await stage('sqlite');
    const st = s;
    const { id } = await deployedAndCleaned(st, 'button', 'button-dev');
    const login = async (token: string) => {
      const res = await postLogin(st.server.app, { token, next: '/' });
      return `tend_session=${res.cookies.find((c) => c.name === 'tend_session')!.value}`;
    };
    const page = (cookie: string) =>
      st.server.app.inject({ method: 'GET', url: `/environments/${id}`, headers: { cookie } });
    const restoreForm = `action="/environments/${id}/restore"`;

    const reader = await login(st.server.tokens.read);
    const readerPage = await page(reader);
    expect(readerPage.body).toContain('Restorable until');
    expect(readerPage.body).not.toContain(restoreForm);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(readerPage.body)![1]!;
    const denied = await st.server.app.inject({
      method: 'POST',
      url: `/environments/${id}/restore`,
      headers: { cookie: reader },
      payload: { _csrf: csrf },
    });
    expect(denied.statusCode).toBe(403);
    expect(denied.body).toContain('Restoring needs an admin token');

    const admin = await login(st.server.tokens.admin);
    const adminPage = await page(admin);
    expect(adminPage.body).toContain(restoreForm);
    // Without the session's CSRF value nothing is queued.
    const forged = await st.server.app.inject({
      method: 'POST',
      url: `/environments/${id}/restore`,
      headers: { cookie: admin },
      payload: { _csrf: 'x'.repeat(32) },
    });
    expect(forged.statusCode).toBe(403);
    const restoreJobs = () =>
      st.server.database.db.selectFrom('cleanup_jobs').select('id').where('action', '=', 'restore').execute();
    expect(await restoreJobs()).toEqual([]);

    // An admin clicks Restore in a real browser.
    const browser = await launchChromium();
    try {
      const tab = await browser.newPage();
      await tab.goto(`${st.url}/login`);
      await tab.fill('input[name="token"]', st.server.tokens.admin);
      await Promise.all([tab.waitForURL(`${st.url}/`), tab.click('button[type="submit"]')]);
      await tab.goto(`${st.url}/environments/${id}`);
      await Promise.all([tab.waitForLoadState('load'), tab.getByRole('button', { name: 'Restore' }).click()]);
      await tab.waitForURL(`${st.url}/environments/${id}`);
      expect(await restoreJobs()).toHaveLength(1);
      const jobRow = tab.locator('#environment-jobs tr', { hasText: 'restore' });
      expect(await jobRow.innerText()).toMatch(/planned[\s\S]*dashboard:ops \(restore\)/);

      const pass = await st.executor.runPass();
      expect(pass.jobs.map((j) => j.outcome)).toEqual(['done']);
      await tab.reload();
      expect(await tab.locator('#archive').innerText()).toMatch(/restored at \S+Z/);
      expect(await tab.getByRole('button', { name: 'Restore' }).count()).toBe(0);
      expect(await tab.locator('#status').innerText()).toMatch(/active/);
    } finally {
      await browser.close();
    }
  }, 240_000);
});
