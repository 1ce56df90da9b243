/**
 * The cleanup routes at their boundary: authentication, scopes (agent may call only the executor
 * routes and ingest; cluster-bound agent tokens only their clusters; project-bound tokens only
 * their project), and bad input answered with a clear 4xx while nothing stored changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenRepository } from '../../../src/server/db/repositories/tokens.js';
import type { Database } from '../../../src/server/db/schema.js';
import { countRows, dialects } from '../helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './fixture.js';

const tables: (keyof Database)[] = [
  'cleanup_jobs',
  'cleanup_executors',
  'cleanup_executor_targets',
  'cleanup_inventories',
  'cleanup_inventory_items',
  'cleanup_policies',
  'cleanup_breakers',
  'audit_log',
];

describe.each(dialects)('cleanup routes on %s', (dialect) => {
  let f: CleanupFixture;
  let bound: string;
  let envId: string;
  beforeAll(async () => {
    f = await cleanupFixture(dialect);
    const tokens = new TokenRepository(f.server.database.db);
    bound = (await tokens.create({ name: 'agent-c2', scope: 'agent', clusters: ['cluster-2'] })).token;
    envId = (await f.environment({ user: 'alice' })).id;
    await f.report('e1', [f.item('shop-alice', 'uid-alice')]);
  });
  afterAll(async () => {
    await f.close();
  });

  const counts = async () =>
    Object.fromEntries(
      await Promise.all(tables.map(async (t) => [t, await countRows(f.server.database.db, t)])),
    );

  const heartbeat = {
    executorId: 'e9',
    name: 'agent',
    kind: 'agent',
    version: '1',
    targets: [{ targetKey: target, pluginName: 'kubernetes', description: '' }],
  };

  it('every cleanup route needs a token', async () => {
    for (const [method, url] of [
      ['POST', '/api/v1/agents/heartbeat'],
      ['POST', '/api/v1/agents/inventory'],
      ['POST', '/api/v1/cleanup/jobs/claim'],
      ['POST', '/api/v1/cleanup/jobs/x/start'],
      ['POST', '/api/v1/cleanup/jobs/x/complete'],
      ['GET', '/api/v1/cleanup/plan'],
      ['GET', '/api/v1/cleanup/jobs'],
      ['GET', '/api/v1/cleanup/status'],
      ['POST', '/api/v1/cleanup/enforce'],
      ['POST', '/api/v1/cleanup/halt'],
      ['POST', '/api/v1/cleanup/resume'],
      ['POST', '/api/v1/cleanup/breakers/shop/reset'],
      ['POST', `/api/v1/environments/${envId}/cleanup`],
    ] as const) {
      const res = await f.server.app.inject({ method, url, payload: method === 'POST' ? {} : undefined });
      expect(res.statusCode, url).toBe(401);
    }
  });

  it('scopes: agent calls only the executor routes and ingest; read and ingest never the executor routes', async () => {
    const before = await counts();
    for (const token of [f.server.tokens.read, f.server.tokens.ingest]) {
      const res = await f.call('POST', '/api/v1/agents/heartbeat', heartbeat, token);
      expect(res.status).toBe(403);
      expect(res.body.error.message).toContain('needs "agent"');
    }
    for (const url of ['/api/v1/cleanup/plan', '/api/v1/cleanup/jobs', '/api/v1/environments', '/metrics']) {
      expect((await f.call('GET', url, undefined, f.server.tokens.agent)).status, url).toBe(403);
    }
    for (const url of [
      '/api/v1/cleanup/halt',
      '/api/v1/cleanup/enforce',
      `/api/v1/environments/${envId}/cleanup`,
    ]) {
      expect((await f.call('POST', url, { project: 'shop' }, f.server.tokens.read)).status, url).toBe(403);
      expect((await f.call('POST', url, { project: 'shop' }, f.server.tokens.agent)).status, url).toBe(403);
    }
    expect((await f.call('POST', '/api/v1/events', { events: [] }, f.server.tokens.agent)).status).toBe(200);
    expect(await counts()).toEqual(before);
  });

  it('an agent token bound to clusters may act only on them', async () => {
    const before = await counts();
    expect((await f.call('POST', '/api/v1/agents/heartbeat', heartbeat, bound)).status).toBe(403);
    expect(
      (
        await f.call(
          'POST',
          '/api/v1/agents/inventory',
          { executorId: 'e9', targetKey: target, pluginName: 'kubernetes', complete: true, items: [] },
          bound,
        )
      ).status,
    ).toBe(403);
    expect(
      (
        await f.call(
          'POST',
          '/api/v1/cleanup/jobs/claim',
          { executorId: 'e9', targetKeys: ['local/host-1'] },
          bound,
        )
      ).status,
    ).toBe(403);
    expect(await counts()).toEqual(before);
    const ok = {
      ...heartbeat,
      targets: [{ targetKey: 'kubernetes/cluster-2', pluginName: 'kubernetes', description: '' }],
    };
    expect((await f.call('POST', '/api/v1/agents/heartbeat', ok, bound)).status).toBe(200);
  });

  it("an agent token bound to another plugin's target may act only on it", async () => {
    const tokens = new TokenRepository(f.server.database.db);
    const dirs = (await tokens.create({ name: 'agent-dirs', scope: 'agent', targets: ['dirs/root-1'] }))
      .token;
    const served = (targetKey: string, pluginName: string) => ({
      ...heartbeat,
      executorId: 'e-dirs',
      targets: [{ targetKey, pluginName, description: '' }],
    });
    const before = await counts();
    for (const [targetKey, pluginName] of [
      ['dirs/root-2', 'dirs'],
      [target, 'kubernetes'],
      ['local/host-1', 'exec'],
    ] as const) {
      const refused = await f.call('POST', '/api/v1/agents/heartbeat', served(targetKey, pluginName), dirs);
      expect(refused.status, targetKey).toBe(403);
      expect((refused.body as { error: { message: string } }).error.message).toBe(
        `token "agent-dirs" is bound to targets dirs/root-1; it may not act on ${targetKey}`,
      );
    }
    const claim = { executorId: 'e-dirs', targetKeys: ['dirs/root-1', 'dirs/root-2'] };
    expect((await f.call('POST', '/api/v1/cleanup/jobs/claim', claim, dirs)).status).toBe(403);
    expect(await counts()).toEqual(before);
    expect(
      (await f.call('POST', '/api/v1/agents/heartbeat', served('dirs/root-1', 'dirs'), dirs)).status,
    ).toBe(200);
    const own = { executorId: 'e-dirs', targetKeys: ['dirs/root-1'] };
    expect(await f.call('POST', '/api/v1/cleanup/jobs/claim', own, dirs)).toMatchObject({
      status: 200,
      body: { jobs: [] },
    });
  });

  it('a project-bound admin token cannot flip global switches or another project', async () => {
    const other = f.server.tokens.otherProject;
    expect((await f.call('POST', '/api/v1/cleanup/halt', undefined, other)).status).toBe(403);
    expect((await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' }, other)).status).toBe(403);
    expect((await f.call('POST', `/api/v1/environments/${envId}/cleanup`, undefined, other)).status).toBe(
      404,
    );
  });

  it('bad input is a clear 400, 404 or 409 and changes nothing', async () => {
    const before = await counts();
    const agent = f.server.tokens.agent;
    const cases: [string, string, unknown, number, string?][] = [
      ['POST', '/api/v1/agents/heartbeat', {}, 400],
      ['POST', '/api/v1/agents/heartbeat', { ...heartbeat, kind: 'robot' }, 400],
      ['POST', '/api/v1/agents/heartbeat', { ...heartbeat, extra: 1 }, 400],
      [
        'POST',
        '/api/v1/agents/heartbeat',
        { ...heartbeat, targets: [{ targetKey: 'nowhere', pluginName: 'k', description: '' }] },
        400,
      ],
      [
        'POST',
        '/api/v1/agents/inventory',
        { executorId: 'e1', targetKey: target, pluginName: 'kubernetes', complete: true },
        400,
      ],
      [
        'POST',
        '/api/v1/agents/inventory',
        {
          executorId: 'e1',
          targetKey: target,
          pluginName: 'kubernetes',
          complete: true,
          items: [{ namespaceName: 'x' }],
        },
        400,
      ],
      [
        'POST',
        '/api/v1/agents/inventory',
        {
          executorId: 'e1',
          targetKey: target,
          pluginName: 'kubernetes',
          complete: true,
          items: [f.item('a', '1'), f.item('a', '2')],
        },
        400,
        'twice',
      ],
      ['POST', '/api/v1/cleanup/jobs/claim', { executorId: 'e1', targetKeys: [] }, 400],
      ['POST', '/api/v1/cleanup/jobs/claim', { executorId: 'e1', targetKeys: [target], max: 0 }, 400],
      [
        'POST',
        '/api/v1/cleanup/jobs/claim',
        { executorId: 'e1', targetKeys: [target], leaseSeconds: 1 },
        400,
      ],
      ['POST', '/api/v1/cleanup/jobs/nope/start', { executorId: 'e1' }, 404],
      ['POST', '/api/v1/cleanup/jobs/nope/start', {}, 400],
      ['POST', '/api/v1/cleanup/jobs/nope/complete', { executorId: 'e1', outcome: 'done', message: '' }, 404],
      [
        'POST',
        '/api/v1/cleanup/jobs/nope/complete',
        { executorId: 'e1', outcome: 'exploded', message: '' },
        400,
      ],
    ];
    for (const [method, url, payload, status, text] of cases) {
      const res = await f.call(method as 'POST', url, payload, agent);
      expect(res.status, `${url} ${JSON.stringify(payload)}`).toBe(status);
      expect(res.body.error.code).toMatch(/^TEND_/);
      if (text) expect(res.body.error.message).toContain(text);
    }
    const admin: [string, string, unknown, number][] = [
      ['GET', '/api/v1/cleanup/plan?within=forever', undefined, 400],
      ['GET', '/api/v1/cleanup/plan?within=99999d', undefined, 400],
      ['GET', '/api/v1/cleanup/plan?cursor=garbage', undefined, 400],
      ['GET', '/api/v1/cleanup/plan?limit=0', undefined, 400],
      ['GET', '/api/v1/cleanup/jobs?state=exploded', undefined, 400],
      ['GET', '/api/v1/cleanup/jobs?cursor=garbage', undefined, 400],
      ['POST', '/api/v1/cleanup/enforce', {}, 400],
      ['POST', '/api/v1/cleanup/enforce', { project: 'shop', what: 1 }, 400],
      ['POST', '/api/v1/cleanup/enforce', { project: 'unknown' }, 409],
      ['POST', '/api/v1/cleanup/breakers/shop/reset', undefined, 409],
      ['POST', '/api/v1/environments/nope/cleanup', undefined, 404],
      ['POST', '/api/v1/cleanup/resume', undefined, 200],
    ];
    for (const [method, url, payload, status] of admin) {
      const res = await f.call(method as 'GET', url, payload);
      expect(res.status, url).toBe(status);
    }
    expect(await counts()).toEqual(before);
  });

  it('a job held by another executor is a 409', async () => {
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
    f.advance(9 * 3_600_000);
    await f.report('e1', [f.item('shop-alice', 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
    const claimed = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'e1', targetKeys: [target] },
      f.server.tokens.agent,
    );
    const id = claimed.body.jobs[0].id as string;
    const res = await f.call(
      'POST',
      `/api/v1/cleanup/jobs/${id}/start`,
      { executorId: 'e2' },
      f.server.tokens.agent,
    );
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('TEND_CLEANUP_LEASE_LOST');
  });

  it('the plan pages by due time', async () => {
    const page = await f.call(
      'GET',
      '/api/v1/cleanup/plan?within=7d&limit=1',
      undefined,
      f.server.tokens.read,
    );
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(1);
    expect(page.body.generatedAt).not.toBeNull();
  });

  it('documents the routes in OpenAPI', async () => {
    const res = await f.server.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    const paths = Object.keys(res.json<{ paths: Record<string, unknown> }>().paths);
    for (const p of [
      '/api/v1/agents/heartbeat',
      '/api/v1/agents/inventory',
      '/api/v1/cleanup/jobs/claim',
      '/api/v1/cleanup/jobs/{id}/start',
      '/api/v1/cleanup/jobs/{id}/complete',
      '/api/v1/cleanup/plan',
      '/api/v1/cleanup/jobs',
      '/api/v1/cleanup/status',
      '/api/v1/cleanup/enforce',
      '/api/v1/cleanup/halt',
      '/api/v1/cleanup/resume',
      '/api/v1/cleanup/breakers/{project}/reset',
      '/api/v1/environments/{id}/cleanup',
    ]) {
      expect(paths).toContain(p);
    }
  });
});
