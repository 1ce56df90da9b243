/**
 * The kubernetes plugin's cleanup handlers against kube-sim through the real client: targets from
 * a kubeconfig file, the paged inventory (complete only when every page arrived and the count
 * agrees), and verify-and-delete with every check and the DELETE precondition.
 */
import { Value } from 'typebox/value';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InventoryItem, inventoryItemOf } from '../../src/cleanup/protocol.js';
import { kubernetesPlugin } from '../../src/plugins/kubernetes/index.js';
import type { CleanupTarget } from '../../src/plugin/types.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { callContext, clusterSettings, exists, jobFor, seedNamespace } from './helpers.js';

const cleanup = kubernetesPlugin.cleanup!;
let handle: SimHandle;
let target: CleanupTarget;

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  // The executor reads its own --kubeconfig, not KUBECONFIG.
  delete process.env.KUBECONFIG;
  const { ctx } = callContext(clusterSettings(handle.kubeconfig));
  target = (await cleanup.targets(ctx))[0]!;
});
afterAll(() => handle.stop());
beforeEach(() => handle.sim.faults.clear());

function context() {
  return callContext(clusterSettings(handle.kubeconfig), { protectNamespaces: ['keep-*'] });
}

describe('kubernetes cleanup targets', () => {
  it('names the cluster of each context by the uid of kube-system, once per cluster', async () => {
    expect(target.targetKey).toBe(`kubernetes/${handle.sim.clusterId}`);
    const { ctx } = callContext(clusterSettings(handle.kubeconfig, ['kube-sim', 'kube-sim']));
    expect((await cleanup.targets(ctx)).map((t) => t.targetKey)).toEqual([target.targetKey]);
  });

  it('fails clearly for an unknown context', async () => {
    const { ctx } = callContext(clusterSettings(handle.kubeconfig, ['nope']));
    await expect(cleanup.targets(ctx)).rejects.toThrow(/context "nope" not found/);
  });
});

describe('kubernetes inventory', () => {
  it('lists every tend-labelled namespace, its label and tend.dev/* annotations as the item fields', async () => {
    const a = seedNamespace(handle.sim, 'inv-a', {
      lastActivity: '2026-02-03T04:05:06+01:00',
      annotations: { 'other.io/x': 'y', 'tend.dev/role': 'system', 'tend.dev/adopted': 'true' },
    });
    seedNamespace(handle.sim, 'inv-foreign', { labels: null });
    const { ctx } = context();
    const inventory = await cleanup.inventory(ctx, target);
    expect(inventory.complete).toBe(true);
    const item = inventory.items.find((i) => i.name === 'inv-a')!;
    expect(item).toEqual({
      name: 'inv-a',
      uid: a.uid,
      version: a.resourceVersion,
      state: 'active',
      managedByTend: true,
      project: 'shop',
      environment: 'dev',
      role: 'system',
      adopted: true,
      lastActivityAt: '2026-02-03T03:05:06.000Z',
      // Its creationTimestamp, as the API server set it (not the tend.dev/created-at annotation).
      createdAt: new Date(
        (handle.sim.store.get('namespaces', '', 'inv-a') as { metadata: { creationTimestamp: string } })
          .metadata.creationTimestamp,
      ).toISOString(),
      // No pods run in it (the savings report's figures).
      requests: { cpuMillicores: 0, memoryBytes: 0, pods: 0 },
    });
    expect(inventory.items.some((i) => i.name === 'inv-foreign')).toBe(false);
  });

  it('leaves out marks that name nothing tend knows, and still lists the namespace', async () => {
    seedNamespace(handle.sim, 'inv-odd', {
      project: 'p'.repeat(300),
      lastActivity: '+275760-09-13T00:00:00.000Z',
      annotations: { 'tend.dev/role': 'System', 'tend.dev/adopted': 'yes' },
    });
    const { ctx } = context();
    const inventory = await cleanup.inventory(ctx, target);
    expect(inventory.complete).toBe(true);
    const item = inventory.items.find((i) => i.name === 'inv-odd')!;
    expect(item).toMatchObject({ managedByTend: true, environment: 'dev', adopted: false });
    expect(item).not.toHaveProperty('project');
    expect(item).not.toHaveProperty('role');
    expect(item).not.toHaveProperty('lastActivityAt');
    // What the executor sends passes the protocol's schema (a forged mark cannot make it a 400).
    expect(Value.Check(InventoryItem, inventoryItemOf(item))).toBe(true);
  });

  it('is incomplete when the list fails, comes back truncated, or its continue token expires', async () => {
    for (let i = 0; i < 620; i++) seedNamespace(handle.sim, `bulk-${String(i).padStart(4, '0')}`);
    const { ctx } = context();
    const whole = await cleanup.inventory(ctx, target);
    expect(whole.complete).toBe(true);
    expect(whole.items.length).toBeGreaterThan(620);

    handle.sim.faults.add({ type: 'list-fail', resource: 'namespaces', status: 500 });
    const failed = await cleanup.inventory(ctx, target);
    expect(failed).toMatchObject({
      complete: false,
      error: expect.stringMatching(/listing namespaces failed/),
    });
    handle.sim.faults.clear();

    // Once (the first page) and always (every list, the count probe too).
    for (const times of [1, undefined]) {
      handle.sim.faults.add({ type: 'list-truncate', resource: 'namespaces', ...(times ? { times } : {}) });
      const truncated = await cleanup.inventory(ctx, target);
      expect(truncated.complete).toBe(false);
      expect(truncated.error).toMatch(/truncated/);
      handle.sim.faults.clear();
    }

    handle.sim.faults.add({ type: 'continue-expire', resource: 'namespaces' });
    const expired = await cleanup.inventory(ctx, target);
    expect(expired).toMatchObject({
      complete: false,
      error: expect.stringMatching(/continue token expired/),
    });
  });
});

describe('kubernetes verifyAndClean', () => {
  it('deletes an owned, idle namespace and waits until it is gone', async () => {
    const ns = seedNamespace(handle.sim, 'vc-idle');
    const { ctx, events } = context();
    const result = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns));
    expect(result).toEqual({ outcome: 'done', message: 'deleted namespace vc-idle' });
    expect(exists(handle.sim, 'vc-idle')).toBe(false);
    expect(events.map((e) => `${e.state}/${e.cause}`)).toEqual([
      'ready/observed',
      'terminating/deleted',
      'missing/deleted',
    ]);
    expect(events[0]).toMatchObject({
      project: 'shop',
      environment: 'dev',
      namespaceUid: ns.uid,
      role: 'app',
    });
  });

  it('reports a namespace that is already gone as done', async () => {
    const { ctx } = context();
    const result = await cleanup.verifyAndClean(
      ctx,
      target,
      jobFor(handle.sim, { name: 'vc-never', uid: 'u-1', resourceVersion: '1' }),
    );
    expect(result).toMatchObject({ outcome: 'done', message: expect.stringMatching(/already gone/) });
  });

  it.each([
    ['re-created with the same name (new uid)', {}, { namespaceUid: 'the-old-uid' }, /re-created/],
    [
      'stamped tend.dev/last-activity after the decision',
      { lastActivity: '2026-01-02T00:00:00.000Z' },
      {},
      /used at 2026-01-02.*after the decision/,
    ],
    ['adopted', { annotations: { 'tend.dev/adopted': 'true' } }, {}, /adopted/],
    ['not labelled managed-by=tend', { labels: null }, {}, /not managed by tend/],
    ['of another project', { project: 'other' }, {}, /belongs to project "other"/],
    ['of another environment', { environment: 'prod' }, {}, /belongs to environment "prod"/],
    ['a tend system namespace', { annotations: { 'tend.dev/role': 'system' } }, {}, /system namespace/],
    ['without a recorded uid', {}, { namespaceUid: null }, /no recorded uid/],
    ['a dry run', {}, { dryRun: true }, /dry run.*passed every check/],
  ])('cancels and keeps a namespace %s', async (_what, seed, jobChanges, message) => {
    const name = `vc-keep-${Math.random().toString(36).slice(2, 8)}`;
    const ns = seedNamespace(handle.sim, name, seed);
    const { ctx } = context();
    const result = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, jobChanges));
    expect(result.outcome).toBe('cancelled');
    expect(result.message).toMatch(message);
    expect(exists(handle.sim, name)).toBe(true);
  });

  it.each(['kube-public', 'default', 'tend-system', 'keep-me'])(
    'never touches the protected name %s',
    async (name) => {
      if (!exists(handle.sim, name)) seedNamespace(handle.sim, name);
      const ns = {
        name,
        uid: handle.sim.store.get('namespaces', '', name)!.metadata.uid!,
        resourceVersion: '1',
      };
      const { ctx, events } = context();
      const result = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns));
      expect(result).toMatchObject({ outcome: 'cancelled', message: expect.stringMatching(/protected/) });
      expect(events).toEqual([]);
      expect(exists(handle.sim, name)).toBe(true);
    },
  );

  it('cancels when the DELETE precondition fails (changed since the check)', async () => {
    const ns = seedNamespace(handle.sim, 'vc-conflict');
    handle.sim.faults.add({ type: 'error', status: 409, verb: 'delete', resource: 'namespaces', times: 1 });
    const { ctx } = context();
    const result = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns));
    expect(result).toMatchObject({
      outcome: 'cancelled',
      message: expect.stringMatching(/changed since the check/),
    });
    expect(exists(handle.sim, 'vc-conflict')).toBe(true);
  });

  it('a pause that may not list a kind fails (retried), never done with nothing paused', async () => {
    const ns = seedNamespace(handle.sim, 'vc-pause-forbidden');
    handle.sim.faults.add({ type: 'list-fail', status: 403, resource: 'deployments', namespace: ns.name });
    const { ctx } = context();
    await expect(
      cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { action: 'pause' })),
    ).rejects.toThrow(/403|forbidden/i);
    handle.sim.faults.clear();
    handle.sim.faults.add({ type: 'list-fail', status: 404, resource: 'cronjobs', namespace: ns.name });
    await expect(
      cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { action: 'resume' })),
    ).rejects.toThrow();
  });

  it('retries through a 429 storm and deletes once', async () => {
    const ns = seedNamespace(handle.sim, 'vc-storm');
    const id = handle.sim.faults.add({
      type: 'error',
      status: 429,
      retryAfterSeconds: 0,
      resource: 'namespaces',
      times: 4,
    });
    const { ctx } = context();
    const result = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns));
    expect(result.outcome).toBe('done');
    expect(handle.sim.faults.fired(id)).toBe(4);
    expect(exists(handle.sim, 'vc-storm')).toBe(false);
  });

  it('throws (a failed job, retried later) when the API keeps failing, and deletes nothing', async () => {
    const ns = seedNamespace(handle.sim, 'vc-down');
    handle.sim.faults.add({ type: 'error', status: 500, verb: 'delete', resource: 'namespaces' });
    const { ctx } = context();
    await expect(cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns))).rejects.toThrow(
      /could not delete namespace vc-down/,
    );
    expect(exists(handle.sim, 'vc-down')).toBe(true);
  });

  it('a 403 on the DELETE fails the job (retried later) and deletes nothing', async () => {
    const ns = seedNamespace(handle.sim, 'vc-forbidden');
    handle.sim.faults.add({ type: 'error', status: 403, verb: 'delete', resource: 'namespaces' });
    const { ctx } = context();
    await expect(cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns))).rejects.toMatchObject({
      code: 'TEND_K8S_FORBIDDEN',
      message: expect.stringMatching(/could not delete namespace vc-forbidden/),
    });
    expect(exists(handle.sim, 'vc-forbidden')).toBe(true);
  });

  it('a job that asks for an archive, at an executor that cannot send one, fails and deletes nothing', async () => {
    const ns = seedNamespace(handle.sim, 'vc-no-archive');
    const { ctx } = context();
    expect(ctx.archive).toBeUndefined();
    await expect(
      cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { archive: 'objects' })),
    ).rejects.toMatchObject({
      code: 'TEND_ARCHIVE',
      message: expect.stringMatching(/cannot send one; not deleted/),
    });
    expect(exists(handle.sim, 'vc-no-archive')).toBe(true);
    expect(
      handle.sim.requests.list().some((r) => r.verb === 'delete' && r.namespace === 'vc-no-archive'),
    ).toBe(false);
  });

  it('refuses a job for another cluster', async () => {
    const ns = seedNamespace(handle.sim, 'vc-other-cluster');
    const { ctx } = context();
    const job = jobFor(handle.sim, ns, { target: { kind: 'kubernetes', clusterId: 'elsewhere' } });
    expect((await cleanup.verifyAndClean(ctx, target, job)).outcome).toBe('cancelled');
    expect(exists(handle.sim, 'vc-other-cluster')).toBe(true);
  });
});

describe('kubernetes verifyAndClean, against the window of the claim that tend created the namespace', () => {
  /** The namespace's creationTimestamp (ms), as the API server set it. */
  const createdMs = (name: string) =>
    Date.parse(
      (handle.sim.store.get('namespaces', '', name) as { metadata: { creationTimestamp: string } }).metadata
        .creationTimestamp,
    );
  const claim = (from: number, until: number) => ({
    ownership: {
      proof: 'claim' as const,
      createdFrom: new Date(from).toISOString(),
      createdUntil: new Date(until).toISOString(),
    },
  });

  it.each([
    ['at the start of the window', 0, 60_000],
    ['at its end', -60_000, 0],
  ])('deletes a namespace the cluster created within it (%s)', async (_what, before, after) => {
    const name = `cw-in-${Math.random().toString(36).slice(2, 8)}`;
    const ns = seedNamespace(handle.sim, name);
    const created = createdMs(name);
    const { ctx } = context();
    const job = jobFor(handle.sim, ns, claim(created + before, created + after));
    expect(await cleanup.verifyAndClean(ctx, target, job)).toEqual({
      outcome: 'done',
      message: `deleted namespace ${name}`,
    });
    expect(exists(handle.sim, name)).toBe(false);
  });

  it('deletes, as before windows were recorded, when the recorded uid is the proof', async () => {
    const ns = seedNamespace(handle.sim, 'cw-uid');
    const { ctx } = context();
    const job = jobFor(handle.sim, ns, { ownership: { proof: 'recorded-uid' } });
    expect((await cleanup.verifyAndClean(ctx, target, job)).outcome).toBe('done');
    expect(exists(handle.sim, 'cw-uid')).toBe(false);
  });

  it.each([
    [
      'before the claiming session started',
      1,
      60_000,
      /the cluster created it at .*, before the session that claims to have created it started/,
    ],
    [
      'after the server received the claim',
      -60_000,
      -1,
      /the cluster created it at .*, after the server received the claim/,
    ],
  ])('cancels and keeps a namespace the cluster created %s', async (_what, before, after, why) => {
    const name = `cw-out-${Math.random().toString(36).slice(2, 8)}`;
    const ns = seedNamespace(handle.sim, name);
    const created = createdMs(name);
    const { ctx } = context();
    for (const action of ['delete', 'pause'] as const) {
      const job = jobFor(handle.sim, ns, { action, ...claim(created + before, created + after) });
      const result = await cleanup.verifyAndClean(ctx, target, job);
      expect(result.outcome).toBe('cancelled');
      expect(result.message).toMatch(new RegExp(`namespace ${name} left alone: ${why.source}`));
    }
    expect(exists(handle.sim, name)).toBe(true);
    expect(handle.sim.requests.list().some((r) => r.verb !== 'get' && r.namespace === name)).toBe(false);
  });

  it('cancels a job whose window is not a time', async () => {
    const ns = seedNamespace(handle.sim, 'cw-garbled');
    const { ctx } = context();
    for (const ownership of [
      { proof: 'claim' as const, createdFrom: 'yesterday', createdUntil: '2100-01-01T00:00:00.000Z' },
      { proof: 'claim' as const, createdFrom: '2000-01-01T00:00:00.000Z', createdUntil: 'soon' },
    ]) {
      const result = await cleanup.verifyAndClean(ctx, target, jobFor(handle.sim, ns, { ownership }));
      expect(result).toMatchObject({ outcome: 'cancelled', message: expect.stringMatching(/is not a time/) });
    }
    expect(exists(handle.sim, 'cw-garbled')).toBe(true);
  });
});

describe('kubernetes verifyAndClean, when the answer to its DELETE is lost', () => {
  it('reads again: the 409 of its retry (the namespace terminating) is its deletion, reported done', async () => {
    // Namespaces take a while to go here, so the retried DELETE meets the terminating namespace
    // (another resourceVersion: 409) rather than nothing (404).
    const slow = await startSim({ namespaceDeleteDelayMs: 1500 });
    try {
      const { ctx: targetsCtx } = callContext(clusterSettings(slow.kubeconfig));
      const slowTarget = (await cleanup.targets(targetsCtx))[0]!;
      const ns = seedNamespace(slow.sim, 'vc-lost-answer');
      const lost = slow.sim.faults.add({
        type: 'drop-response',
        verb: 'delete',
        resource: 'namespaces',
        times: 1,
      });
      const { ctx, events } = callContext(clusterSettings(slow.kubeconfig));
      const result = await cleanup.verifyAndClean(ctx, slowTarget, jobFor(slow.sim, ns));
      expect(slow.sim.faults.fired(lost)).toBe(1);
      const deletes = slow.sim.requests.list().filter((r) => r.verb === 'delete' && r.namespace === ns.name);
      expect(deletes.map((r) => r.status)).toEqual([undefined, 409]);
      expect(result).toEqual({ outcome: 'done', message: 'deleted namespace vc-lost-answer' });
      expect(exists(slow.sim, 'vc-lost-answer')).toBe(false);
      expect(events.map((e) => `${e.state}/${e.cause}`)).toEqual([
        'ready/observed',
        'terminating/deleted',
        'missing/deleted',
      ]);
    } finally {
      await slow.stop();
    }
  });
});
