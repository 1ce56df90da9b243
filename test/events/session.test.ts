import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { SessionBus } from '../../src/events/bus.js';
import type { NamespaceStatusPayload, TendEvent } from '../../src/events/catalog.js';
import { checkEvent } from '../../src/events/catalog.js';
import { readSessionLog } from '../../src/events/local-log.js';
import { Session } from '../../src/events/session.js';
import { executeCommand } from '../../src/commands/execute.js';
import { makeProject, removeProjects, waitFor } from '../helpers/project.js';

afterEach(removeProjects);

const ns = (overrides: Partial<NamespaceStatusPayload> = {}): NamespaceStatusPayload => ({
  pluginName: 'kubernetes',
  providerName: 'kubernetes',
  namespaceName: 'shop-dev',
  namespaceUid: 'uid-1',
  state: 'ready',
  role: 'app',
  cause: 'observed',
  target: { kind: 'kubernetes', clusterId: 'c1', server: 'https://k', context: 'k' },
  project: 'shop',
  environment: 'dev',
  ...overrides,
});

describe('namespaceStatus deduplication', () => {
  it('passes the same (plugin, target, namespace, uid, state) once per session; a change of state always passes', () => {
    const bus = new SessionBus();
    const seen: string[] = [];
    bus.on('namespaceStatus', (e) => {
      const p = (e as TendEvent<'namespaceStatus'>).payload;
      seen.push(
        `${p.namespaceName}/${p.namespaceUid}/${p.state}/${p.target.kind === 'kubernetes' ? p.target.clusterId : ''}`,
      );
    });
    bus.emit('namespaceStatus', ns());
    bus.emit('namespaceStatus', ns({ cause: 'created' })); // same key and state: coalesced
    bus.emit('namespaceStatus', ns({ state: 'terminating' }));
    bus.emit('namespaceStatus', ns({ state: 'missing', cause: 'deleted' }));
    bus.emit('namespaceStatus', ns({ namespaceUid: 'uid-2' })); // re-created: a new uid passes
    bus.emit(
      'namespaceStatus',
      ns({ target: { kind: 'kubernetes', clusterId: 'c2', server: 's', context: 'c' } }),
    );
    bus.emit('namespaceStatus', ns({ state: 'missing' })); // same as the last state of uid-1: coalesced
    expect(seen).toEqual([
      'shop-dev/uid-1/ready/c1',
      'shop-dev/uid-1/terminating/c1',
      'shop-dev/uid-1/missing/c1',
      'shop-dev/uid-2/ready/c1',
      'shop-dev/uid-1/ready/c2',
    ]);
  });
});

describe('the session lifecycle', () => {
  it('records start, heartbeats while running, and completion, each a valid event', async () => {
    const root = makeProject({});
    const session = new Session({
      projectRoot: root,
      heartbeatMs: 20,
      started: {
        command: 'deploy',
        args: ['api'],
        project: 'shop',
        environment: 'dev',
        namespace: 'shop-dev',
        user: 'ada',
        hostId: 'host-1',
        cliVersion: '0.1.0',
        cleanupPolicy: { afterInactivity: '8h', action: 'delete' },
      },
    });
    const beats: TendEvent[] = [];
    session.bus.on('sessionHeartbeat', (e) => beats.push(e));
    await waitFor(() => beats.length >= 2, 'two heartbeats');
    session.complete({ succeeded: 1, cached: 0, failed: 0, aborted: 0 });
    const { events } = readSessionLog(path.join(root, '.tend', 'events', `${session.id}.jsonl`));
    expect(events[0]).toMatchObject({ type: 'sessionStarted', sessionId: session.id });
    expect(events.at(-1)).toMatchObject({ type: 'sessionCompleted', payload: { succeeded: 1 } });
    expect(events.filter((e) => e.type === 'sessionHeartbeat').length).toBeGreaterThanOrEqual(2);
    for (const event of events) expect(checkEvent(event)).toEqual([]);
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids); // ULIDs from one session sort in emission order
  });

  it('starts a command session with the command, environment, namespace, user, version and cleanup policy', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: shop
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: shop-dev
    cleanup: { afterInactivity: 3d, action: pause }
providers: [{ name: exec }]
`,
    });
    const result = await executeCommand('build', [], { root });
    const { events } = readSessionLog(path.join(root, '.tend', 'events', `${result.data.sessionId}.jsonl`));
    expect(events[0]!.payload).toMatchObject({
      command: 'build',
      project: 'shop',
      environment: 'dev',
      namespace: 'shop-dev',
      cleanupPolicy: { afterInactivity: '3d', action: 'pause' },
    });
    expect((events[0]!.payload as { cliVersion: string }).cliVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(events.at(-1)!.type).toBe('sessionCompleted');
  });
});
