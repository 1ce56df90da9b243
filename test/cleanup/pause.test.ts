/**
 * Pause and exact resume of a Kubernetes environment by the kubernetes plugin's cleanup handler
 * (the executors' job actions `pause` and `resume`), against kube-sim through the real client:
 * the Deployments, StatefulSets and CronJobs tend deployed are scaled to 0 / suspended with
 * their previous values recorded, objects tend did not deploy are left alone, an HPA does not
 * undo the pause, and resume restores exactly what was recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../../tools/kube-sim/src/index.js';
import { kubernetesPlugin } from '../../src/plugins/kubernetes/index.js';
import type { CleanupTarget } from '../../src/plugin/types.js';
import { waitFor as waitUntil } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { callContext, clusterSettings, jobFor, seedNamespace } from './helpers.js';

const cleanup = kubernetesPlugin.cleanup!;
let handle: SimHandle;
let target: CleanupTarget;

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  delete process.env.KUBECONFIG;
  const { ctx } = callContext(clusterSettings(handle.kubeconfig));
  target = (await cleanup.targets(ctx))[0]!;
});
afterAll(() => handle.stop());

const tendLabels = { 'app.kubernetes.io/managed-by': 'tend', 'tend.dev/action': 'deploy.api' };

function seedWorkloads(sim: KubeSim, ns: string) {
  const workload = (kind: string, name: string, replicas: number, labels: Record<string, string>) =>
    sim.store.create(kind === 'Deployment' ? 'deployments.apps' : 'statefulsets.apps', ns, {
      apiVersion: 'apps/v1',
      kind,
      metadata: { name, labels },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { containers: [{ name, image: `shop/${name}:v1` }] },
        },
      },
    });
  workload('Deployment', 'api', 3, tendLabels);
  workload('Deployment', 'web', 4, tendLabels);
  workload('StatefulSet', 'db', 2, tendLabels);
  workload('Deployment', 'foreign', 5, { app: 'foreign' });
  sim.store.create('horizontalpodautoscalers.autoscaling', ns, {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: 'web', labels: tendLabels },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
      minReplicas: 2,
      maxReplicas: 6,
    },
  });
  const cronjob = (name: string, suspend: boolean, labels: Record<string, string>) =>
    sim.store.create('cronjobs.batch', ns, {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name, labels },
      spec: {
        schedule: '0 3 * * *',
        suspend,
        jobTemplate: {
          spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name, image: 'x' }] } } },
        },
      },
    });
  cronjob('report', false, tendLabels);
  cronjob('cleanup', true, tendLabels);
  cronjob('foreign-report', false, {});
}

function state(sim: KubeSim, ns: string) {
  const get = (key: string, name: string) => sim.store.get(key, ns, name)!;
  const w = (key: string, name: string) => ({
    replicas: get(key, name).spec.replicas as number,
    recorded: get(key, name).metadata.annotations?.['tend.dev/paused-replicas'] as string | undefined,
  });
  const c = (name: string) => ({
    suspend: get('cronjobs.batch', name).spec.suspend as boolean,
    recorded: get('cronjobs.batch', name).metadata.annotations?.['tend.dev/paused-suspend'] as
      string | undefined,
  });
  return {
    api: w('deployments.apps', 'api'),
    web: w('deployments.apps', 'web'),
    db: w('statefulsets.apps', 'db'),
    foreign: w('deployments.apps', 'foreign'),
    report: c('report'),
    cleanup: c('cleanup'),
    foreignReport: c('foreign-report'),
  };
}

const hpaCondition = (sim: KubeSim, ns: string) =>
  (sim.store.get('horizontalpodautoscalers.autoscaling', ns, 'web')?.status?.conditions ?? []).find(
    (c: { type: string }) => c.type === 'ScalingActive',
  ) as { status: string; reason: string } | undefined;

describe('pause and resume (kubernetes)', () => {
  it('pauses what tend deployed, keeps the HPA from undoing it, and resumes exactly what was recorded', async () => {
    const ns = seedNamespace(handle.sim, 'pause-shop');
    seedWorkloads(handle.sim, 'pause-shop');
    // The HPA is live: it raised nothing here (4 is within 2–6) but holds the target in bounds.
    await waitUntil(() => hpaCondition(handle.sim, 'pause-shop')?.status === 'True', 'the HPA to be active');
    const before = state(handle.sim, 'pause-shop');

    const { ctx } = callContext(clusterSettings(handle.kubeconfig));
    const paused = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { action: 'pause' }));
    expect(paused.outcome).toBe('done');
    expect(paused.message).toBe(
      'paused namespace pause-shop: Deployment api 3 → 0, Deployment web 4 → 0 (HPA web), StatefulSet db 2 → 0, ' +
        'CronJob cleanup suspended, CronJob report suspended',
    );
    await waitUntil(
      () => hpaCondition(handle.sim, 'pause-shop')?.reason === 'ScalingDisabled',
      'the HPA to see its target at 0',
    );
    expect(state(handle.sim, 'pause-shop')).toEqual({
      api: { replicas: 0, recorded: '3' },
      web: { replicas: 0, recorded: '4' },
      db: { replicas: 0, recorded: '2' },
      foreign: { replicas: 5, recorded: undefined },
      report: { suspend: true, recorded: 'false' },
      cleanup: { suspend: true, recorded: 'true' },
      foreignReport: { suspend: false, recorded: undefined },
    });

    // Pausing again changes nothing and keeps the record.
    const again = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { action: 'pause' }));
    expect(again).toEqual({
      outcome: 'done',
      message: 'paused namespace pause-shop: 5 object(s) already as wanted',
    });
    expect(state(handle.sim, 'pause-shop').web).toEqual({ replicas: 0, recorded: '4' });

    const resumed = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { action: 'resume' }));
    expect(resumed.outcome).toBe('done');
    await waitUntil(
      () => hpaCondition(handle.sim, 'pause-shop')?.status === 'True',
      'the HPA to take over again',
    );
    expect(state(handle.sim, 'pause-shop')).toEqual(before);
  });

  it('pauses nothing in a namespace that fails the ownership proof', async () => {
    const ns = seedNamespace(handle.sim, 'pause-other', { project: 'other' });
    seedWorkloads(handle.sim, 'pause-other');
    const before = state(handle.sim, 'pause-other');
    const { ctx } = callContext(clusterSettings(handle.kubeconfig));
    for (const job of [
      jobFor(handle.sim, ns, { action: 'pause' }),
      jobFor(handle.sim, { ...ns, project: 'shop' } as typeof ns, {
        action: 'pause',
        namespaceUid: 'another-uid',
      }),
    ]) {
      const result = await cleanup.verifyAndClean(ctx, target, job);
      expect(result.outcome).toBe('cancelled');
      expect(result.message).toMatch(/left alone/);
    }
    expect(state(handle.sim, 'pause-other')).toEqual(before);
  });

  it('a dry run checks everything and changes nothing', async () => {
    const ns = seedNamespace(handle.sim, 'pause-dry');
    seedWorkloads(handle.sim, 'pause-dry');
    const before = state(handle.sim, 'pause-dry');
    const { ctx } = callContext(clusterSettings(handle.kubeconfig));
    const result = await cleanup.verifyAndClean(
      ctx,
      target,
      jobFor(handle.sim, ns, { action: 'pause', dryRun: true }),
    );
    expect(result.outcome).toBe('cancelled');
    expect(result.message).toMatch(
      /^dry run: namespace pause-dry passed every check; would pause Deployment api 3 → 0/,
    );
    expect(state(handle.sim, 'pause-dry')).toEqual(before);
  });

  it('fails, changing nothing, when the credentials may not list CronJobs (never done with half paused)', async () => {
    const ns = seedNamespace(handle.sim, 'pause-rbac');
    seedWorkloads(handle.sim, 'pause-rbac');
    const before = state(handle.sim, 'pause-rbac');
    const id = handle.sim.faults.add({
      type: 'error',
      status: 403,
      verb: 'list',
      resource: 'cronjobs.batch',
    });
    try {
      const { ctx } = callContext(clusterSettings(handle.kubeconfig));
      await expect(
        cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { action: 'pause' })),
      ).rejects.toThrow(/list CronJobs/);
      expect(state(handle.sim, 'pause-rbac')).toEqual(before);
      expect(handle.sim.faults.fired(id)).toBeGreaterThan(0);
    } finally {
      handle.sim.faults.clear();
    }
  });
});
