/**
 * The plugin event broker (`ctx.events`): one per handler call or provider call. It accepts only
 * the event types the plugin declared, validates each payload against the catalogue, adds the
 * emitter metadata and re-emits on the session bus through the listeners the router subscribed.
 * `close()` removes those listeners, so thousands of calls leave nothing behind.
 */
import { TendError } from '../errors.js';
import type { EventBroker } from '../plugin/types.js';
import type { SessionBus } from '../events/bus.js';
import { checkPayload, eventCatalog, type EventPayloads, type EventType } from '../events/catalog.js';

export interface EmitterMetadata {
  pluginName: string;
  providerName: string;
  handler: string;
  actionRef?: string;
}

type Forwarder = (payload: Record<string, unknown>) => void;

/** Types whose payload carries emitter metadata fields (the rest are framework events). */
const typesWithMetadata: ReadonlySet<EventType> = new Set(
  (Object.keys(eventCatalog) as EventType[]).filter((t) => 'pluginName' in eventCatalog[t].properties),
);

export class PluginEventBroker implements EventBroker {
  private readonly forwarders = new Map<EventType, Forwarder>();
  private closed = false;

  constructor(
    private readonly bus: SessionBus,
    private readonly declared: ReadonlySet<EventType>,
    private readonly metadata: EmitterMetadata,
  ) {}

  /** Called by the router for each declared type when the call starts. */
  subscribe(type: EventType, forwarder: Forwarder): void {
    this.forwarders.set(type, forwarder);
  }

  listenerCount(): number {
    return this.forwarders.size;
  }

  emit<K extends EventType>(type: K, payload: EventPayloads[K]): void {
    const { pluginName, handler } = this.metadata;
    if (!this.declared.has(type)) {
      throw new TendError(
        'TEND_EVENT_UNDECLARED',
        `plugin "${pluginName}" emitted event type "${type}" from ${handler} without declaring it; ` +
          `declared: ${[...this.declared].join(', ') || '(none)'}`,
        { plugin: pluginName, handler, actionRef: this.metadata.actionRef },
      );
    }
    const stamped: Record<string, unknown> = typesWithMetadata.has(type)
      ? withMetadata(payload as Record<string, unknown>, this.metadata)
      : (payload as Record<string, unknown>);
    const problems = checkPayload(type, stamped);
    if (problems.length > 0) {
      const first = problems[0]!;
      throw new TendError(
        'TEND_EVENT_INVALID',
        `plugin "${pluginName}" emitted an invalid "${type}" event from ${handler}: ${first.path}: ${first.message}`,
        { plugin: pluginName, handler, actionRef: this.metadata.actionRef, detail: { problems } },
      );
    }
    const forward = this.forwarders.get(type);
    if (forward) {
      forward(stamped);
    } else if (this.closed) {
      // Emitted after the call returned (a late callback): still recorded, never lost.
      this.bus.emit(type, stamped as EventPayloads[K]);
    }
  }

  close(): void {
    this.closed = true;
    this.forwarders.clear();
  }
}

/**
 * Stamps the metadata onto the payload object itself. Copying it with a spread makes the copy a
 * dictionary-mode object that validates 20× slower; plugins pass a fresh object per emit.
 */
function withMetadata(payload: Record<string, unknown>, metadata: EmitterMetadata): Record<string, unknown> {
  payload.pluginName = metadata.pluginName;
  payload.providerName = metadata.providerName;
  payload.handler = metadata.handler;
  if (metadata.actionRef !== undefined) payload.actionRef = metadata.actionRef;
  return payload;
}
