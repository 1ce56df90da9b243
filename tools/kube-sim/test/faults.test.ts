/** Every fault type, through the in-process API and the control endpoint. */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { call, ns } from './helpers.js';

let sim: KubeSim;
beforeAll(async () => {
  sim = await startKubeSim();
  await call(sim, 'POST', '/api/v1/namespaces', ns('f'));
  for (let i = 0; i < 6; i++) {
    await call(sim, 'POST', '/api/v1/namespaces/f/configmaps', {
      metadata: { name: `c${i}`, labels: { set: 'x' } },
    });
  }
});
afterEach(() => sim.faults.clear());
afterAll(async () => {
  await sim?.stop();
});

const LIST = '/api/v1/namespaces/f/configmaps?labelSelector=set%3Dx';

describe('fault injection', () => {
  it('latency delays matching requests only', async () => {
    sim.faults.add({ type: 'latency', ms: 300, verb: 'get', resource: 'configmaps' });
    const t = Date.now();
    expect((await call(sim, 'GET', '/api/v1/namespaces/f/configmaps/c0')).status).toBe(200);
    expect(Date.now() - t).toBeGreaterThanOrEqual(290);
    const list = await call(sim, 'GET', LIST);
    expect(list.status).toBe(200);
  });

  it('error 500 fires a fixed number of times, then requests succeed', async () => {
    const id = sim.faults.add({ type: 'error', status: 500, verb: 'get', resource: 'configmaps', times: 2 });
    const codes = [];
    for (let i = 0; i < 3; i++)
      codes.push((await call(sim, 'GET', '/api/v1/namespaces/f/configmaps/c1')).status);
    expect(codes).toEqual([500, 500, 200]);
    expect(sim.faults.fired(id)).toBe(2);
    const body = (await call(sim, 'GET', '/api/v1/namespaces/f/configmaps/c1')).json;
    expect(body.kind).toBe('ConfigMap');
  });

  it('error 429 carries Retry-After and a TooManyRequests Status; client-node sees the code', async () => {
    sim.faults.add({
      type: 'error',
      status: 429,
      retryAfterSeconds: 3,
      resource: 'namespaces',
      verb: 'get',
      times: 2,
    });
    const r = await call(sim, 'GET', '/api/v1/namespaces/f');
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('3');
    expect(r.json).toMatchObject({ reason: 'TooManyRequests', code: 429, details: { retryAfterSeconds: 3 } });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfigYaml);
    const core = kc.makeApiClient(CoreV1Api);
    await expect(core.readNamespace({ name: 'f' })).rejects.toMatchObject({ code: 429 });
    await expect(core.readNamespace({ name: 'f' })).resolves.toMatchObject({ metadata: { name: 'f' } });
  });

  it('rate 0 never fires; rate 1 always does', async () => {
    sim.faults.add({ type: 'error', rate: 0, resource: 'configmaps' });
    expect((await call(sim, 'GET', '/api/v1/namespaces/f/configmaps/c0')).status).toBe(200);
    sim.faults.clear();
    sim.faults.add({ type: 'error', rate: 1, resource: 'configmaps', verb: 'delete' });
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/f/configmaps/c0')).status).toBe(500);
    expect(sim.store.get('configmaps', 'f', 'c0')).toBeDefined();
  });

  it('drop destroys the connection without an answer', async () => {
    sim.faults.add({ type: 'drop', verb: 'create', resource: 'configmaps', times: 1 });
    await expect(
      call(sim, 'POST', '/api/v1/namespaces/f/configmaps', { metadata: { name: 'dropped' } }),
    ).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(sim.store.get('configmaps', 'f', 'dropped')).toBeUndefined();
    expect(
      (await call(sim, 'POST', '/api/v1/namespaces/f/configmaps', { metadata: { name: 'dropped' } })).status,
    ).toBe(201);
  });

  it('list-fail fails lists but not gets', async () => {
    sim.faults.add({ type: 'list-fail', resource: 'configmaps', status: 503 });
    expect((await call(sim, 'GET', LIST)).status).toBe(503);
    expect((await call(sim, 'GET', '/api/v1/namespaces/f/configmaps/c2')).status).toBe(200);
  });

  it('list-truncate drops items and the continue token', async () => {
    sim.faults.add({ type: 'list-truncate', resource: 'configmaps', keep: 2, times: 1 });
    const r = await call(sim, 'GET', `${LIST}&limit=4`);
    expect(r.status).toBe(200);
    expect(r.json.items).toHaveLength(2);
    expect(r.json.metadata.continue).toBeUndefined();
    expect((await call(sim, 'GET', LIST)).json.items.length).toBeGreaterThanOrEqual(6);
  });

  it('continue-expire answers 410 Expired when a list is continued', async () => {
    sim.faults.add({ type: 'continue-expire', resource: 'configmaps' });
    const first = await call(sim, 'GET', `${LIST}&limit=2`);
    expect(first.status).toBe(200);
    const token = first.json.metadata.continue as string;
    expect(token).toBeTruthy();
    const next = await call(sim, 'GET', `${LIST}&limit=2&continue=${encodeURIComponent(token)}`);
    expect(next.status).toBe(410);
    expect(next.json.reason).toBe('Expired');
  });

  it('rules can be limited to a namespace and to subresources', async () => {
    await call(sim, 'POST', '/api/v1/namespaces', ns('g'));
    sim.faults.add({ type: 'error', namespace: 'g', resource: 'configmaps' });
    expect(
      (await call(sim, 'POST', '/api/v1/namespaces/g/configmaps', { metadata: { name: 'x' } })).status,
    ).toBe(500);
    expect(
      (await call(sim, 'POST', '/api/v1/namespaces/f/configmaps', { metadata: { name: 'x' } })).status,
    ).toBe(201);
    sim.faults.clear();
    // A namespace's own requests target it, as in the request log.
    await call(sim, 'POST', '/api/v1/namespaces', ns('h'));
    sim.faults.add({ type: 'error', status: 403, namespace: 'g', resource: 'namespaces' });
    expect((await call(sim, 'GET', '/api/v1/namespaces/g')).status).toBe(403);
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/g')).status).toBe(403);
    expect((await call(sim, 'GET', '/api/v1/namespaces/h')).status).toBe(200);
    expect((await call(sim, 'GET', '/api/v1/namespaces')).status).toBe(200);
    sim.faults.clear();
    sim.faults.add({ type: 'error', resource: 'pods/log' });
    expect((await call(sim, 'GET', '/api/v1/namespaces/f/pods')).status).toBe(200);
  });

  it('is controlled over HTTP at /_sim/faults with the token', async () => {
    expect(
      (
        await call(
          sim,
          'POST',
          '/_sim/faults',
          { type: 'error', status: 500, resource: 'secrets' },
          { token: null },
        )
      ).status,
    ).toBe(401);
    const added = await call(sim, 'POST', '/_sim/faults', [
      { type: 'error', status: 500, resource: 'secrets', verb: 'list', times: 1 },
      { type: 'latency', ms: 1, resource: 'secrets' },
    ]);
    expect(added.status).toBe(201);
    expect(added.json.ids).toHaveLength(2);
    const listed = await call(sim, 'GET', '/_sim/faults');
    expect(listed.json.faults).toHaveLength(2);
    expect((await call(sim, 'GET', '/api/v1/namespaces/f/secrets')).status).toBe(500);
    expect((await call(sim, 'GET', '/_sim/faults')).json.faults[0].fired).toBe(1);
    expect((await call(sim, 'DELETE', `/_sim/faults/${added.json.ids[1]}`)).json.faults).toHaveLength(1);
    expect((await call(sim, 'DELETE', '/_sim/faults')).json.faults).toHaveLength(0);
    expect((await call(sim, 'POST', '/_sim/faults', { type: 'meteor' })).status).toBe(400);
  });
});
