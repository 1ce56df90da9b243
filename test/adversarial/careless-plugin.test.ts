/**
 * Attack: a plugin whose cleanup primitives check nothing. Its store's `read` returns whatever is
 * there now, its `delete`, `pause` and `resume` act on any name without a look at the
 * precondition. Seven idle resources are recorded, planned and enforced on a real server; one's
 * name is protected at this executor only, and five change after the pass's inventory and the
 * server's re-check, right before the executor reads them (a race neither the planner nor the
 * server sees): one is now marked as another project's, one as adopted, one as created before the
 * session that claims it started, one was used since the plan, one was re-created (another uid). The executor's own checks keep every one of them: the careless
 * plugin's `delete` is called for the untouched resource only.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Type } from 'typebox';
import type { CleanupResource } from '../../src/cleanup/protocol.js';
import { CleanupExecutor } from '../../src/executor/executor.js';
import type { CleanupPrimitives, PluginDefinition } from '../../src/plugin/types.js';
import { validatePlugins } from '../../src/plugin/validate.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import type { ServedPlugin } from '../../src/router/cleanup.js';
import { testClock, type TestClock } from '../cleanup/helpers.js';
import { removeProjects } from '../helpers/project.js';
import { createTestServer, dialects, newId, postEvents, type TestServer } from '../server/helpers.js';

const hour = 3_600_000;
const target = { kind: 'plugin', targetKind: 'careless', id: 'store-1' } as const;

/** The careless plugin's store, and every call of its acting primitives. */
function carelessPlugin() {
  const store = new Map<string, CleanupResource>();
  const acted: string[] = [];
  /** Changes that land after the pass's inventory, right before the executor reads: a race the server cannot see. */
  const racing = new Map<string, Partial<CleanupResource>>();
  const cleanup: CleanupPrimitives = {
    targetKind: 'careless',
    settingsSchema: Type.Object({}),
    settingsFromFlags: () => ({}),
    async targets() {
      return [{ targetKey: 'careless/store-1', pluginName: 'careless', description: 'a careless store' }];
    },
    async inventory() {
      return { complete: true, items: [...store.values()] };
    },
    async read(_ctx, _target, { name }) {
      const change = racing.get(name);
      if (change) store.set(name, { ...store.get(name)!, ...change, version: '2' });
      racing.delete(name);
      return store.get(name);
    },
    async delete(_ctx, _target, resource) {
      acted.push(`delete ${resource.name}`);
      store.delete(resource.name);
      return { outcome: 'done', message: `deleted ${resource.name}` };
    },
    async pause(_ctx, _target, resource) {
      acted.push(`pause ${resource.name}`);
      return { outcome: 'done', message: `paused ${resource.name}` };
    },
    async resume(_ctx, _target, resource) {
      acted.push(`resume ${resource.name}`);
      return { outcome: 'done', message: `resumed ${resource.name}` };
    },
  };
  const plugin: PluginDefinition = {
    name: 'careless',
    description: 'cleanup primitives that check nothing',
    configSchema: Type.Object({}),
    emits: ['resourceStatus'],
    provider: {
      async init() {
        return {};
      },
      async getEnvironmentStatus() {
        return { ready: true };
      },
      async prepareEnvironment() {
        return { ready: true };
      },
      async cleanupEnvironment() {
        return { deleted: false, message: 'never' };
      },
    },
    actionTypes: [],
    cleanup,
  };
  return { plugin, store, acted, racing };
}

/** A session of `project`/dev that creates `name` (uid `uid`) on the careless store at `at`. */
function creation(project: string, name: string, uid: string, at: Date) {
  const sessionId = newId();
  const base = (type: string, payload: unknown) => ({
    id: newId(),
    type,
    sessionId,
    timestamp: at.toISOString(),
    payload,
  });
  return [
    base('sessionStarted', {
      command: 'deploy',
      args: [],
      project,
      environment: 'dev',
      namespace: name,
      user: 'alice',
      hostId: 'host-1',
      cliVersion: '0.1.0',
      cleanupPolicy: { afterInactivity: '1h', action: 'delete' },
    }),
    // The careless plugin speaks of resources, not namespaces: recorded all the same.
    base('resourceStatus', {
      pluginName: 'careless',
      providerName: 'careless',
      resourceName: name,
      resourceUid: uid,
      state: 'ready',
      role: 'app',
      cause: 'created',
      target,
      project,
      environment: 'dev',
    }),
    base('sessionCompleted', { durationMs: 10, succeeded: 1, cached: 0, failed: 0, aborted: 0 }),
  ];
}

describe.each(dialects)('a careless plugin cannot get what tend must keep deleted, on %s', (dialect) => {
  let server: TestServer;
  let clock: TestClock;

  beforeEach(async () => {
    clock = testClock();
    server = await createTestServer(dialect, {
      now: clock.now,
      cleanup: { maxPerPass: 1000, intervalMs: 60_000 },
    });
  });
  afterEach(() => server.close());
  afterAll(removeProjects);

  it('the executor keeps protected, foreign, adopted, claimed, active and re-created resources; the idle one goes', async () => {
    const { plugin, store, acted, racing } = carelessPlugin();
    expect(() => validatePlugins([...builtinPlugins(), plugin])).not.toThrow();
    const names = ['idle', 'keep', 'foreign', 'adopted', 'claimed', 'active', 'changed'];
    const now = clock.now();
    for (const name of names) {
      const resource = `bkt-${name}`;
      store.set(resource, {
        name: resource,
        uid: `uid-${name}`,
        version: '1',
        state: 'active',
        managedByTend: true,
        project: name,
        environment: 'dev',
        role: 'app',
        adopted: false,
        lastActivityAt: now.toISOString(),
        createdAt: now.toISOString(),
      });
      const recorded = await postEvents(server, creation(name, resource, `uid-${name}`, now));
      expect(recorded.statusCode, recorded.body).toBe(200);
      await server.app.cleanup.switches.enforce(name, undefined, 'test');
    }
    const executor = new CleanupExecutor({
      queue: server.app.cleanup.queue,
      plugins: [{ plugin, settings: {} } as ServedPlugin],
      // Protected at this executor only: the server planned it.
      protection: { systemName: 'tend-system', patterns: ['bkt-keep*'] },
      kind: 'embedded',
      name: 'careless',
      version: 'test',
    });
    clock.advance(2 * hour);
    expect((await executor.runPass()).inventories).toEqual([
      expect.objectContaining({ targetKey: 'careless/store-1', complete: true, items: names.length }),
    ]);
    expect((await server.app.cleanup.pass.run())?.planned).toBe(names.length);

    // After the executor's inventory and the server's re-check, right before the executor reads,
    // the store changes under the jobs.
    const change = (name: string, changes: Partial<CleanupResource>) => racing.set(`bkt-${name}`, changes);
    change('foreign', { project: 'someone-else' });
    change('adopted', { adopted: true });
    change('claimed', { createdAt: new Date(now.getTime() - 24 * hour).toISOString() });
    change('active', { lastActivityAt: clock.now().toISOString() });
    change('changed', { uid: 'uid-recreated' });

    const pass = await executor.runPass();
    const outcome = Object.fromEntries(pass.jobs.map((j) => [j.namespaceName, j]));
    expect(Object.keys(outcome).sort()).toEqual(names.map((n) => `bkt-${n}`).sort());
    expect(outcome['bkt-idle'], outcome['bkt-idle']?.message).toMatchObject({ outcome: 'done' });
    const why: Record<string, RegExp> = {
      keep: /protected/,
      foreign: /belongs to project "someone-else"/,
      adopted: /adopted/,
      claimed: /created it at .*, before the session that claims to have created it started/,
      active: /used at .*, after the decision/,
      changed: /re-created/,
    };
    for (const [name, message] of Object.entries(why)) {
      expect(outcome[`bkt-${name}`], name).toMatchObject({ outcome: 'cancelled' });
      expect(outcome[`bkt-${name}`]!.message).toMatch(message);
      expect(store.has(`bkt-${name}`), name).toBe(true);
    }
    expect(acted).toEqual(['delete bkt-idle']);
    const results = await server.database.db
      .selectFrom('cleanup_jobs')
      .select(['namespace_name', 'result'])
      .execute();
    expect(Object.fromEntries(results.map((r) => [r.namespace_name, r.result]))).toEqual(
      Object.fromEntries(names.map((n) => [`bkt-${n}`, n === 'idle' ? 'done' : 'cancelled'])),
    );
  });

  it('a dry run at the executor checks everything and acts on nothing', async () => {
    const { plugin, store, acted } = carelessPlugin();
    const now = clock.now();
    store.set('bkt-dry', {
      name: 'bkt-dry',
      uid: 'uid-dry',
      version: '1',
      state: 'active',
      managedByTend: true,
      project: 'dry',
      environment: 'dev',
      role: 'app',
      adopted: false,
    });
    expect((await postEvents(server, creation('dry', 'bkt-dry', 'uid-dry', now))).statusCode).toBe(200);
    await server.app.cleanup.switches.enforce('dry', undefined, 'test');
    const executorWith = (dryRun: boolean) =>
      new CleanupExecutor({
        queue: server.app.cleanup.queue,
        plugins: [{ plugin, settings: {} } as ServedPlugin],
        protection: { systemName: 'tend-system', patterns: [] },
        kind: 'embedded',
        name: 'careless',
        version: 'test',
        dryRun,
      });
    clock.advance(2 * hour);
    await executorWith(true).runPass();
    expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
    const dry = await executorWith(true).runPass();
    expect(dry.jobs).toEqual([
      expect.objectContaining({ outcome: 'cancelled', message: expect.stringMatching(/dry run/) }),
    ]);
    expect(acted).toEqual([]);
    expect(store.has('bkt-dry')).toBe(true);
  });
});
