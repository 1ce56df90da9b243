/**
 * The router's brokers end to end: what a plugin emits from any call — provider `init` included —
 * reaches the session's local log and outbox, stamped by the framework; an emit after the call
 * returned is an error.
 */
import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { executeCommand } from '../../src/commands/execute.js';
import { openProject, startSession } from '../../src/commands/context.js';
import type { TendEvent } from '../../src/events/catalog.js';
import { listSessionLogs, readSessionLog } from '../../src/events/local-log.js';
import { readPending } from '../../src/outbox/read.js';
import { listSegmentIds } from '../../src/outbox/segments.js';
import type { EventBroker, PluginContext } from '../../src/plugin/types.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = `kind: Project
name: routed
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: routed-dev }]
providers: [{ name: noop }]
---
kind: Build
type: noop
name: a
spec: {}
`;

function fromInit(ctx: PluginContext) {
  return {
    namespaceName: 'routed-init',
    state: 'ready' as const,
    role: 'system' as const,
    cause: 'observed' as const,
    target: { kind: 'local' as const, hostId: ctx.hostId, path: '/init' },
    project: ctx.environment.project,
    environment: ctx.environment.name,
  };
}

describe('events emitted through the router', () => {
  it('a namespaceStatus from provider init reaches the local log and the outbox, stamped', async () => {
    const root = makeProject({ 'tend.yml': project });
    const noop = createNoopPlugin({ emits: ['log', 'namespaceStatus'] });
    noop.plugin.provider.init = async (ctx) => {
      ctx.events.emit('namespaceStatus', fromInit(ctx));
      return undefined;
    };
    const result = await executeCommand('build', [], { root }, [noop.plugin]);
    expect(result.exitCode).toBe(0);

    const expected = {
      namespaceName: 'routed-init',
      pluginName: 'noop',
      providerName: 'noop',
      handler: 'init',
    };
    const [log] = listSessionLogs(path.join(root, '.tend', 'events'));
    const logged = readSessionLog(log!.file).events.filter((e) => e.type === 'namespaceStatus');
    expect(logged).toHaveLength(1);
    expect(logged[0]!.payload).toMatchObject(expected);
    expect(logged[0]!.payload).not.toHaveProperty('actionRef');

    const outboxDir = path.join(root, '.tend', 'outbox');
    const streamed = listSegmentIds(outboxDir).flatMap((id) => readPending(outboxDir, id).events);
    const outboxed = streamed
      .filter((e) => e.type === 'namespaceStatus')
      .map((e) => JSON.parse(e.text) as TendEvent<'namespaceStatus'>);
    expect(outboxed.map((e) => e.id)).toEqual(logged.map((e) => e.id));
    expect(outboxed[0]!.payload).toMatchObject(expected);
  });

  it('an emit through a broker after its call returned is TEND_EVENT_UNDELIVERABLE, and nothing is recorded', async () => {
    const root = makeProject({ 'tend.yml': project });
    const noop = createNoopPlugin({ emits: ['log', 'namespaceStatus'] });
    let kept: { events: EventBroker; ctx: PluginContext } | undefined;
    noop.plugin.provider.init = async (ctx) => {
      kept = { events: ctx.events, ctx };
      return undefined;
    };
    const opened = await openProject({ root }, [noop.plugin]);
    const s = startSession(opened, 'late-emit', []);
    const seen: TendEvent[] = [];
    s.session.bus.on('*', (e) => seen.push(e));
    await s.router.initProviders();
    let error: unknown;
    try {
      kept!.events.emit('namespaceStatus', fromInit(kept!.ctx));
    } catch (e) {
      error = e;
    }
    await s.close({});
    expect(error).toMatchObject({ code: 'TEND_EVENT_UNDELIVERABLE' });
    expect((error as Error).message).toMatch(
      /plugin "noop" emitted a "namespaceStatus" event from init after its init call returned/,
    );
    expect(seen.filter((e) => e.type === 'namespaceStatus')).toEqual([]);
  });
});
