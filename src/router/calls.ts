/**
 * One handler call, the same for every caller of the router: a fresh event broker for the
 * plugin's declared types (emitting straight on the session bus), the call tracked as in flight,
 * an error that is not a TendError turned into one naming the plugin and handler, and in the
 * end, whatever the outcome, the broker closed and the bus flushed.
 */
import { TendError } from '../errors.js';
import type { SessionBus } from '../events/bus.js';
import type { EventPayloads, EventType } from '../events/catalog.js';
import type { PluginDefinition, PluginLog, PluginPayload } from '../plugin/types.js';
import { PluginEventBroker } from './broker.js';

interface InFlightCall {
  plugin: string;
  handler: string;
  actionRef?: string;
  startedAt: number;
}

export interface CallMetadata {
  providerName: string;
  handler: string;
  actionRef?: string;
}

export class HandlerCalls {
  private readonly inFlight = new Set<InFlightCall>();

  constructor(readonly bus: SessionBus) {}

  /** `(plugin) handler actionRef` for each call still running, for timeouts and exits with work pending. */
  describeInFlight(): string[] {
    return [...this.inFlight].map(
      (c) =>
        `(${c.plugin}) ${c.handler}${c.actionRef ? ` ${c.actionRef}` : ''} for ${Date.now() - c.startedAt} ms`,
    );
  }

  async run<T>(
    plugin: PluginDefinition,
    metadata: CallMetadata,
    invoke: (broker: PluginEventBroker) => Promise<T>,
  ): Promise<T> {
    const { handler, actionRef } = metadata;
    const broker = new PluginEventBroker(this.bus, declaredTypes(plugin), {
      pluginName: plugin.name,
      ...metadata,
    });
    const call: InFlightCall = { plugin: plugin.name, handler, actionRef, startedAt: Date.now() };
    this.inFlight.add(call);
    try {
      return await invoke(broker);
    } catch (error) {
      if (error instanceof TendError) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new TendError('TEND_ACTION_FAILED', message, {
        plugin: plugin.name,
        handler,
        actionRef,
        cause: error,
      });
    } finally {
      this.inFlight.delete(call);
      broker.close();
      // Events of this call reach the OS before the call returns (docs/design.md#events).
      this.bus.flush();
    }
  }
}

const declaredByPlugin = new WeakMap<PluginDefinition, ReadonlySet<EventType>>();

/** The event types a plugin may emit: those it declares, and `log` (what `ctx.log` emits, which every plugin has). */
function declaredTypes(plugin: PluginDefinition): ReadonlySet<EventType> {
  let declared = declaredByPlugin.get(plugin);
  if (!declared) declaredByPlugin.set(plugin, (declared = new Set<EventType>([...plugin.emits, 'log'])));
  return declared;
}

/** `ctx.log`: lines go through the broker like any plugin event, so they carry the same metadata. */
export function pluginLog(broker: PluginEventBroker): PluginLog {
  const emit = (level: EventPayloads['log']['level'], message: string, stream?: 'stdout' | 'stderr') => {
    const payload: PluginPayload<'log'> = { level, message: message.slice(0, 65_536) };
    if (stream) payload.stream = stream;
    broker.emit('log', payload);
  };
  return {
    debug: (m) => emit('debug', m),
    info: (m) => emit('info', m),
    warn: (m) => emit('warn', m),
    error: (m) => emit('error', m),
    // A child's stderr is a warning, whatever it says; stdout is information.
    output: (stream, line) => emit(stream === 'stderr' ? 'warn' : 'info', line, stream),
  };
}
