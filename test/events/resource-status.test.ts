/**
 * `resourceStatus`, the status report in the words of a plugin whose environments are not
 * namespaces, is recorded exactly as `namespaceStatus` is: coalesced alike on the bus, the same
 * resource row on the server, refused alike when it mixes the two vocabularies.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionBus } from '../../src/events/bus.js';
import type { TendEvent } from '../../src/events/catalog.js';
import { formatEvent } from '../../src/commands/events.js';
import { createTestServer, dialects, newId, postEvents, type TestServer } from '../server/helpers.js';

const target = { kind: 'plugin', targetKind: 'buckets', id: 'store-1', label: 'the store' } as const;

function report(state: 'ready' | 'missing', cause: 'created' | 'observed' | 'deleted', uid = 'uid-1') {
  return {
    pluginName: 'buckets',
    providerName: 'buckets',
    resourceName: 'shop-alice',
    resourceUid: uid,
    state,
    role: 'app' as const,
    cause,
    target,
    project: 'shop',
    environment: 'dev',
  };
}

describe('resourceStatus on the bus', () => {
  it('is coalesced like namespaceStatus: a repeat of the latest goes, a change of state passes', () => {
    const bus = new SessionBus();
    const seen: TendEvent[] = [];
    bus.on('*', (e) => seen.push(e));
    expect(bus.emit('resourceStatus', report('ready', 'created'))).toBeDefined();
    expect(bus.emit('resourceStatus', report('ready', 'created'))).toBeUndefined();
    expect(bus.emit('resourceStatus', report('missing', 'deleted'))).toBeDefined();
    expect(bus.emit('resourceStatus', report('ready', 'created', 'uid-2'))).toBeDefined();
    expect(seen.map((e) => e.type)).toEqual(['resourceStatus', 'resourceStatus', 'resourceStatus']);
    expect(formatEvent(seen[0]!)).toMatch(/resourceStatus\s+shop-alice ready \(created, app\) by buckets/);
  });
});

describe.each(dialects)('resourceStatus on the server (%s)', (dialect) => {
  let server: TestServer;
  beforeEach(async () => {
    server = await createTestServer(dialect);
  });
  afterEach(() => server.close());

  function session(type: 'resourceStatus' | 'namespaceStatus', payload: Record<string, unknown>) {
    const sessionId = newId();
    const at = new Date().toISOString();
    const base = (t: string, p: unknown) => ({ id: newId(), type: t, sessionId, timestamp: at, payload: p });
    return [
      base('sessionStarted', {
        command: 'deploy',
        args: [],
        project: 'shop',
        environment: 'dev',
        namespace: 'shop-alice',
        user: 'alice',
        hostId: 'host-1',
        cliVersion: '0.1.0',
      }),
      base(type, payload),
    ];
  }

  async function resources() {
    return server.database.db
      .selectFrom('resources')
      .select(['plugin', 'namespace_name', 'namespace_uid', 'state', 'ownership', 'target_key'])
      .execute();
  }

  it('records the same resource row as the namespaceStatus it stands for', async () => {
    const created = await postEvents(server, session('resourceStatus', report('ready', 'created')));
    expect(created.statusCode, created.body).toBe(200);
    const fromResource = await resources();
    expect(fromResource).toEqual([
      {
        plugin: 'buckets',
        namespace_name: 'shop-alice',
        namespace_uid: 'uid-1',
        state: 'ready',
        ownership: 'owned',
        target_key: 'buckets/store-1',
      },
    ]);
    // The same report in the seed's words changes nothing: it is the same record.
    const { resourceName, resourceUid, ...rest } = report('ready', 'observed');
    const again = await postEvents(
      server,
      session('namespaceStatus', { ...rest, namespaceName: resourceName, namespaceUid: resourceUid }),
    );
    expect(again.statusCode, again.body).toBe(200);
    expect(await resources()).toEqual(fromResource);
    // And its deletion, reported as a resource, is the row's.
    await postEvents(server, session('resourceStatus', report('missing', 'deleted')));
    expect((await resources())[0]).toMatchObject({ namespace_name: 'shop-alice', state: 'missing' });
  });

  it.each([
    ['a NUL in its name', { resourceName: 'shop\u0000alice' }],
    ['a lone surrogate in its name', { resourceName: 'shop-\ud800' }],
    ['a name of 254 characters', { resourceName: 'a'.repeat(254) }],
    ['a uid that is a number', { resourceUid: 1e308 }],
    ['a detail 10,000 levels deep', { detail: { deep: 'DEEP' } }],
  ])('refuses a resourceStatus with %s (400), storing nothing of the batch', async (_what, change) => {
    // Sent as text: the 10,000 levels are spliced in where no serializer of the test's walks them.
    const body = JSON.stringify({
      events: session('resourceStatus', { ...report('ready', 'created'), ...change }),
    }).replace('"DEEP"', '['.repeat(10_000) + ']'.repeat(10_000));
    const response = await server.app.inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: { ...server.auth(server.tokens.ingest), 'content-type': 'application/json' },
      payload: body,
    });
    expect(response.statusCode).toBe(400);
    expect(await resources()).toEqual([]);
  });

  it('refuses a resourceStatus in the namespace vocabulary (400), storing nothing of the batch', async () => {
    const mixed = { ...report('ready', 'created'), namespaceName: 'shop-alice' };
    const response = await postEvents(server, session('resourceStatus', mixed));
    expect(response.statusCode).toBe(400);
    expect(response.body).toMatch(/namespaceName/);
    expect(await resources()).toEqual([]);
  });
});
