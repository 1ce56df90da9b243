/**
 * Rollouts as the controllers do them: a RollingUpdate stays within maxSurge and
 * maxUnavailable at every step, Recreate never runs old and new pods together, and pods a
 * controller removes are seen terminating for a while.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { call, waitFor } from './helpers.js';

let sim: KubeSim;
beforeAll(async () => {
  sim = await startKubeSim({ podStartDelayMs: 60, podTerminationDelayMs: 150 });
  await call(sim, 'POST', '/api/v1/namespaces', { metadata: { name: 'roll' } });
});
afterAll(async () => sim?.stop());

function deployment(name: string, release: string, strategy?: object) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 4,
      ...(strategy ? { strategy } : {}),
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'main', image: `shop/${name}:${release}` }] },
      },
    },
  };
}

const imageOf = (p: { spec?: { containers?: { image: string }[] } }) => p.spec?.containers?.[0]?.image ?? '';

/** Samples the pods and the Deployment's status on every tick until the rollout to `release` is done. */
async function rollTo(name: string, release: string) {
  const path = `/apis/apps/v1/namespaces/roll/deployments/${name}`;
  const patch = await call(
    sim,
    'PATCH',
    path,
    { spec: { template: { spec: { containers: [{ name: 'main', image: `shop/${name}:${release}` }] } } } },
    { contentType: 'application/strategic-merge-patch+json' },
  );
  expect(patch.status).toBe(200);
  const samples: { running: string[]; terminating: number; all: string[]; available: number }[] = [];
  const deadline = Date.now() + 20_000;
  for (;;) {
    const pods = sim.store.list('pods', 'roll').filter((p) => p.metadata.labels?.['app'] === name);
    const d = sim.store.get('deployments', 'roll', name)!;
    samples.push({
      running: pods.filter((p) => !p.metadata.deletionTimestamp).map(imageOf),
      terminating: pods.filter((p) => p.metadata.deletionTimestamp).length,
      all: pods.map(imageOf),
      available: d.status?.availableReplicas ?? 0,
    });
    const s = d.status ?? {};
    const done =
      s.observedGeneration === d.metadata.generation &&
      s.updatedReplicas === 4 &&
      s.replicas === 4 &&
      s.availableReplicas === 4 &&
      samples.at(-1)!.running.every((i) => i.endsWith(`:${release}`));
    if (done) return samples;
    if (Date.now() > deadline) throw new Error(`rollout of ${name} to ${release} did not finish`);
    await new Promise((r) => setImmediate(r));
  }
}

describe('Deployment rollouts', () => {
  it('RollingUpdate (25%/25% of 4): at most 5 pods, at least 3 available, old pods seen terminating', async () => {
    await call(sim, 'POST', '/apis/apps/v1/namespaces/roll/deployments', deployment('rolling', 'v1'));
    await waitFor(
      () => sim.store.get('deployments', 'roll', 'rolling')?.status?.availableReplicas === 4,
      'v1',
    );
    const samples = await rollTo('rolling', 'v2');
    expect(Math.max(...samples.map((s) => s.running.length))).toBeLessThanOrEqual(5);
    expect(Math.min(...samples.map((s) => s.available))).toBeGreaterThanOrEqual(3);
    expect(samples.some((s) => s.terminating > 0)).toBe(true);
    // Old and new ran side by side: a rolling update, not a recreate.
    expect(
      samples.some(
        (s) => s.running.some((i) => i.endsWith(':v1')) && s.running.some((i) => i.endsWith(':v2')),
      ),
    ).toBe(true);
  });

  it('Recreate: every old pod is gone (terminating ones too) before a new one starts', async () => {
    await call(
      sim,
      'POST',
      '/apis/apps/v1/namespaces/roll/deployments',
      deployment('recreate', 'v1', { type: 'Recreate' }),
    );
    await waitFor(
      () => sim.store.get('deployments', 'roll', 'recreate')?.status?.availableReplicas === 4,
      'v1',
    );
    const samples = await rollTo('recreate', 'v2');
    const both = (images: string[]) =>
      images.some((i) => i.endsWith(':v1')) && images.some((i) => i.endsWith(':v2'));
    expect(samples.some((s) => both(s.all))).toBe(false);
    expect(samples.some((s) => s.terminating > 0)).toBe(true);
  });
});
