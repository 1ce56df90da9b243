/**
 * The event contract: every handler of every registered plugin, called through the router in a
 * session of its own, reports the namespaces it touches on the session bus — the expected
 * `namespaceStatus` events, with the right state, cause and role — and, called again in the same
 * session, repeats none of them. A handler a plugin registers without a row here fails this test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openProject, resolveAction, startSession } from '../../src/commands/context.js';
import type { NamespaceStatusPayload, TendEvent } from '../../src/events/catalog.js';
import { ActionGraph } from '../../src/graph/graph.js';
import { computeVersions } from '../../src/graph/version.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import {
  actionHandlerNames,
  optionalActionHandlerNames,
  providerHandlerNames,
  type ActionKind,
} from '../../src/plugin/types.js';
import { makeProject, removeProjects } from '../helpers/project.js';
import { execContract } from './contract/exec.js';
import { kubernetesContract } from './contract/kubernetes.js';
import type { ContractRow, PluginContract, PluginFixture } from './contract/types.js';

const contracts: PluginContract[] = [execContract, kubernetesContract];

/** Every handler a plugin registers, named as the rows name them. */
function registeredHandlers(pluginName: string): string[] {
  const plugin = builtinPlugins().find((p) => p.name === pluginName)!;
  const names = providerHandlerNames.map((h) => `provider.${h}`);
  for (const type of plugin.actionTypes) {
    for (const [kind, def] of Object.entries(type.kinds)) {
      if (!def) continue;
      for (const handler of actionHandlerNames[kind as ActionKind])
        names.push(`${kind}.${type.name}.${handler}`);
      // Optional handlers (Deploy.getLogs) need a row when the plugin has them.
      for (const handler of optionalActionHandlerNames[kind as ActionKind] as string[])
        if (handler in def.handlers) names.push(`${kind}.${type.name}.${handler}`);
    }
  }
  return names.sort();
}

async function inSession(
  root: string,
  fixture: PluginFixture,
  body: (s: Awaited<ReturnType<typeof open>>, seenSoFar: () => number) => Promise<void>,
) {
  const s = await open(root, fixture);
  const seen: TendEvent<'namespaceStatus'>[] = [];
  const off = s.session.bus.on('namespaceStatus', (e) => seen.push(e as TendEvent<'namespaceStatus'>));
  try {
    await body(s, () => seen.length);
    await s.close({});
  } catch (error) {
    await s.close({ error });
    throw error;
  } finally {
    off();
  }
  return seen.map((e) => e.payload);
}

async function open(root: string, fixture: PluginFixture) {
  const opened = await openProject({ root, var: fixture.vars });
  const started = startSession(opened, 'contract-test', []);
  return { opened, ...started };
}

async function callHandler(s: Awaited<ReturnType<typeof open>>, pluginName: string, row: ContractRow) {
  const provider = s.router.providers.find((p) => p.plugin.name === pluginName)!;
  // Every entry point initialises its providers first, through the router.
  await s.router.initProviders();
  const [scope, ...rest] = row.handler.split('.');
  if (scope === 'provider') {
    const handler = rest[0]!;
    if (handler !== 'init') await s.router.callProvider(provider, handler as 'prepareEnvironment');
    return;
  }
  const handler = rest[1]!;
  const graph = new ActionGraph(s.opened.actions);
  const versions = computeVersions(graph, [row.action!]);
  const action = resolveAction(s.opened, graph, versions, row.action!, {});
  if (handler === 'getLogs') {
    await s.router.actionLogs(action, { follow: false, onLine: () => {} }).catch(() => undefined);
    return;
  }
  await s.router.callAction(action, handler as 'getStatus', { force: false }).catch(() => undefined);
}

function summarise(events: NamespaceStatusPayload[], appNamespace: string) {
  return events
    .map((e) => ({
      namespace: e.namespaceName === appNamespace ? 'app' : e.namespaceName,
      state: e.state,
      cause: e.cause,
      role: e.role,
    }))
    .sort((a, b) => `${a.namespace}${a.state}`.localeCompare(`${b.namespace}${b.state}`));
}

describe.each(contracts)('the event contract of plugin $plugin', (contract) => {
  let fixtures: Record<string, PluginFixture>;
  beforeAll(async () => {
    fixtures = await contract.fixtures();
  });
  afterAll(async () => {
    for (const fixture of Object.values(fixtures ?? {})) await fixture.teardown?.();
    removeProjects();
  });

  it('has a row for every handler the plugin registers', () => {
    const covered = new Set(contract.rows.map((r) => r.handler));
    expect(registeredHandlers(contract.plugin).filter((h) => !covered.has(h))).toEqual([]);
  });

  it.each(contract.rows)('$handler ($given) reports $expect.length namespace event(s)', async (row) => {
    const fixture = fixtures[row.variant ?? 'default']!;
    const root = makeProject(fixture.files);
    const previousEnv = { ...process.env };
    Object.assign(process.env, fixture.env);
    try {
      if (row.given === 'prepared') {
        await inSession(root, fixture, async (s) => {
          await s.router.initProviders();
          for (const p of s.router.providers) await s.router.callProvider(p, 'prepareEnvironment');
        });
      }
      // The handler twice in one session: the second call repeats nothing the first recorded.
      let firstCall = 0;
      const events = await inSession(root, fixture, async (s, seenSoFar) => {
        await callHandler(s, contract.plugin, row);
        firstCall = seenSoFar();
        if (!row.handler.endsWith('cleanupEnvironment')) await callHandler(s, contract.plugin, row);
      });
      const own = events.slice(0, firstCall).filter((e) => e.pluginName === contract.plugin);
      const { environment } = await openProject({ root, var: fixture.vars });
      expect(summarise(own, environment.namespace)).toEqual(
        [...row.expect].sort((a, b) => `${a.namespace}${a.state}`.localeCompare(`${b.namespace}${b.state}`)),
      );
      // At most one event per namespace, and only where the first call left it `created`: the
      // namespace is now observed as it was (a repeat of the latest event is coalesced).
      const second = events.slice(firstCall).filter((e) => e.pluginName === contract.plugin);
      const latest = new Map(own.map((e) => [e.namespaceName, e]));
      expect(second.map((e) => ({ namespace: e.namespaceName, state: e.state, cause: e.cause }))).toEqual(
        [...latest.values()]
          .filter((e) => e.cause === 'created')
          .map((e) => ({ namespace: e.namespaceName, state: e.state, cause: 'observed' })),
      );
      for (const e of [...own, ...second]) {
        expect(e.project).toBe('contract');
        expect(e.providerName).toBeTruthy();
        expect(e.handler).toBe(row.handler.split('.').at(-1));
        if (row.action) expect(e.actionRef).toBe(row.action);
      }
    } finally {
      process.env = previousEnv;
    }
  });
});

it('covers every registered plugin', () => {
  expect(
    builtinPlugins()
      .map((p) => p.name)
      .sort(),
  ).toEqual(contracts.map((c) => c.plugin).sort());
});
