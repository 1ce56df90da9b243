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
        namespaceName: 'shop',
        state: 'gone',
        role: 'app',
        cause: 'observed',
        target: { kind: 'local', hostId: 'h', path: '/x' },
        project: 'shop',
        environment: 'dev',
      } as never),
    );
    expect(error.code).toBe('TEND_EVENT_INVALID');
    expect(error.message).toMatch(
      /plugin "acme" emitted an invalid "namespaceStatus" event from deploy: \/state/,
    );
  });

  it('adds the emitter metadata and re-emits through the subscribed forwarder only while the call lasts', () => {
    const bus = new SessionBus();
    const seen: TendEvent[] = [];
    bus.on('*', (e) => seen.push(e));
    const broker = new PluginEventBroker(bus, new Set(['log']), metadata);
    broker.subscribe('log', (payload) => bus.emit('log', payload as never));
    broker.emit('log', { level: 'info', message: 'hello' });
    expect(seen[0]!.payload).toEqual({ level: 'info', message: 'hello', ...metadata });
    broker.close();
    expect(broker.listenerCount()).toBe(0);
    // A late emit (after the call returned) is still recorded, never lost.
    broker.emit('log', { level: 'info', message: 'late' });
    expect(seen.map((e) => (e.payload as { message: string }).message)).toEqual(['hello', 'late']);
  });
});
