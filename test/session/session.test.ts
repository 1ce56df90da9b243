import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { SessionBus } from '../../src/events/bus.js';
import type { NamespaceStatusPayload, TendEvent } from '../../src/events/catalog.js';
import { checkEvent } from '../../src/events/catalog.js';
import { readSessionLog } from '../../src/events/local-log.js';
import { Session } from '../../src/session/session.js';
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
  function recorder() {
    const bus = new SessionBus();
    const seen: string[] = [];
    bus.on('namespaceStatus', (e) => {
      const p = (e as TendEvent<'namespaceStatus'>).payload;
      const target = p.target.kind === 'kubernetes' ? p.target.clusterId : p.target.path;
      seen.push(
        `${target}/${p.namespaceName}/${p.namespaceUid ?? '-'}/${p.state}/${p.cause}${p.detail ? ` ${JSON.stringify(p.detail)}` : ''}`,
      );
    });
    return { bus, seen };
  }

  it('records a deletion after a re-creation: missing → ready (uid X) → missing all pass', () => {
    const { bus, seen } = recorder();
    bus.emit('namespaceStatus', ns({ namespaceUid: undefined, state: 'missing' }));
    bus.emit('namespaceStatus', ns({ namespaceUid: 'uid-x', state: 'ready', cause: 'created' }));
    bus.emit('namespaceStatus', ns({ namespaceUid: undefined, state: 'missing' }));
    expect(seen).toEqual([
      'c1/shop-dev/-/missing/observed',
      'c1/shop-dev/uid-x/ready/created',
      'c1/shop-dev/-/missing/observed',
    ]);
  });

  it('passes a new uid alone: ready with uid X, then ready with uid Y (same cause), are two events, also in the log', () => {
    const { bus, seen } = recorder();
    bus.emit('namespaceStatus', ns({ namespaceUid: 'uid-x' }));
    bus.emit('namespaceStatus', ns({ namespaceUid: 'uid-y' }));
    bus.emit('namespaceStatus', ns({ namespaceUid: 'uid-y' })); // a repeat of the latest
    expect(seen).toEqual(['c1/shop-dev/uid-x/ready/observed', 'c1/shop-dev/uid-y/ready/observed']);

    const root = makeProject({});
    const session = new Session({
      projectRoot: root,
      started: {
        command: 'deploy',
        args: [],
        project: 'shop',
        environment: 'dev',
        namespace: 'shop-dev',
        user: 'ada',
        hostId: 'host-1',
        cliVersion: '0.1.0',
      },
    });
    session.bus.emit('namespaceStatus', ns({ namespaceUid: 'uid-x', cause: 'created' }));
    session.bus.emit('namespaceStatus', ns({ namespaceUid: 'uid-y', cause: 'created' }));
    session.complete({ succeeded: 1, cached: 0, failed: 0, aborted: 0 });
    const { events } = readSessionLog(path.join(root, '.tend', 'events', `${session.id}.jsonl`));
    expect(
      events
        .filter((e) => e.type === 'namespaceStatus')
        .map((e) => (e as TendEvent<'namespaceStatus'>).payload.namespaceUid),
    ).toEqual(['uid-x', 'uid-y']);
  });

  it('passes a change in detail alone (a namespace adopted mid-session)', () => {
    const { bus, seen } = recorder();
    bus.emit('namespaceStatus', ns({ detail: { adopted: false, managedBy: null } }));
    bus.emit('namespaceStatus', ns({ detail: { adopted: true, managedBy: null } }));
    expect(seen).toEqual([
      'c1/shop-dev/uid-1/ready/observed {"adopted":false,"managedBy":null}',
      'c1/shop-dev/uid-1/ready/observed {"adopted":true,"managedBy":null}',
    ]);
  });

  it('coalesces only a repeat of the latest admitted event for that namespace', () => {
    const { bus, seen } = recorder();
    bus.emit('namespaceStatus', ns({ detail: { a: 1, b: 2 } }));
    // Same fact, other emitter metadata and key order: a duplicate.
    bus.emit('namespaceStatus', ns({ handler: 'deploy', actionRef: 'deploy.api', detail: { b: 2, a: 1 } }));
    bus.emit('namespaceStatus', ns({ cause: 'created', detail: { a: 1, b: 2 } })); // another cause
    bus.emit('namespaceStatus', ns({ role: 'system', cause: 'created', detail: { a: 1, b: 2 } })); // another role
    bus.emit('namespaceStatus', ns({ state: 'terminating', cause: 'deleted' }));
    bus.emit('namespaceStatus', ns({ state: 'terminating', cause: 'deleted' })); // repeat of the latest
    bus.emit('namespaceStatus', ns({ detail: { a: 1, b: 2 } })); // repeats an older one, not the latest
    // Another cluster and another namespace each have a latest of their own.
    bus.emit(
      'namespaceStatus',
      ns({ target: { kind: 'kubernetes', clusterId: 'c2', server: 's', context: 'c' } }),
    );
    bus.emit('namespaceStatus', ns({ namespaceName: 'shop-qa' }));
    bus.emit('namespaceStatus', ns({ detail: { a: 1, b: 2 } })); // still the latest of c1/shop-dev
    expect(seen).toEqual([
      'c1/shop-dev/uid-1/ready/observed {"a":1,"b":2}',
      'c1/shop-dev/uid-1/ready/created {"a":1,"b":2}',
      'c1/shop-dev/uid-1/ready/created {"a":1,"b":2}',
      'c1/shop-dev/uid-1/terminating/deleted',
      'c1/shop-dev/uid-1/ready/observed {"a":1,"b":2}',
      'c2/shop-dev/uid-1/ready/observed',
      'c1/shop-qa/uid-1/ready/observed',
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
