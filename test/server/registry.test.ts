import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, dialects, getJson, postEvents, session, type TestServer } from './helpers.js';

interface Detail {
  environment: {
    id: string;
    state: string;
    owner: string | null;
    policy: unknown;
    lastActivity: Record<string, unknown>;
  };
  resources: {
    namespace: string;
    namespaceUid: string | null;
    generation: number;
    state: string;
    role: string;
    ownership: string;
  }[];
  sessions: { id: string; status: string; command: string | null; error: unknown }[];
  timeline: { type: string; summary: string }[];
}

describe.each(dialects)('registry on %s', (dialect) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer(dialect);
  });
  afterAll(async () => s.close());

  const detailOf = async (namespace: string) => {
    const list = await getJson<{ items: { id: string; namespace: string }[] }>(
      s,
      '/api/v1/environments?limit=500',
    );
    const env = list.body.items.find((e) => e.namespace === namespace);
    expect(env, namespace).toBeDefined();
    return (await getJson<Detail>(s, `/api/v1/environments/${env!.id}`)).body;
  };

  it('records an environment with owner, policy, session and activity source', async () => {
    const a = session({ user: 'carol', command: 'deploy' });
    await postEvents(s, [
      a.started({ afterInactivity: '8h', action: 'delete' }),
      a.ns('ready', { uid: 'u1' }),
      a.action(),
      a.completed(),
    ]);
    const d = await detailOf(a.namespace);
    expect(d.environment.state).toBe('active');
    expect(d.environment.owner).toBe('carol');
    expect(d.environment.policy).toEqual({ afterInactivity: '8h', action: 'delete' });
    expect(d.environment.lastActivity).toMatchObject({
      sessionId: a.sessionId,
      command: 'deploy',
      user: 'carol',
      type: 'sessionCompleted',
    });
    expect(d.sessions).toEqual([
      expect.objectContaining({ id: a.sessionId, status: 'completed', command: 'deploy' }),
    ]);
    expect(d.resources).toEqual([
      expect.objectContaining({
        namespace: a.namespace,
        namespaceUid: 'u1',
        generation: 1,
        state: 'ready',
        role: 'app',
        ownership: 'owned',
      }),
    ]);
    expect(d.timeline.map((t) => t.type)).toEqual([
      'sessionCompleted',
      'actionStatus',
      'namespaceStatus',
      'sessionStarted',
    ]);
  });

  it('starts a new resource generation when the namespace comes back with a new uid', async () => {
    const a = session({ user: 'dave' });
    await postEvents(s, [a.started(), a.ns('ready', { uid: 'uid-1' })]);
    const b = session({ user: 'dave' });
    await postEvents(s, [b.started(), b.ns('ready', { uid: 'uid-2' })]);
    const d = await detailOf(a.namespace);
    expect(d.resources.map((r) => [r.generation, r.namespaceUid, r.state])).toEqual([
      [2, 'uid-2', 'ready'],
      [1, 'uid-1', 'missing'],
    ]);
    expect(d.environment.state).toBe('active');
  });

  it('learns the uid of a namespace first seen without one, without a new generation', async () => {
    const a = session({ user: 'erin' });
    await postEvents(s, [a.started(), a.ns('ready')]);
    await postEvents(s, [a.ns('ready', { uid: 'late-uid', cause: 'observed' })]);
    const d = await detailOf(a.namespace);
    expect(d.resources.map((r) => [r.generation, r.namespaceUid])).toEqual([[1, 'late-uid']]);
  });

  it('marks a resource missing and the environment cleaned when all its resources are gone', async () => {
    const a = session({ user: 'frank' });
    await postEvents(s, [
      a.started(),
      a.ns('ready', { uid: 'f1' }),
      a.ns('ready', { name: 'tend-system', role: 'system', uid: 'sys', cause: 'observed' }),
    ]);
    expect((await detailOf(a.namespace)).environment.state).toBe('active');
    await postEvents(s, [a.ns('terminating', { uid: 'f1', cause: 'deleted' })]);
    expect((await detailOf(a.namespace)).resources.find((r) => r.role === 'app')?.state).toBe('terminating');
    await postEvents(s, [a.ns('missing', { uid: 'f1' })]);
    const d = await detailOf(a.namespace);
    // The shared system namespace is not the environment's own: it does not keep it alive.
    expect(d.resources.find((r) => r.role === 'system')?.state).toBe('ready');
    expect(d.resources.find((r) => r.role === 'app')?.state).toBe('missing');
    expect(d.environment.state).toBe('cleaned');
    const cleaned = await getJson<{ items: { namespace: string }[] }>(
      s,
      '/api/v1/environments?state=cleaned',
    );
    expect(cleaned.body.items.map((e) => e.namespace)).toContain(a.namespace);
    // Deployed again: active again, as a new generation.
    const b = session({ user: 'frank' });
    await postEvents(s, [b.started(), b.ns('ready', { uid: 'f2' })]);
    const again = await detailOf(a.namespace);
    expect(again.environment.state).toBe('active');
    expect(again.resources.filter((r) => r.role === 'app').map((r) => r.generation)).toEqual([2, 1]);
  });

  it("counts the environment's resources a batch does not name, and their older generations", async () => {
    // Ingest reads only the latest generation of the resources a batch names, and counts of the
    // rest: the state must come out as if every row had been read.
    const a = session({ user: 'hugo' });
    await postEvents(s, [
      a.started(),
      a.ns('ready', { uid: 'h1' }),
      a.ns('ready', { name: 'hugo-build', uid: 'b1' }),
    ]);
    // The other namespace, not named by this batch, is still there: not cleaned.
    await postEvents(s, [a.ns('missing', { uid: 'h1' })]);
    expect((await detailOf(a.namespace)).environment.state).toBe('active');
    await postEvents(s, [a.ns('missing', { name: 'hugo-build', uid: 'b1' })]);
    expect((await detailOf(a.namespace)).environment.state).toBe('cleaned');

    // Re-created many times, one generation a batch: the latest is the one that counts.
    const b = session({ user: 'hugo' });
    await postEvents(s, [b.started()]);
    for (let g = 2; g <= 6; g++) await postEvents(s, [b.ns('ready', { uid: `h${g}` })]);
    const d = await detailOf(a.namespace);
    expect(
      d.resources.filter((r) => r.namespace === a.namespace).map((r) => [r.generation, r.state]),
    ).toEqual([
      [6, 'ready'],
      [5, 'missing'],
      [4, 'missing'],
      [3, 'missing'],
      [2, 'missing'],
      [1, 'missing'],
    ]);
    expect(d.environment.state).toBe('active');

    // An older generation of the environment's own counts even when the latest is shared
    // infrastructure (role system): with nothing of its own live, the environment is cleaned.
    const c = session({ user: 'ivy' });
    await postEvents(s, [c.started(), c.ns('ready', { uid: 'i1' })]);
    await postEvents(s, [c.ns('ready', { uid: 'i2', role: 'system', cause: 'observed' })]);
    expect((await detailOf(c.namespace)).environment.state).toBe('cleaned');
    await postEvents(s, [c.ns('ready', { uid: 'i2', role: 'system', cause: 'observed' })]);
    expect((await detailOf(c.namespace)).environment.state).toBe('cleaned');
  });
  it('records adopted namespaces as adopted', async () => {
    const a = session({ user: 'gina' });
    await postEvents(s, [
      a.started(),
      a.ns('ready', { uid: 'g', cause: 'observed', detail: { adopted: true } }),
    ]);
    expect((await detailOf(a.namespace)).resources[0]?.ownership).toBe('adopted');
  });

  it('counts heartbeats as activity and records a failed session', async () => {
    const a = session({ user: 'hank', command: 'test' });
    await postEvents(s, [a.started()]);
    await postEvents(s, [a.heartbeat()]);
    let d = await detailOf(a.namespace);
    expect(d.environment.lastActivity).toMatchObject({
      type: 'sessionHeartbeat',
      command: 'test',
      user: 'hank',
    });
    await postEvents(s, [a.failed()]);
    d = await detailOf(a.namespace);
    expect(d.sessions[0]).toMatchObject({
      status: 'failed',
      error: { code: 'TEND_ACTION_FAILED', message: 'boom' },
    });
  });

  it('records a session ended by Ctrl-C as stopped, not failed, and keeps it ended', async () => {
    const a = session({ user: 'ctrl-c' });
    await postEvents(s, [a.failed('TEND_INTERRUPTED', 'interrupted by SIGINT')]);
    await postEvents(s, [a.started()]);
    expect((await detailOf(a.namespace)).sessions[0]).toMatchObject({
      status: 'stopped',
      error: { code: 'TEND_INTERRUPTED', message: 'interrupted by SIGINT' },
    });
  });

  it('keeps a session ended when its start arrives after its end', async () => {
    const a = session({ user: 'late-start' });
    const started = a.started();
    const completed = a.completed();
    await postEvents(s, [completed, started]);
    expect((await detailOf(a.namespace)).sessions[0]?.status).toBe('completed');
    const b = session({ user: 'late-start-2' });
    await postEvents(s, [b.completed()]);
    await postEvents(s, [b.started()]);
    expect((await detailOf(b.namespace)).sessions[0]?.status).toBe('completed');
  });

  it('keeps separate environments for the same name in different namespaces', async () => {
    const a = session({ user: 'ivy' });
    const b = session({ user: 'jack' });
    await postEvents(s, [a.started(), b.started()]);
    const list = await getJson<{ items: { namespace: string; name: string }[] }>(
      s,
      '/api/v1/environments?environment=dev&limit=500',
    );
    const namespaces = list.body.items.map((e) => e.namespace);
    expect(namespaces).toContain('shop-ivy');
    expect(namespaces).toContain('shop-jack');
  });
});
