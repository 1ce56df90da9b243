import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { removeProjects, waitFor } from '../../helpers/project.js';
import {
  execute,
  kubectlJson,
  namespaceEvents,
  projectYaml,
  sessionEvents,
  startSim,
  type SimHandle,
} from './helpers.js';
import { makeProject } from '../../helpers/project.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim({
    podRules: [{ image: /broken-image/, behaviour: { imagePullError: 'ErrImagePull' } }],
  });
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

function podProject(namespace: string, spec: string, kind = 'Test'): string {
  return makeProject({
    'tend.yml': projectYaml({ registry: h.sim.registryHost, namespace }),
    'pod.tend.yml': `kind: ${kind}\ntype: kubernetes-pod\nname: check\nspec: ${spec}\n`,
  });
}

async function podsIn(namespace: string): Promise<string[]> {
  const list = await kubectlJson<{ items: { metadata: { name: string } }[] }>(
    h.kubeconfig,
    '-n',
    namespace,
    'get',
    'pods',
  );
  return list.items.map((p) => p.metadata.name);
}

describe('kubernetes-pod tests and runs', () => {
  it('runs the pod with image, command and env; its log lines become log events; the pod is removed', async () => {
    const root = podProject(
      'pod-ok',
      '{ image: alpine, command: [sh, -c, "echo hello from the pod && echo bye"], env: { MODE: ci } }',
    );
    const result = await execute('test', root);
    expect(result.exitCode).toBe(0);
    expect(result.data.actions[0]!.state).toBe('ready');
    const events = sessionEvents(root, result.data.sessionId);
    const lines = events
      .filter((e) => e.type === 'log' && (e.payload as { handler?: string }).handler === 'run')
      .map((e) => (e.payload as { message: string }).message);
    expect(lines).toEqual(['hello from the pod', 'bye']);
    expect(await podsIn('pod-ok')).toEqual([]);
    expect(namespaceEvents(events).some((e) => e.namespaceName === 'pod-ok' && e.role === 'app')).toBe(true);
  });

  it('a pod with neither image, resource nor podSpec is a configuration error before anything runs', async () => {
    const root = podProject('pod-none', '{ command: [echo, hello] }');
    await expect(execute('test', root)).rejects.toMatchObject({
      code: 'TEND_CONFIG_INVALID',
      message: 'spec needs one of the keys "image", "resource", "podSpec"',
      location: { file: 'pod.tend.yml', line: 4 },
    });
    expect(h.sim.store.get('namespaces', '', 'pod-none')).toBeUndefined();
  });

  it('passes the spec to the pod (image, command, args, env)', async () => {
    const root = podProject(
      'pod-spec',
      '{ image: busybox, command: [sh, -c], args: ["sleep 30"], env: { MODE: ci }, timeout: 20 }',
      'Run',
    );
    const running = execute('run', root);
    const pod = await waitFor(() => h.sim.store.list('pods', 'pod-spec')[0], 'the pod to exist');
    const container = pod.spec.containers[0];
    expect(container).toMatchObject({ image: 'busybox', command: ['sh', '-c'], args: ['sleep 30'] });
    expect(container.env).toEqual(
      expect.arrayContaining([
        { name: 'MODE', value: 'ci' },
        { name: 'TEND_ACTION', value: 'run.check' },
      ]),
    );
    expect(pod.spec.restartPolicy).toBe('Never');
    process.emit('SIGINT', 'SIGINT');
    expect((await running).data.actions[0]!.error?.code).toBe('TEND_INTERRUPTED');
  });

  it('a non-zero exit code fails the test with the code and the last lines', async () => {
    const root = podProject(
      'pod-fail',
      '{ image: alpine, command: [sh, -c, "echo assertion failed && exit 3"] }',
    );
    const result = await execute('test', root);
    expect(result.exitCode).toBe(1);
    const error = result.data.actions[0]!.error!;
    expect(error.message).toMatch(/test\.check exited with code 3/);
    expect(await podsIn('pod-fail')).toEqual([]);
  });

  it('caches a passed result per version: the same version is not run again', async () => {
    const root = podProject('pod-cache', '{ image: alpine, command: [sh, -c, "echo once"] }');
    expect((await execute('test', root)).data.actions[0]!.state).toBe('ready');
    const again = await execute('test', root);
    expect(again.data.actions[0]!.state).toBe('cached');
    expect(h.sim.store.list('pods', 'pod-cache')).toEqual([]);
  });

  it('times out, naming the pod, and removes it', async () => {
    const root = podProject('pod-timeout', '{ image: alpine, command: [sh, -c, "sleep 60"], timeout: 0.5 }');
    const result = await execute('test', root);
    const error = result.data.actions[0]!.error!;
    expect(error.code).toBe('TEND_K8S_TIMEOUT');
    expect(error.message).toMatch(
      /test pod for test\.check timed out after 500 ms; pod test-check-[0-9a-f]+ removed/,
    );
    expect(await podsIn('pod-timeout')).toEqual([]);
  });

  it('an image that cannot be pulled is a clear error; the namespace is still recorded', async () => {
    const root = podProject(
      'pod-image',
      '{ image: registry.example/broken-image:1, command: [sh, -c, "true"] }',
    );
    const result = await execute('test', root);
    const error = result.data.actions[0]!.error!;
    expect(error.code).toBe('TEND_K8S_POD_FAILED');
    expect(error.message).toMatch(
      /cannot start: container main \(image registry\.example\/broken-image:1\): ErrImagePull/,
    );
    expect(await podsIn('pod-image')).toEqual([]);
    const events = namespaceEvents(sessionEvents(root, result.data.sessionId));
    expect(events.some((e) => e.namespaceName === 'pod-image' && e.role === 'app' && e.namespaceUid)).toBe(
      true,
    );
  });

  it('Ctrl-C aborts a request in flight: the command does not wait for the API to answer', async () => {
    const root = podProject('pod-inflight', '{ image: alpine, command: [sh, -c, "true"] }', 'Run');
    // Creating the pod takes two minutes (longer than the test may run): only an abort ends it.
    const slow = h.sim.faults.add({ type: 'latency', ms: 120_000, verb: 'create', resource: 'pods' });
    try {
      const running = execute('run', root);
      await waitFor(() => h.sim.faults.fired(slow) > 0, 'the pod creation to be in flight');
      process.emit('SIGINT', 'SIGINT');
      const result = await running;
      expect(result.exitCode).toBe(130);
      // Cut off by Ctrl-C, not failed by the cluster.
      expect(result.data.actions[0]).toMatchObject({ state: 'aborted', error: { code: 'TEND_INTERRUPTED' } });
    } finally {
      h.sim.faults.remove(slow);
    }
  });

  it('Ctrl-C stops the pod and removes it', async () => {
    const root = podProject('pod-abort', '{ image: alpine, command: [sh, -c, "sleep 60"] }', 'Run');
    const running = execute('run', root);
    await waitFor(
      () => h.sim.store.list('pods', 'pod-abort')[0]?.status?.phase === 'Running',
      'the pod to run',
    );
    process.emit('SIGINT', 'SIGINT');
    const result = await running;
    expect(result.exitCode).toBe(130);
    expect(result.data.actions[0]).toMatchObject({ state: 'aborted', error: { code: 'TEND_INTERRUPTED' } });
    expect(h.sim.store.list('pods', 'pod-abort')).toEqual([]);
  });
});
