/**
 * A restore job goes through the framework's checks of what it names before the plugin's
 * `restore` primitive runs, whatever the plugin: the job's target is the one served, the name is a
 * name, never a protected one, and nothing exists under it. A plugin whose `restore` checks
 * nothing is never asked to write into kube-system, a `--protect-namespace` glob, or a resource
 * that exists.
 */
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { SessionBus } from '../../src/events/bus.js';
import type { CleanupPrimitives, PluginDefinition, QueuedCleanupJob } from '../../src/plugin/types.js';
import { CleanupRouter, type ServedPlugin } from '../../src/router/cleanup.js';

/** A store whose `restore` checks nothing; `existing` are the names `read` finds. */
function served(restored: string[], existing: string[] = []): ServedPlugin {
  const cleanup: CleanupPrimitives = {
    targetKind: 'store',
    settingsSchema: Type.Object({}),
    async targets() {
      return [];
    },
    async inventory() {
      return { complete: true, items: [] };
    },
    async read(_ctx, _target, { name }) {
      if (!existing.includes(name)) return undefined;
      const marks = { project: 'shop', environment: 'dev', role: 'app' as const, adopted: false };
      return {
        name,
        uid: 'uid-now',
        version: '1',
        state: 'active' as const,
        managedByTend: true,
        ...marks,
      };
    },
    async delete() {
      return { outcome: 'done', message: 'deleted' };
    },
    async restore(_ctx, _target, job) {
      restored.push(job.resourceName);
      return { namespace: job.resourceName, restored: [], notRestored: [] };
    },
  };
  const plugin = { name: 'store', emits: ['namespaceStatus'], cleanup } as unknown as PluginDefinition & {
    cleanup: CleanupPrimitives;
  };
  return { plugin, settings: {} };
}

const job = (namespaceName: string, id = 'one'): QueuedCleanupJob => ({
  id: 'job-1',
  action: 'restore',
  project: 'shop',
  environment: 'dev',
  namespaceName,
  namespaceUid: '',
  expectedLastActivityAt: new Date(0).toISOString(),
  target: { kind: 'plugin', targetKind: 'store', id },
  dryRun: false,
  archive: 'none',
});

describe('a restore job, for any plugin', () => {
  const router = new CleanupRouter({
    bus: new SessionBus(),
    protection: { systemName: 'tend-system', patterns: ['prod-*'] },
    user: 'test',
    hostId: 'host',
  });
  const target = { targetKey: 'store/one', pluginName: 'store', description: 'a store' };
  const signal = new AbortController().signal;
  const request = {
    archive: { kind: 'plugin', pluginName: 'store', name: 'x', content: {}, notArchived: [] },
  };

  it.each([
    ['kube-system', 'store/one', /kube-system is protected/],
    ['tend-system', 'store/one', /tend-system is protected/],
    ['prod-db', 'store/one', /prod-db is protected/],
    ['../up', 'store/one', /names no/],
    ['shop-dev', 'store/two', /the job's target store\/two is not store\/one/],
  ])(
    'into %s on %s is refused with TEND_ARCHIVE, and the plugin is not called',
    async (name, recorded, why) => {
      const restored: string[] = [];
      const id = recorded.slice('store/'.length);
      await expect(
        router.restore(served(restored), target, job(name, id), request as never, signal),
      ).rejects.toMatchObject({
        code: 'TEND_ARCHIVE',
        message: expect.stringMatching(why) as unknown,
      });
      expect(restored).toEqual([]);
    },
  );

  it('into a name that exists (read fresh) is refused with TEND_ARCHIVE, whatever the plugin would do', async () => {
    const restored: string[] = [];
    await expect(
      router.restore(served(restored, ['shop-dev']), target, job('shop-dev'), request as never, signal),
    ).rejects.toMatchObject({
      code: 'TEND_ARCHIVE',
      message: 'not restored: resource shop-dev exists again (uid uid-now)',
    });
    expect(restored).toEqual([]);
  });

  it('into a name of its own target reaches the plugin', async () => {
    const restored: string[] = [];
    await router.restore(served(restored), target, job('shop-dev'), request as never, signal);
    expect(restored).toEqual(['shop-dev']);
  });
});
