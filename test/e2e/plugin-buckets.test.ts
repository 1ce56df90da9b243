/**
 * A third-party plugin written from docs/plugin-api.md alone, end to end: the
 * examples/plugin-buckets project (environments are buckets of the small object store
 * examples/plugin-buckets/store.js, started here on 127.0.0.1) deployed with the real CLI
 * streaming to a real server, its own event types recorded there, the policies enforced with
 * `tend cleanup enforce`, and `tend agent --plugin …/buckets.js --set buckets.url=<store>` listing
 * the store, archiving and deleting the idle bucket, leaving alone the one used since the plan,
 * pausing one (`tend resume` resumes it), restoring a deleted one by a restore job, and never
 * deleting a protected, a foreign or an adopted bucket. Then the plugin's primitives alone.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyExample, removeProjects, repoRoot, waitFor } from '../helpers/project.js';
import { createTestServer, type TestServer } from '../server/helpers.js';
import { callContext, testClock } from '../cleanup/helpers.js';
import { loadPluginModule } from '../../src/plugin/load.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import type { CleanupHandlers } from '../../src/plugin/types.js';
import { checkCleanupConformance } from '../../src/testing/index.js';
import { agentTokenFor, enforce, pluginAgent, projectCli, recordedEnvironmentId } from './plugin-helpers.js';

interface Store {
  url: string;
  storeId: string;
  close(): Promise<void>;
}
interface StoreModule {
  startStore(o: { dataDir: string; port?: number; token?: string; now?: () => number }): Promise<Store>;
}
interface Bucket {
  name: string;
  uid: string;
  version: string;
  readOnly: boolean;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

const example = path.join(repoRoot, 'examples', 'plugin-buckets');
const { startStore } = (await import(pathToFileURL(path.join(example, 'store.js')).href)) as StoreModule;

const hour = 3_600_000;
let server: TestServer;
let url: string;
let clock: ReturnType<typeof testClock>;
let scratch: string;
let store: Store;

beforeEach(async () => {
  clock = testClock();
  server = await createTestServer('sqlite', {
    now: clock.now,
    cleanup: { maxPerPass: 1000, intervalMs: 60_000 },
  });
  url = await server.app.listen({ port: 0, host: '127.0.0.1' });
  scratch = mkdtempSync(path.join(os.tmpdir(), 'tend-buckets-'));
  // The store's clock is the world's: it moves with the server's (its lists attest their time).
  store = await startStore({ dataDir: path.join(scratch, 'store'), now: () => clock.now().getTime() });
});
afterEach(async () => {
  await store.close();
  await server.close();
  rmSync(scratch, { recursive: true, force: true });
});
afterAll(removeProjects);

/** The store's HTTP API, as anyone (not tend) uses it. */
async function storeRequest(method: string, route: string, body?: unknown) {
  return fetch(`${store.url}${route}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}
async function bucket(name: string): Promise<Bucket | undefined> {
  const response = await storeRequest('GET', `/buckets/${name}`);
  return response.status === 404 ? undefined : ((await response.json()) as Bucket);
}
async function objectText(name: string, key: string): Promise<string> {
  return (await storeRequest('GET', `/buckets/${name}/objects/${key}`)).text();
}
async function createBucket(name: string, marks: Pick<Bucket, 'labels' | 'annotations'>): Promise<Bucket> {
  const response = await storeRequest('PUT', `/buckets/${name}`, marks);
  expect(response.status).toBe(201);
  return (await response.json()) as Bucket;
}

/**
 * A copy of the example as its user has it: `typebox` and `tend` (this repository, built) in its
 * node_modules; `environments` appended to its tend.yml's list.
 */
function bucketsProject(environments = ''): string {
  const project = copyExample('plugin-buckets');
  const modules = path.join(project, 'node_modules');
  mkdirSync(modules);
  symlinkSync(path.join(repoRoot, 'node_modules', 'typebox'), path.join(modules, 'typebox'), 'dir');
  symlinkSync(repoRoot, path.join(modules, 'tend'), 'dir');
  const config = path.join(project, 'tend.yml');
  writeFileSync(config, readFileSync(config, 'utf8').replace('\nproviders:', `\n${environments}providers:`));
  return project;
}

function bucketsCli(project: string) {
  const cli = projectCli(project, url, scratch);
  const inStore = ['--var', `store=${store.url}`];
  const deploy = async (env: string) => {
    const run = await cli(server.tokens.ingest, 'deploy', '--env', env, ...inStore, '--json');
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout).namespace as string;
  };
  const agent = (token = server.tokens.agent) =>
    pluginAgent(cli, {
      url,
      token,
      plugin: path.join(project, 'plugin', 'buckets.js'),
      settings: [`buckets.url=${store.url}`],
    });
  return { cli, inStore, deploy, agent };
}

describe('the plugin-buckets example', () => {
  it('records its buckets and its own events; archives and deletes the idle one, leaves the one used since the plan, pauses one that tend resume resumes; tend restore brings the deleted one back', async () => {
    const project = bucketsProject();
    const { cli, inStore, deploy, agent } = bucketsCli(project);
    const targetKey = `buckets/${store.storeId}`;
    const names = {
      dev: await deploy('dev'),
      review: await deploy('review'),
      preview: await deploy('preview'),
    };
    expect(await objectText(names.dev, 'readme')).toBe('notes of dev');
    const devBucket = (await bucket(names.dev))!;
    expect(devBucket).toMatchObject({
      labels: { 'managed-by': 'tend' },
      annotations: { 'tend.dev/project': 'notes', 'tend.dev/environment': 'dev' },
    });

    // The plugin's own events: in the local log, and on the server, filtered by type.
    const local = await cli(
      server.tokens.read,
      'events',
      'latest',
      '--type',
      'buckets.objectWritten',
      '--json',
    );
    expect(local.code, local.stderr).toBe(0);
    expect(JSON.parse(local.stdout)).toEqual([
      expect.objectContaining({
        type: 'buckets.objectWritten',
        payload: expect.objectContaining({ bucket: names.preview, key: 'readme', pluginName: 'buckets' }),
      }),
    ]);
    const devId = await recordedEnvironmentId(server, 'dev');
    const created = await waitFor(async () => {
      const answer = await server.app.inject({
        url: `/api/v1/environments/${devId}/events?type=buckets.bucketCreated`,
        headers: server.auth(server.tokens.read),
      });
      const items = answer.json<{ items: { type: string; payload: object }[] }>().items;
      return items.length > 0 && items;
    }, 'the bucketCreated event on the server');
    expect(created).toEqual([
      expect.objectContaining({
        type: 'buckets.bucketCreated',
        payload: expect.objectContaining({ bucket: names.dev, uid: devBucket.uid, store: store.storeId }),
      }),
    ]);

    // Each bucket recorded as an owned resource of the store's target, with the store's uid.
    const resources = await waitFor(async () => {
      const rows = await server.database.db
        .selectFrom('resources')
        .select(['namespace_name', 'namespace_uid', 'target_key', 'ownership', 'state'])
        .execute();
      return rows.length === 3 && rows;
    }, 'the three buckets recorded on the server');
    expect(resources).toEqual(
      expect.arrayContaining([
        {
          namespace_name: names.dev,
          namespace_uid: devBucket.uid,
          target_key: targetKey,
          ownership: 'owned',
          state: 'ready',
        },
      ]),
    );
    expect(resources.every((r) => r.ownership === 'owned' && r.target_key === targetKey)).toBe(true);

    const listed = await agent()();
    expect(listed.targets).toEqual([expect.objectContaining({ targetKey })]);
    expect(listed.inventories).toEqual([expect.objectContaining({ targetKey, complete: true, items: 3 })]);

    // Idle two hours: planned, dry-run until enforced.
    clock.advance(2 * hour);
    await server.app.cleanup.pass.run();
    expect((await agent()()).jobs).toEqual([]);
    await enforce(cli, server, url, 'notes');
    await agent()();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(3);

    // Someone uses the review environment after the plan.
    await deploy('review');

    const acted = await agent()();
    expect(acted.jobs.map((j) => j.outcome).sort()).toEqual(['cancelled', 'done', 'done']);
    expect(acted.jobs.find((j) => j.outcome === 'cancelled')!.message).toMatch(/used since|activity|used at/);
    expect(await bucket(names.dev)).toBeUndefined();
    expect(await objectText(names.review, 'readme')).toBe('notes of review');
    const paused = (await bucket(names.preview))!;
    expect(paused.readOnly).toBe(true);
    expect(JSON.parse(paused.annotations['tend.dev/paused']!)).toMatchObject({ readOnly: false });
    // Read-only: the store refuses writes while it is paused.
    expect((await storeRequest('PUT', `/buckets/${names.preview}/objects/other`, 'x')).status).toBe(423);

    // The dev bucket was archived (its objects) before its deletion.
    const archives = await server.database.db
      .selectFrom('environment_archives')
      .select(['namespace_name', 'target_key'])
      .execute();
    expect(archives).toEqual([{ namespace_name: names.dev, target_key: targetKey }]);
    const states = async () =>
      Object.fromEntries(
        (await server.database.db.selectFrom('environments').select(['name', 'state']).execute()).map((e) => [
          e.name,
          e.state,
        ]),
      );
    expect(await states()).toEqual({ dev: 'cleaned', review: 'active', preview: 'paused' });

    // tend status says the paused deploy is paused; tend resume writes back what the pause recorded.
    const status = await cli(server.tokens.read, 'status', '--env', 'preview', ...inStore, '--json');
    expect(JSON.parse(status.stdout).actions).toEqual([
      expect.objectContaining({
        ref: 'deploy.readme',
        state: 'paused',
        reason: expect.stringContaining('tend resume'),
      }),
    ]);
    const resumed = await cli(server.tokens.ingest, 'resume', '--env', 'preview', ...inStore);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`bucket ${names.preview}: writable again`);
    const after = (await bucket(names.preview))!;
    expect(after.readOnly).toBe(false);
    expect(after.annotations).not.toHaveProperty('tend.dev/paused');
    await waitFor(async () => (await states()).preview === 'active', 'the preview environment active again');

    // tend restore: the deleted dev bucket back from its archive, through the provider.
    const restore = await cli(
      server.tokens.admin,
      'restore',
      devId,
      ...inStore,
      '--server',
      url,
      '--token',
      server.tokens.admin,
    );
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toContain('restored  object/readme');
    expect(await objectText(names.dev, 'readme')).toBe('notes of dev');
    const restored = (await bucket(names.dev))!;
    expect(restored.uid).not.toBe(devBucket.uid);
    await waitFor(async () => (await states()).dev === 'active', 'the dev environment active again');
    // The restore session is a command's: the plugin's own events reach the server with it.
    await waitFor(async () => {
      const answer = await server.app.inject({
        url: `/api/v1/environments/${devId}/events?type=buckets.bucketCreated`,
        headers: server.auth(server.tokens.read),
      });
      const items = answer.json<{ items: { payload: { uid: string } }[] }>().items;
      return items.some((e) => e.payload.uid === restored.uid);
    }, 'the restored bucket’s bucketCreated event on the server');
  }, 120_000);

  it('never deletes a protected, a foreign or an adopted bucket', async () => {
    const policy = '    cleanup:\n      afterInactivity: 1h\n      action: delete\n';
    const project = bucketsProject(
      `  - name: kept\n    defaultNamespace: notes-kept\n${policy}` +
        `  - name: legacy\n    defaultNamespace: notes-legacy\n${policy}`,
    );
    const { cli, inStore, deploy, agent } = bucketsCli(project);
    // There before tend: adopted by the deploy, never tend's to delete.
    await createBucket('notes-legacy', { labels: {}, annotations: { owner: 'ops' } });
    // Marked as tend's for notes/dev by someone else: no command created it, nothing records it.
    const forgedMarks = {
      'tend.dev/project': 'notes',
      'tend.dev/environment': 'dev',
      'tend.dev/last-activity': '2026-01-01T00:00:00.000Z',
    };
    await createBucket('notes-foreign', { labels: { 'managed-by': 'tend' }, annotations: forgedMarks });
    const dev = await deploy('dev');
    await deploy('kept');
    await deploy('legacy');
    expect((await bucket('notes-legacy'))!.annotations).toMatchObject({
      'tend.dev/adopted': 'true',
      owner: 'ops',
    });
    // By hand: the deploy's object removed from the adopted bucket, the bucket itself left alone.
    const removed = await cli(
      server.tokens.ingest,
      'cleanup',
      'deploy',
      'readme',
      '--env',
      'legacy',
      ...inStore,
    );
    expect(removed.code, removed.stderr).toBe(0);
    expect((await storeRequest('GET', '/buckets/notes-legacy/objects/readme')).status).toBe(404);
    const byHand = await cli(server.tokens.ingest, 'cleanup', 'env', '--env', 'legacy', ...inStore);
    expect(byHand.stdout + byHand.stderr).toContain(
      'bucket notes-legacy left alone: it existed before tend used it',
    );
    expect(await bucket('notes-legacy')).toBeDefined();
    const protect = await cli(
      server.tokens.developer,
      'protect',
      '--env',
      'kept',
      '--server',
      url,
      '--token',
      server.tokens.developer,
    );
    expect(protect.code, protect.stderr).toBe(0);

    const listed = await agent()();
    // dev, kept and the foreign one carry tend's label; the adopted one does not.
    expect(listed.inventories).toEqual([expect.objectContaining({ complete: true, items: 3 })]);
    clock.advance(2 * hour);
    await enforce(cli, server, url, 'notes');
    await agent()();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
    const plan = await server.app.inject({
      url: '/api/v1/cleanup/plan?project=notes&within=365d',
      headers: server.auth(server.tokens.read),
    });
    const decisions = plan.json<{ items: { environment: string; kind: string; reason: string | null }[] }>()
      .items;
    expect(decisions.find((d) => d.environment === 'kept')).toMatchObject({
      kind: 'blocked',
      reason: 'protected',
    });
    expect(decisions.find((d) => d.environment === 'legacy')).toMatchObject({
      kind: 'blocked',
      reason: 'adopted',
    });

    // Clean up now: the same checks, only the wait skipped.
    for (const [name, reason] of [
      ['kept', /protected/],
      ['legacy', /adopted|existed before/],
    ] as const) {
      const answer = await server.app.inject({
        method: 'POST',
        url: `/api/v1/environments/${await recordedEnvironmentId(server, name)}/cleanup`,
        headers: server.auth(server.tokens.admin),
        payload: {},
      });
      expect(answer.statusCode, answer.body).toBe(409);
      expect(answer.body).toMatch(reason);
    }

    const acted = await agent()();
    expect(acted.jobs).toEqual([expect.objectContaining({ outcome: 'done' })]);
    expect(await bucket(dev)).toBeUndefined();
    for (const name of ['notes-kept', 'notes-legacy', 'notes-foreign'])
      expect(await bucket(name)).toBeDefined();
    // The foreign one is shown as unrecorded, never planned.
    const status = await server.app.inject({
      url: '/api/v1/cleanup/status',
      headers: server.auth(server.tokens.read),
    });
    expect(status.body).toContain('notes-foreign');
  }, 120_000);

  it('restores a deleted bucket by a restore job through tend agent --plugin with a token bound to the store', async () => {
    const project = bucketsProject();
    const { cli, deploy, agent: agentWith } = bucketsCli(project);
    const name = await deploy('dev');
    const targetKey = `buckets/${store.storeId}`;
    const agent = agentWith(await agentTokenFor(server, 'agent-buckets', targetKey));
    const environmentId = await recordedEnvironmentId(server, 'dev');
    const deletedUid = (await bucket(name))!.uid;
    await enforce(cli, server, url, 'notes');
    clock.advance(2 * hour);
    await agent();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
    expect((await agent()).jobs).toEqual([expect.objectContaining({ outcome: 'done' })]);
    expect(await bucket(name)).toBeUndefined();

    const asked = await server.app.inject({
      method: 'POST',
      url: `/api/v1/environments/${environmentId}/restore`,
      headers: server.auth(server.tokens.admin),
      payload: {},
    });
    expect(asked.statusCode, asked.body).toBe(202);
    expect(asked.json<{ job: object }>().job).toMatchObject({
      action: 'restore',
      pluginName: 'buckets',
      targetKey,
    });
    const restored = await agent();
    expect(restored.jobs).toEqual([
      expect.objectContaining({
        outcome: 'done',
        message: expect.stringContaining(`restored 1 object(s) into bucket ${name}`),
      }),
    ]);
    // A new bucket (a new uid), its object back, recorded as tend's by the restore session.
    const again = (await bucket(name))!;
    expect(again.uid).not.toBe(deletedUid);
    expect(await objectText(name, 'readme')).toBe('notes of dev');
    const resource = await server.database.db
      .selectFrom('resources')
      .select(['ownership', 'state', 'namespace_uid', 'target_key'])
      .where('environment_id', '=', environmentId)
      .orderBy('generation', 'desc')
      .executeTakeFirstOrThrow();
    expect(resource).toEqual({
      ownership: 'owned',
      state: 'ready',
      namespace_uid: again.uid,
      target_key: targetKey,
    });
    const env = await server.database.db
      .selectFrom('environments')
      .select('state')
      .where('id', '=', environmentId)
      .executeTakeFirstOrThrow();
    expect(env.state).toBe('active');
    // What the restore primitive announced with the plugin's own types is the restore session's, on the server.
    const announced = await server.app.inject({
      url: `/api/v1/environments/${environmentId}/events?type=buckets.bucketCreated`,
      headers: server.auth(server.tokens.read),
    });
    const items = announced.json<{ items: { payload: { uid: string; handler: string } }[] }>().items;
    expect(items.find((e) => e.payload.uid === again.uid)?.payload.handler).toBe('cleanup.restore');
  });
});

describe('the plugin-buckets cleanup primitives', () => {
  it('list every page, act only on the version they were given, pause once and resume exactly, and never call a list complete that was cut short', async () => {
    const plugin = await loadPluginModule('./plugin/buckets.js', bucketsProject(), builtinPlugins());
    const cleanup = plugin.cleanup as CleanupHandlers<{ url: string; token?: string; pageSize: number }>;
    const { ctx } = callContext({ url: store.url, pageSize: 1 }, { pluginName: 'buckets' });
    const marked = (environment: string) => ({
      labels: { 'managed-by': 'tend' },
      annotations: { 'tend.dev/project': 'notes', 'tend.dev/environment': environment },
    });
    for (const name of ['notes-a', 'notes-b', 'notes-c']) await createBucket(name, marked(name.slice(6)));
    await createBucket('not-tends', { labels: {}, annotations: {} });

    const [target] = await cleanup.targets(ctx);
    expect(target).toMatchObject({ targetKey: `buckets/${store.storeId}`, pluginName: 'buckets' });
    const inventory = await cleanup.inventory(ctx, target!);
    expect(inventory).toMatchObject({ complete: true, observedAt: expect.any(String) });
    expect(inventory.items.map((i) => i.name)).toEqual(['notes-a', 'notes-b', 'notes-c']);
    const a = inventory.items[0]!;
    expect(a).toMatchObject({ managedByTend: true, project: 'notes', environment: 'a', adopted: false });

    // A use since the read (a new version): the deletion is `changed`, nothing deleted.
    await storeRequest('PUT', '/buckets/notes-a/objects/k', 'v');
    expect(await cleanup.delete(ctx, target!, a, { uid: a.uid, version: a.version })).toMatchObject({
      outcome: 'changed',
    });
    expect(await bucket('notes-a')).toBeDefined();
    // Another uid with the version as it is now: not the bucket the check read, nothing deleted.
    const now = (await cleanup.read(ctx, target!, { name: 'notes-a', project: 'notes', environment: 'a' }))!;
    expect(
      await cleanup.delete(ctx, target!, now, { uid: 'another-uid', version: now.version }),
    ).toMatchObject({
      outcome: 'changed',
    });
    expect(await bucket('notes-a')).toBeDefined();

    // Pause a bucket that was read-only already: resume leaves it read-only, as it was.
    const b = (await bucket('notes-b'))!;
    const readOnly = await storeRequest('PATCH', '/buckets/notes-b', { readOnly: true });
    const before = (await cleanup.read(ctx, target!, {
      name: 'notes-b',
      project: 'notes',
      environment: 'b',
    }))!;
    expect(readOnly.status).toBe(200);
    expect(before.version).not.toBe(b.version);
    expect(
      await cleanup.pause!(ctx, target!, before, { uid: before.uid, version: before.version }),
    ).toMatchObject({
      outcome: 'done',
    });
    const pausedOnce = (await cleanup.read(ctx, target!, {
      name: 'notes-b',
      project: 'notes',
      environment: 'b',
    }))!;
    expect(
      await cleanup.pause!(ctx, target!, pausedOnce, { uid: pausedOnce.uid, version: pausedOnce.version }),
    ).toMatchObject({ outcome: 'done', message: expect.stringContaining('already paused') });
    expect(
      await cleanup.resume!(ctx, target!, pausedOnce, { uid: pausedOnce.uid, version: pausedOnce.version }),
    ).toMatchObject({ outcome: 'done' });
    const resumed = (await bucket('notes-b'))!;
    expect(resumed.readOnly).toBe(true);
    expect(resumed.annotations).not.toHaveProperty('tend.dev/paused');

    // A store with a token: refused without it (the store's 401 in the error), served with it.
    const guarded = await startStore({ dataDir: path.join(scratch, 'guarded'), token: 'store-secret' });
    try {
      const without = callContext({ url: guarded.url, pageSize: 10 }, { pluginName: 'buckets' }).ctx;
      await expect(cleanup.targets(without)).rejects.toThrow(/answered GET \/ with 401/);
      const withToken = callContext(
        { url: guarded.url, token: 'store-secret', pageSize: 10 },
        { pluginName: 'buckets' },
      ).ctx;
      expect(await cleanup.targets(withToken)).toEqual([
        expect.objectContaining({ targetKey: `buckets/${guarded.storeId}` }),
      ]);
    } finally {
      await guarded.close();
    }

    // The store gone mid-way: the list is not complete, whatever it got.
    await store.close();
    expect(await cleanup.inventory(ctx, target!)).toMatchObject({
      complete: false,
      error: expect.stringContaining('cannot be reached'),
    });
  });
});

describe('the plugin-buckets cleanup primitives, by the conformance kit', () => {
  it('pass every check of checkCleanupConformance, an adopted bucket included', async () => {
    const report = await checkCleanupConformance({
      root: bucketsProject(),
      plugin: 'buckets',
      vars: [`store=${store.url}`],
      settings: { url: store.url },
      protection: { patterns: ['notes-prod-*'] },
      // A bucket someone made before tend used it: the preview deploy adopts it.
      adopted: {
        environment: 'preview',
        create: (name) => createBucket(name, { labels: {}, annotations: {} }).then(() => {}),
      },
    });
    expect(report.targetKey).toBe(`buckets/${store.storeId}`);
    expect(report.checks.filter((c) => c.status !== 'pass')).toEqual([]);
    expect(report.checks.map((c) => c.check)).toEqual([
      'targets',
      'inventory',
      'read',
      'preconditions',
      'dry-run',
      'protection',
      'hostile-jobs',
      'pause-resume',
      'archive',
      'restore',
      'delete',
    ]);
    expect(report.checks.find((c) => c.check === 'hostile-jobs')!.sentence).toContain('an adopted resource');
  });
});
