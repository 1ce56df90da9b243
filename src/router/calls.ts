/**
 * One handler call, the same for every caller of the router: a fresh event broker for the
 * plugin's declared types (emitting straight on the session bus), the call tracked as in flight,
 * an error that is not a TendError turned into one naming the plugin and handler, and in the
 * end, whatever the outcome, the broker closed and the bus flushed.
 */
import { TendError } from '../errors.js';
import type { SessionBus } from '../events/bus.js';
import type { AnyEventType, EventPayloads } from '../events/catalog.js';
import type { PluginDefinition, PluginLog, PluginPayload } from '../plugin/types.js';
import { PluginEventBroker } from './broker.js';
import type { PluginEventTypeDefinition } from '../events/plugin-types.js';

/** What a plugin may emit: every type it declared, and its own types' declarations. */
interface DeclaredTypes {
  types: ReadonlySet<AnyEventType>;
  own: ReadonlyMap<string, PluginEventTypeDefinition>;
}

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
  /** The project and environment of the call, stamped on the plugin's own event types. */
  project?: string;
  environment?: string;
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
    const declared = declaredTypes(plugin);
    const broker = new PluginEventBroker(
      this.bus,
      declared.types,
      { pluginName: plugin.name, ...metadata },
      declared.own,
    );
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

const declaredByPlugin = new WeakMap<PluginDefinition, DeclaredTypes>();

/**
 * The event types a plugin may emit: those it lists in `emits`, its own (`eventTypes`), and `log`
 * (what `ctx.log` emits, which every plugin has).
 */
function declaredTypes(plugin: PluginDefinition): DeclaredTypes {
  let declared = declaredByPlugin.get(plugin);
  if (!declared) {
    const own = new Map((plugin.eventTypes ?? []).map((d) => [d.name, d]));
    declared = { types: new Set<AnyEventType>([...plugin.emits, ...own.keys(), 'log']), own };
    declaredByPlugin.set(plugin, declared);
  }
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
