/**
 * What the cleanup inventory says namespaces' pods request: Kubernetes quantities, a pod as the
 * scheduler counts it, and the kubernetes plugin's inventory against kube-sim through the real
 * client — finished pods left out, other namespaces' pods ignored, a pod list that fails leaving
 * requests out without making the inventory incomplete. And kube-sim refusing quantities a real
 * API server refuses, through real kubectl.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubernetesPlugin } from '../../../src/plugins/kubernetes/index.js';
import { parseQuantity, podRequests } from '../../../src/plugins/kubernetes/client/requests.js';
import type { CleanupTarget } from '../../../src/plugin/types.js';
import { callContext, clusterSettings, seedNamespace } from '../../cleanup/helpers.js';
import { waitFor } from '../../helpers/project.js';
import { kubectl, startSim, type SimHandle } from './helpers.js';

describe('parseQuantity', () => {
  it.each([
    ['250m', 0.25],
    ['0.5', 0.5],
    ['2', 2],
    ['1e3', 1000],
    ['1.5E-3', 0.0015],
    ['512Mi', 512 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['1G', 1e9],
    ['100k', 100_000],
    ['.5', 0.5],
  ])('%s is %d', (text, value) => {
    expect(parseQuantity(text)).toBeCloseTo(value, 9);
  });
  it.each(['', 'abc', '1Xi', '-1', '1 Gi', 'Infinity', '1e400', '--1'])('"%s" is not one', (text) => {
    expect(parseQuantity(text)).toBeUndefined();
  });
});

describe('podRequests', () => {
  it('adds up the containers, or takes the largest init container when larger, plus the overhead', () => {
    const r = (cpu: string, memory: string) => ({ resources: { requests: { cpu, memory } } });
    expect(podRequests({ spec: { containers: [r('100m', '64Mi'), r('200m', '64Mi')] } })).toEqual({
      cpu: expect.closeTo(0.3, 9),
      memory: 128 * 2 ** 20,
    });
    expect(
      podRequests({
        spec: { containers: [r('100m', '64Mi')], initContainers: [r('1', '32Mi')], overhead: { cpu: '10m' } },
      }),
    ).toEqual({ cpu: expect.closeTo(1.01, 9), memory: 64 * 2 ** 20 });
    // A container without requests, or with one that does not parse, requests nothing.
    expect(podRequests({ spec: { containers: [{}, { resources: { requests: { cpu: 'x' } } }] } })).toEqual({
      cpu: 0,
      memory: 0,
    });
  });
});

describe('the inventory carries what pods request (kube-sim)', () => {
  let handle: SimHandle;
  let target: CleanupTarget;
  let dir: string;
  const cleanup = kubernetesPlugin.cleanup!;

  beforeAll(async () => {
    handle = await startSim();
    delete process.env.KUBECONFIG;
    const { ctx } = callContext(clusterSettings(handle.kubeconfig));
    target = (await cleanup.targets(ctx))[0]!;
    dir = mkdtempSync(join(tmpdir(), 'tend-requests-'));
  });
  afterAll(async () => {
    await handle?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const apply = async (name: string, yaml: string) => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, yaml);
    return kubectl(handle.kubeconfig, 'apply', '-f', file);
  };
  const pod = (ns: string, name: string, resources: string, restartPolicy = 'Always') => `
apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: ${ns} }
spec:
  restartPolicy: ${restartPolicy}
  containers:
    - name: main
      image: shop/${name}:v1
      resources: ${resources}
`;

  it('sums running pods per namespace, leaves finished pods and foreign namespaces out', async () => {
    seedNamespace(handle.sim, 'req-busy');
    seedNamespace(handle.sim, 'req-idle');
    handle.sim.store.create('namespaces', '', { metadata: { name: 'req-foreign' } });
    await apply('running', pod('req-busy', 'api', '{ requests: { cpu: 100m, memory: 64Mi } }'));
    await apply('limits', pod('req-busy', 'web', '{ limits: { cpu: "1", memory: 1Gi } }'));
    await apply('done', pod('req-busy', 'migrate', '{ requests: { cpu: "4", memory: 8Gi } }', 'Never'));
    await apply('foreign', pod('req-foreign', 'other', '{ requests: { cpu: "8", memory: 8Gi } }'));
    await waitFor(
      () => handle.sim.store.get('pods', 'req-busy', 'migrate')?.status?.phase === 'Succeeded',
      'the migrate pod to finish',
    );
    const { ctx } = callContext(clusterSettings(handle.kubeconfig));
    const inventory = await cleanup.inventory(ctx, target);
    expect(inventory.complete).toBe(true);
    const byName = new Map(inventory.items.map((i) => [i.name, i.requests]));
    expect(byName.get('req-busy')).toEqual({ cpuMillicores: 1100, memoryBytes: 1088 * 2 ** 20, pods: 2 });
    expect(byName.get('req-idle')).toEqual({ cpuMillicores: 0, memoryBytes: 0, pods: 0 });
    expect(byName.has('req-foreign')).toBe(false);
    // One cluster-wide list, not one per namespace.
    const podLists = () =>
      handle.sim.requests.list().filter((r) => r.verb === 'list' && r.resource === 'pods');
    expect(podLists().length).toBe(1);
    expect(podLists()[0]!.namespace ?? '').toBe('');
    // The next inventory reuses the recent listing; a namespace it does not know lists again.
    expect((await cleanup.inventory(ctx, target)).items.find((i) => i.name === 'req-busy')?.requests).toEqual(
      { cpuMillicores: 1100, memoryBytes: 1088 * 2 ** 20, pods: 2 },
    );
    expect(podLists().length).toBe(1);
    seedNamespace(handle.sim, 'req-later');
    await cleanup.inventory(ctx, target);
    expect(podLists().length).toBe(2);
  });

  it('leaves requests out, and the inventory complete, when pods cannot be listed', async () => {
    const fault = handle.sim.faults.add({ type: 'list-fail', resource: 'pods', status: 403 });
    // A namespace the last listing did not see: the pods are listed again.
    seedNamespace(handle.sim, 'req-refused');
    try {
      const { ctx, log } = callContext(clusterSettings(handle.kubeconfig));
      const inventory = await cleanup.inventory(ctx, target);
      expect(inventory.complete).toBe(true);
      expect(inventory.items.length).toBeGreaterThan(0);
      expect(inventory.items.every((i) => i.requests === undefined)).toBe(true);
      expect(log.join('\n')).toMatch(
        /cannot list pods for the savings report \(403 .*\); namespaces are counted by weight/,
      );
    } finally {
      handle.sim.faults.remove(fault);
    }
  });

  it('refuses quantities a real API server refuses', async () => {
    seedNamespace(handle.sim, 'req-bad');
    await expect(apply('bad', pod('req-bad', 'bad', '{ requests: { cpu: lots } }'))).rejects.toThrow(
      /quantities must match the regular expression/,
    );
    await expect(apply('negative', pod('req-bad', 'neg', '{ requests: { cpu: "-1" } }'))).rejects.toThrow(
      /spec.containers\[0\].resources.requests\[cpu\]: Invalid value: "-1": must be greater than or equal to 0/,
    );
    await expect(
      apply('over', pod('req-bad', 'over', '{ requests: { memory: 2Gi }, limits: { memory: 1Gi } }')),
    ).rejects.toThrow(/must be less than or equal to memory limit of 1Gi/);
    expect(handle.sim.store.list('pods', 'req-bad')).toEqual([]);
  });
});
