/**
 * The cleanup contract: every registered plugin with a `cleanup` part, given an environment its
 * provider prepared (the fixtures of the event contract), serves the target it recorded, lists
 * the environment in the target's inventory with the recorded uid, refuses a job whose uid does
 * not match, and cleans it for the right job — `missing`/`deleted` reported, gone from the
 * inventory, a second attempt `done` as already gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openProject, startSession } from '../../src/commands/context.js';
import type { NamespaceStatusPayload } from '../../src/events/catalog.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import type { CleanupTarget } from '../../src/plugin/types.js';
import { executorTargetOf, targetKey as targetKeyOf } from '../../src/cleanup/targets.js';
import { makeProject, removeProjects } from '../helpers/project.js';
import { callContext } from '../cleanup/helpers.js';
import { useTempStateDir } from '../helpers/state-dir.js';
import { execContract } from './contract/exec.js';
import { kubernetesContract } from './contract/kubernetes.js';
import type { PluginContract, PluginFixture } from './contract/types.js';

const contracts: PluginContract[] = [execContract, kubernetesContract];
const withCleanup = builtinPlugins().filter((p) => p.cleanup);

useTempStateDir();
afterAll(removeProjects);

/** Prepares the fixture's environment through the router; returns what the plugin recorded. */
async function prepared(fixture: PluginFixture, pluginName: string): Promise<NamespaceStatusPayload> {
  const root = makeProject(fixture.files);
  const opened = await openProject({ root, var: fixture.vars });
  const { session, router, close } = startSession(opened, 'contract-test', []);
  const seen: NamespaceStatusPayload[] = [];
  session.bus.on('namespaceStatus', (e) => seen.push(e.payload as NamespaceStatusPayload));
  await router.initProviders();
  for (const p of router.providers) await router.callProvider(p, 'prepareEnvironment');
  await close({});
  return seen.find((e) => e.pluginName === pluginName && e.role === 'app' && e.state === 'ready')!;
}

it('covers every plugin with a cleanup part', () => {
  expect(withCleanup.map((p) => p.name).sort()).toEqual(
    contracts.map((c) => c.plugin).filter((name) => withCleanup.some((p) => p.name === name)),
  );
});

describe.each(withCleanup.map((plugin) => ({ plugin, name: plugin.name })))(
  'the cleanup contract of plugin $name',
  ({ plugin }) => {
    const contract = contracts.find((c) => c.plugin === plugin.name)!;
    let fixtures: Record<string, PluginFixture>;
    const previousEnv = { ...process.env };
    beforeAll(async () => {
      fixtures = await contract.fixtures();
      Object.assign(process.env, fixtures.default!.env);
    });
    afterAll(async () => {
      for (const key of Object.keys(fixtures?.default?.env ?? {})) {
        if (previousEnv[key] === undefined) delete process.env[key];
        else process.env[key] = previousEnv[key];
      }
      for (const fixture of Object.values(fixtures ?? {})) await fixture.teardown?.();
    });

    it('serves, lists, refuses the wrong uid, cleans the right job once', async () => {
      const recorded = await prepared(fixtures.default!, plugin.name);
      expect(recorded.namespaceUid).toBeTruthy();
      const cleanup = plugin.cleanup!;
      const { flags, hostId } = contract.executor!(recorded);
      const settings = cleanup.settingsFromFlags!(flags);
      const { ctx, events } = callContext(settings, {
        pluginName: plugin.name,
        ...(hostId ? { hostId } : {}),
      });
      // The executor's target of the recorded resource, whatever the plugin: the first two parts of its key.
      const targetKey = executorTargetOf(targetKeyOf(recorded.target));
      expect(targetKey.split('/')[0]).toBe(cleanup.targetKind);
      const target = (await cleanup.targets(ctx)).find((t: CleanupTarget) => t.targetKey === targetKey)!;
      expect(target).toMatchObject({ targetKey, pluginName: plugin.name });

      const listed = async () =>
        (await cleanup.inventory(ctx, target)).items.find((i) => i.name === recorded.namespaceName);
      expect((await cleanup.inventory(ctx, target)).complete).toBe(true);
      // The item in tend's terms, whatever the plugin keeps: what the server reconciles and plans from.
      expect(await listed()).toMatchObject({
        uid: recorded.namespaceUid,
        state: 'active',
        managedByTend: true,
        project: recorded.project,
        environment: recorded.environment,
        adopted: false,
      });

      const job = {
        id: 'contract-job',
        action: 'delete' as const,
        project: recorded.project,
        environment: recorded.environment,
        namespaceName: recorded.namespaceName,
        namespaceUid: recorded.namespaceUid!,
        expectedLastActivityAt: new Date(Date.now() + 60_000).toISOString(),
        target: recorded.target as Record<string, unknown>,
        dryRun: false,
      };
      const wrong = await cleanup.verifyAndClean(ctx, target, { ...job, namespaceUid: 'not-the-uid' });
      expect(wrong.outcome).toBe('cancelled');
      expect(events.some((e) => e.cause === 'deleted')).toBe(false);
      expect(await listed()).toBeDefined();

      expect((await cleanup.verifyAndClean(ctx, target, job)).outcome).toBe('done');
      expect(events.at(-1)).toMatchObject({
        namespaceName: recorded.namespaceName,
        state: 'missing',
        cause: 'deleted',
        pluginName: plugin.name,
      });
      expect(await listed()).toBeUndefined();
      expect(await cleanup.verifyAndClean(ctx, target, job)).toMatchObject({ outcome: 'done' });
    });
  },
);
