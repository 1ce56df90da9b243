import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { removeProjects } from '../../helpers/project.js';
import {
  allEvents,
  execute,
  namespaceEvents,
  sessionEvents,
  shopProject,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
afterAll(async () => h?.stop());
afterEach(() => {
  h.sim.faults.clear();
  removeProjects();
});

function recorded(root: string, sessionId: string, namespace: string): boolean {
  return namespaceEvents(sessionEvents(root, sessionId)).some(
    (e) => e.namespaceName === namespace && e.role === 'app',
  );
}

describe('under fault injection, idempotent calls are retried', () => {
  it('429 with Retry-After on pod creation: waits and retries, the build succeeds', async () => {
    const id = h.sim.faults.add({
      type: 'error',
      status: 429,
      retryAfterSeconds: 1,
      verb: 'create',
      resource: 'pods',
      times: 2,
    });
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'fault-429' });
    const started = Date.now();
    const result = await execute('build', root);
    expect(result.exitCode).toBe(0);
    expect(h.sim.faults.fired(id)).toBe(2);
    // Retry-After was honoured: two waits of about a second each.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(recorded(root, result.data.sessionId, 'fault-429')).toBe(true);
  });

  it('500s on reads and on server-side apply: the deploy succeeds', async () => {
    const get = h.sim.faults.add({
      type: 'error',
      status: 500,
      verb: 'get',
      resource: 'deployments',
      times: 3,
    });
    const patch = h.sim.faults.add({
      type: 'error',
      status: 503,
      verb: 'patch',
      resource: 'deployments',
      times: 2,
    });
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'fault-500' });
    const result = await execute('deploy', root);
    expect(result.exitCode).toBe(0);
    expect(h.sim.faults.fired(get)).toBe(3);
    expect(h.sim.faults.fired(patch)).toBe(2);
    expect(recorded(root, result.data.sessionId, 'fault-500')).toBe(true);
  });

  it('dropped connections on namespace reads, pod reads and exec: the build succeeds', async () => {
    const ns = h.sim.faults.add({ type: 'drop', verb: 'get', resource: 'namespaces', times: 2 });
    const pods = h.sim.faults.add({ type: 'drop', verb: 'get', resource: 'pods', times: 2 });
    const exec = h.sim.faults.add({ type: 'drop', resource: 'pods/exec', times: 1 });
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'fault-drop' });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(0);
    expect([h.sim.faults.fired(ns), h.sim.faults.fired(pods), h.sim.faults.fired(exec)]).toEqual([2, 2, 1]);
    expect(recorded(root, result.data.sessionId, 'fault-drop')).toBe(true);
  });

  it('an API that keeps failing is a clear error after bounded retries; the namespace is still recorded', async () => {
    h.sim.faults.add({ type: 'error', status: 500, verb: 'patch', resource: 'deployments' });
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'fault-persistent',
      providerExtra: '    retries: 2\n',
    });
    const result = await execute('deploy', root);
    expect(result.exitCode).toBe(1);
    const deploy = result.data.actions.find((a) => a.ref === 'deploy.api')!;
    expect(deploy.error?.code).toBe('TEND_K8S_API');
    expect(deploy.error?.message).toMatch(/could not apply Deployment api in fault-persistent: /);
    expect(recorded(root, result.data.sessionId, 'fault-persistent')).toBe(true);
  });

  it.each([500, 403])(
    'a namespace whose first read fails (%i) is still reported, as ready and unverified',
    async (status) => {
      const namespace = `fault-unread-${status}`;
      h.sim.faults.add({ type: 'error', status, verb: 'get', resource: 'namespaces', namespace });
      const root = shopProject({
        registry: h.sim.registryHost,
        namespace,
        providerExtra: '    retries: 1\n',
      });
      // Preparing the environment fails (500), or the build does (403: work inside may be allowed).
      const outcome = await execute('build', root).then(
        (r) => r.exitCode,
        (e: Error) => e.message,
      );
      expect(outcome).not.toBe(0);
      const reported = namespaceEvents(allEvents(root)).filter((e) => e.namespaceName === namespace);
      expect(reported[0]).toMatchObject({
        state: 'ready',
        role: 'app',
        cause: 'observed',
        detail: { unverified: expect.stringMatching(new RegExp(`read namespace ${namespace}`)) },
      });
      expect(reported.some((e) => e.state === 'missing')).toBe(false);
    },
  );

  it('a pod creation that keeps being refused is not retried forever, and no pod is left', async () => {
    h.sim.faults.add({ type: 'error', status: 500, verb: 'create', resource: 'pods' });
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'fault-create',
      providerExtra: '    retries: 1\n',
    });
    const result = await execute('build', root);
    expect(result.data.actions[0]!.error?.code).toBe('TEND_K8S_API');
    expect(h.sim.store.list('pods', 'fault-create')).toEqual([]);
    expect(recorded(root, result.data.sessionId, 'fault-create')).toBe(true);
  });
});

describe('connection problems are clear errors', () => {
  it('a missing kubeconfig context', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'conn-context' });
    const { readFileSync, writeFileSync } = await import('node:fs');
    writeFileSync(
      `${root}/tend.yml`,
      readFileSync(`${root}/tend.yml`, 'utf8').replace('context: kube-sim', 'context: nope'),
    );
    await expect(execute('build', root)).rejects.toMatchObject({
      code: 'TEND_K8S_CONTEXT',
      message: expect.stringMatching(/context "nope" not found .*available: kube-sim/),
    });
  });

  it('rejected credentials (expired token)', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const { resetConnections } = await import('../../../src/plugins/kubernetes/client/index.js');
    const original = readFileSync(h.kubeconfig, 'utf8');
    writeFileSync(h.kubeconfig, original.replace(/token: .*/, 'token: expired'));
    resetConnections();
    try {
      const root = shopProject({ registry: h.sim.registryHost, namespace: 'conn-token' });
      await expect(execute('build', root)).rejects.toMatchObject({
        code: 'TEND_K8S_UNAUTHORIZED',
        message: expect.stringMatching(/rejected the credentials/),
      });
    } finally {
      writeFileSync(h.kubeconfig, original);
      resetConnections();
    }
  });

  it('an unreachable cluster', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const { resetConnections } = await import('../../../src/plugins/kubernetes/client/index.js');
    const original = readFileSync(h.kubeconfig, 'utf8');
    writeFileSync(h.kubeconfig, original.replace(/server: .*/, 'server: https://127.0.0.1:9'));
    resetConnections();
    try {
      const root = shopProject({
        registry: h.sim.registryHost,
        namespace: 'conn-down',
        providerExtra: '    retries: 1\n',
      });
      await expect(execute('build', root)).rejects.toMatchObject({
        code: 'TEND_K8S_UNREACHABLE',
        message: expect.stringMatching(/cannot reach cluster https:\/\/127\.0\.0\.1:9/),
      });
    } finally {
      writeFileSync(h.kubeconfig, original);
      resetConnections();
    }
  });
});
