/** The request log: what each request targeted and who sent it, in-process and over /_sim/requests. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { call, ns, pod, waitFor } from './helpers.js';

let sim: KubeSim;
beforeAll(async () => {
  sim = await startKubeSim({ namespaceDeleteDelayMs: 50 });
});
afterAll(async () => {
  await sim?.stop();
});

const agent = { userAgent: 'plugin-under-test/1.0' };

describe('request log', () => {
  it('records method, path, verb, resource, target namespace, user, user agent and status of each request', async () => {
    const mark = sim.requests.latest();
    await call(sim, 'POST', '/api/v1/namespaces', ns('rl-a'), agent);
    await call(sim, 'GET', '/api/v1/namespaces/rl-a', undefined, agent);
    await call(
      sim,
      'PATCH',
      '/api/v1/namespaces/rl-a',
      { metadata: { labels: { x: '1' } } },
      { ...agent, contentType: 'application/merge-patch+json' },
    );
    await call(sim, 'POST', '/api/v1/namespaces/rl-a/configmaps', { metadata: { name: 'c' } }, agent);
    await call(sim, 'GET', '/api/v1/namespaces/rl-a/configmaps?watch=false', undefined, agent);
    await call(sim, 'GET', '/apis/apps/v1/namespaces/rl-b/deployments/missing', undefined, agent);
    await call(sim, 'GET', '/api/v1/pods', undefined, agent);
    await call(sim, 'GET', '/api/v1', undefined, agent);
    await call(sim, 'GET', '/api/v1/namespaces/rl-c/configmaps', undefined, { ...agent, token: 'wrong' });
    await call(sim, 'DELETE', '/api/v1/namespaces/rl-a', undefined, agent);

    const got = sim.requests.list({ since: mark }).map(({ seq: _seq, time: _time, ...rest }) => rest);
    expect(got).toEqual([
      {
        method: 'POST',
        path: '/api/v1/namespaces',
        verb: 'create',
        resource: 'namespaces',
        namespace: 'rl-a',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 201,
      },
      {
        method: 'GET',
        path: '/api/v1/namespaces/rl-a',
        verb: 'get',
        resource: 'namespaces',
        namespace: 'rl-a',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 200,
      },
      {
        method: 'PATCH',
        path: '/api/v1/namespaces/rl-a',
        verb: 'patch',
        resource: 'namespaces',
        namespace: 'rl-a',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 200,
      },
      {
        method: 'POST',
        path: '/api/v1/namespaces/rl-a/configmaps',
        verb: 'create',
        resource: 'configmaps',
        namespace: 'rl-a',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 201,
      },
      {
        method: 'GET',
        path: '/api/v1/namespaces/rl-a/configmaps',
        verb: 'list',
        resource: 'configmaps',
        namespace: 'rl-a',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 200,
      },
      {
        method: 'GET',
        path: '/apis/apps/v1/namespaces/rl-b/deployments/missing',
        verb: 'get',
        resource: 'deployments.apps',
        namespace: 'rl-b',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 404,
      },
      {
        method: 'GET',
        path: '/api/v1/pods',
        verb: 'list',
        resource: 'pods',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 200,
      },
      {
        method: 'GET',
        path: '/api/v1',
        verb: 'get',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: 200,
      },
      {
        method: 'GET',
        path: '/api/v1/namespaces/rl-c/configmaps',
        verb: 'list',
        resource: 'configmaps',
        namespace: 'rl-c',
        userAgent: 'plugin-under-test/1.0',
        status: 401,
      },
      {
        method: 'DELETE',
        path: '/api/v1/namespaces/rl-a',
        verb: 'delete',
        resource: 'namespaces',
        namespace: 'rl-a',
        user: 'kube-sim-admin',
        userAgent: 'plugin-under-test/1.0',
        status: expect.any(Number),
      },
    ]);
    // Refused and failed requests count as touching: the harness catches attempts too.
    expect(sim.requests.namespacesTouched({ since: mark })).toEqual(['rl-a', 'rl-b', 'rl-c']);
  });

  it("records a DELETE's preconditions as its body sent them, whether they held or not", async () => {
    const created = await call(sim, 'POST', '/api/v1/namespaces', ns('rl-pre'));
    const { uid, resourceVersion } = created.json.metadata as { uid: string; resourceVersion: string };
    const mark = sim.requests.latest();
    const stale = await call(sim, 'DELETE', '/api/v1/namespaces/rl-pre', {
      preconditions: { uid, resourceVersion: '1' },
    });
    expect(stale.status).toBe(409);
    await call(sim, 'DELETE', '/api/v1/namespaces/rl-pre', { preconditions: { uid, resourceVersion } });
    await call(sim, 'DELETE', '/api/v1/namespaces/rl-none');
    expect(sim.requests.list({ since: mark }).map((r) => [r.namespace, r.status, r.preconditions])).toEqual([
      ['rl-pre', 409, { uid, resourceVersion: '1' }],
      ['rl-pre', 202, { uid, resourceVersion }],
      ['rl-none', 404, undefined],
    ]);
  });

  it('names a namespace created from generateName, and one finalized or written through /status', async () => {
    const mark = sim.requests.latest();
    const created = await call(sim, 'POST', '/api/v1/namespaces', {
      metadata: { generateName: 'rl-gen-' },
    });
    expect(created.status).toBe(201);
    const name = created.json.metadata.name as string;
    await call(sim, 'PUT', `/api/v1/namespaces/${name}/finalize`, {
      metadata: { name },
      spec: { finalizers: [] },
    });
    await call(sim, 'PUT', `/api/v1/namespaces/${name}/status`, { metadata: { name }, status: {} });
    expect(sim.requests.list({ since: mark }).map((r) => [r.verb, r.resource, r.namespace])).toEqual([
      ['create', 'namespaces', name],
      ['update', 'namespaces/finalize', name],
      ['update', 'namespaces/status', name],
    ]);
  });

  it('records watches as watch (however the flag is spelled) and exec upgrades as create on pods/exec', async () => {
    await call(sim, 'POST', '/api/v1/namespaces', ns('rl-exec'));
    await call(sim, 'POST', '/api/v1/namespaces/rl-exec/pods', pod('shell'));
    await waitFor(
      async () =>
        (await call(sim, 'GET', '/api/v1/namespaces/rl-exec/pods/shell')).json.status.phase === 'Running',
      'pod Running',
    );
    const mark = sim.requests.latest();
    const watch = await call(sim, 'GET', '/api/v1/namespaces/rl-exec/configmaps?watch=True&timeoutSeconds=1');
    expect(watch.text).toContain('"type":"ADDED"');
    const output = await new Promise<string>((resolve, reject) => {
      const url = `${sim.url.replace('https', 'wss')}/api/v1/namespaces/rl-exec/pods/shell/exec?command=echo&command=hi&stdout=true`;
      const ws = new WebSocket(url, ['v4.channel.k8s.io'], {
        ca: sim.caPem,
        headers: { Authorization: `Bearer ${sim.token}`, 'User-Agent': 'exec-client' },
      });
      let out = '';
      ws.on('message', (d: Buffer) => {
        if (d[0] === 1) out += d.subarray(1).toString();
      });
      ws.on('close', () => resolve(out));
      ws.on('error', reject);
    });
    expect(output).toBe('hi\n');
    expect(
      sim.requests.list({ since: mark }).map((r) => [r.verb, r.resource, r.namespace, r.status]),
    ).toEqual([
      ['watch', 'configmaps', 'rl-exec', 200],
      ['create', 'pods/exec', 'rl-exec', 101],
    ]);
    expect(sim.requests.list({ since: mark })[1]!.userAgent).toBe('exec-client');
  });

  it('keeps only the newest requests, counting what fell out; clear() forgets all but sequence numbers go on', async () => {
    const small = await startKubeSim({ requestLogSize: 3 });
    try {
      for (const n of ['a', 'b', 'c', 'd', 'e']) await call(small, 'GET', `/api/v1/namespaces/${n}`);
      expect(small.requests.list().map((r) => [r.seq, r.namespace])).toEqual([
        [3, 'c'],
        [4, 'd'],
        [5, 'e'],
      ]);
      expect(small.requests.dropped()).toBe(2);
      expect(small.requests.namespacesTouched()).toEqual(['c', 'd', 'e']);
      expect(small.requests.list({ since: 4 }).map((r) => r.namespace)).toEqual(['e']);
      small.requests.clear();
      expect(small.requests.list()).toEqual([]);
      expect(small.requests.dropped()).toBe(0);
      await call(small, 'GET', '/api/v1/namespaces/f');
      expect(small.requests.list().map((r) => [r.seq, r.namespace])).toEqual([[6, 'f']]);
    } finally {
      await small.stop();
    }
    await expect(startKubeSim({ requestLogSize: 0 })).rejects.toThrow(/positive integer/);
  });

  it('serves the log at /_sim/requests with the bearer token, without recording itself', async () => {
    expect((await call(sim, 'GET', '/_sim/requests', undefined, { token: null })).status).toBe(401);
    expect((await call(sim, 'DELETE', '/_sim/requests', undefined, { token: 'wrong' })).status).toBe(401);
    const mark = sim.requests.latest();
    await call(sim, 'GET', '/api/v1/namespaces/rl-http/configmaps', undefined, agent);
    const all = await call(sim, 'GET', `/_sim/requests?since=${mark}`);
    expect(all.status).toBe(200);
    expect(all.json.latest).toBe(mark + 1);
    expect(all.json.requests).toHaveLength(1);
    expect(all.json.requests[0]).toMatchObject({
      seq: mark + 1,
      method: 'GET',
      verb: 'list',
      namespace: 'rl-http',
      userAgent: 'plugin-under-test/1.0',
    });
    const touched = await call(sim, 'GET', `/_sim/requests/namespaces?since=${mark}`);
    expect(touched.json).toEqual({ latest: mark + 1, namespaces: ['rl-http'] });
    for (const bad of ['-1', 'x', '1.5', '99999999999999999999']) {
      const r = await call(sim, 'GET', `/_sim/requests?since=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.json.reason).toBe('BadRequest');
    }
    expect((await call(sim, 'POST', '/_sim/requests', {})).status).toBe(405);
    expect((await call(sim, 'GET', '/_sim/requests/nope')).status).toBe(404);
    expect((await call(sim, 'DELETE', '/_sim/requests')).json.requests).toEqual([]);
    expect(sim.requests.list()).toEqual([]);
    expect((await call(sim, 'GET', '/_sim/requests')).json.requests).toEqual([]);
  });
});
