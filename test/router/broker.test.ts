import { describe, expect, it } from 'vitest';
import { SessionBus } from '../../src/events/bus.js';
import { PluginEventBroker } from '../../src/router/broker.js';
import type { TendEvent } from '../../src/events/catalog.js';
import type { TendError } from '../../src/errors.js';

const metadata = { pluginName: 'acme', providerName: 'acme-eu', handler: 'deploy', actionRef: 'deploy.api' };

function caught(fn: () => void): TendError {
  try {
    fn();
  } catch (error) {
    return error as TendError;
  }
  throw new Error('expected an error');
}

describe('the plugin event broker', () => {
  it('rejects an event type the plugin did not declare, naming the plugin', () => {
    const broker = new PluginEventBroker(new SessionBus(), new Set(['log']), metadata);
    const error = caught(() =>
      broker.emit('sessionHeartbeat', { project: 'p', environment: 'e', namespace: 'n', uptimeMs: 1 }),
    );
    expect(error.code).toBe('TEND_EVENT_UNDECLARED');
    expect(error.message).toMatch(
      /plugin "acme" emitted event type "sessionHeartbeat" from deploy without declaring it/,
    );
  });

  it('rejects an invalid payload, naming the plugin and the field', () => {
    const broker = new PluginEventBroker(new SessionBus(), new Set(['namespaceStatus']), metadata);
    const error = caught(() =>
      broker.emit('namespaceStatus', {
        ...namespace(),
        state: 'gone',
      } as never),
    );
    expect(error.code).toBe('TEND_EVENT_INVALID');
    expect(error.message).toMatch(
      /plugin "acme" emitted an invalid "namespaceStatus" event from deploy: \/state/,
    );
  });

  it('stamps the emitter metadata and records every declared type on the bus straight away', () => {
    const bus = new SessionBus();
    const seen: TendEvent[] = [];
    bus.on('*', (e) => seen.push(e));
    // No subscription or setup of any kind: a declared type emitted during the call is recorded.
    const broker = new PluginEventBroker(bus, new Set(['log', 'namespaceStatus']), metadata);
    const payload = { level: 'info' as const, message: 'hello' };
    broker.emit('log', payload);
    broker.emit('namespaceStatus', namespace());
    expect(seen.map((e) => e.type)).toEqual(['log', 'namespaceStatus']);
    expect(seen[0]!.payload).toEqual({ level: 'info', message: 'hello', ...metadata });
    expect(seen[1]!.payload).toMatchObject(metadata);
    // The plugin's own object is left as it was: it may emit it again.
    expect(payload).toEqual({ level: 'info', message: 'hello' });
    broker.emit('log', payload);
    expect(seen).toHaveLength(3);
  });

  it('leaves actionRef out for a call without an action', () => {
    const bus = new SessionBus();
    const seen: TendEvent[] = [];
    bus.on('*', (e) => seen.push(e));
    const broker = new PluginEventBroker(bus, new Set(['namespaceStatus']), {
      pluginName: 'acme',
      providerName: 'acme-eu',
      handler: 'init',
    });
    broker.emit('namespaceStatus', namespace());
    expect(seen[0]!.payload).not.toHaveProperty('actionRef');
    expect(seen[0]!.payload).toMatchObject({ pluginName: 'acme', providerName: 'acme-eu', handler: 'init' });
  });

  it.each(['pluginName', 'providerName', 'handler', 'actionRef'])(
    'rejects a payload that sets %s itself: only the framework stamps emitter metadata',
    (field) => {
      const bus = new SessionBus();
      const seen: TendEvent[] = [];
      bus.on('*', (e) => seen.push(e));
      const broker = new PluginEventBroker(bus, new Set(['namespaceStatus']), metadata);
      const error = caught(() => broker.emit('namespaceStatus', { ...namespace(), [field]: 'forged' }));
      expect(error.code).toBe('TEND_EVENT_INVALID');
      expect(error.message).toContain(`it sets ${field}, which only the framework stamps`);
      expect(seen).toEqual([]);
    },
  );

  it('an emit after the call returned is an error naming the plugin, handler and type; nothing is recorded', () => {
    const bus = new SessionBus();
    const seen: TendEvent[] = [];
    bus.on('*', (e) => seen.push(e));
    const broker = new PluginEventBroker(bus, new Set(['log']), metadata);
    broker.close();
    const error = caught(() => broker.emit('log', { level: 'info', message: 'late' }));
    expect(error.code).toBe('TEND_EVENT_UNDELIVERABLE');
    expect(error.message).toMatch(
      /plugin "acme" emitted a "log" event from deploy after its deploy call returned/,
    );
    expect(seen).toEqual([]);
  });

  it('an emit once the session bus is closed is an error, never a silent loss', () => {
    const bus = new SessionBus();
    const broker = new PluginEventBroker(bus, new Set(['log']), metadata);
    bus.close();
    const error = caught(() => broker.emit('log', { level: 'info', message: 'too late' }));
    expect(error.code).toBe('TEND_EVENT_UNDELIVERABLE');
    expect(error.message).toMatch(/after session \S+ ended/);
    // The bus itself refuses too (framework events emitted after the session ended).
    const direct = caught(() =>
      bus.emit('sessionHeartbeat', { project: 'p', environment: 'e', namespace: 'n', uptimeMs: 1 }),
    );
    expect(direct.code).toBe('TEND_EVENT_UNDELIVERABLE');
  });
});

function namespace() {
  return {
    namespaceName: 'shop',
    state: 'ready' as const,
    role: 'app' as const,
    cause: 'observed' as const,
    target: { kind: 'local' as const, hostId: 'h', path: '/x' },
    project: 'shop',
    environment: 'dev',
  };
}
