/**
 * The plugin event broker (`ctx.events`): one per handler call or provider call, created only by
 * the router. It accepts only the event types the plugin declared, stamps the emitter metadata
 * (which only the framework sets), validates each payload against the catalogue — or, for the
 * plugin's own types, against the schema it declared — and emits it straight on the session bus,
 * so the event is recorded before `emit` returns. A refused event is an error of that emit alone
 * (naming the plugin and the type): the events before and after it are recorded. After the call
 * ended (`close()`), or once the session's bus is closed, an emit is an error: never a silent loss.
 */
import { TendError } from '../errors.js';
import { emitterMetadataFields, type EventBroker, type PluginPayload } from '../plugin/types.js';
import type { SessionBus } from '../events/bus.js';
import {
  checkPayload,
  eventCatalog,
  isEventType,
  type AnyEventType,
  type EventPayloads,
  type EventType,
} from '../events/catalog.js';
import {
  checkPluginPayload,
  pluginEventMetadataFields,
  type PluginEventPayload,
  type PluginEventType,
  type PluginEventTypeDefinition,
} from '../events/plugin-types.js';
import { storableProblem } from '../storable.js';

export interface EmitterMetadata {
  pluginName: string;
  providerName: string;
  handler: string;
  actionRef?: string;
  project?: string;
  environment?: string;
}

/** Types whose payload carries emitter metadata fields (the rest are framework events). */
const typesWithMetadata: ReadonlySet<EventType> = new Set(
  (Object.keys(eventCatalog) as EventType[]).filter((t) => 'pluginName' in eventCatalog[t].properties),
);

export class PluginEventBroker implements EventBroker {
  private closed = false;

  constructor(
    private readonly bus: SessionBus,
    /** Every type the plugin may emit (its own types included). */
    private readonly declared: ReadonlySet<string>,
    private readonly metadata: EmitterMetadata,
    /** The declarations of the plugin's own types. */
    private readonly own: ReadonlyMap<string, PluginEventTypeDefinition> = new Map(),
  ) {}

  emit<K extends EventType>(type: K, payload: PluginPayload<K>): void;
  emit(type: PluginEventType, payload: PluginEventPayload): void;
  emit(type: AnyEventType, payload: Record<string, unknown>): void {
    const { pluginName, handler, actionRef } = this.metadata;
    const where = { plugin: pluginName, handler, actionRef };
    if (this.closed || this.bus.isClosed) {
      throw new TendError(
        'TEND_EVENT_UNDELIVERABLE',
        `plugin "${pluginName}" emitted a "${type}" event from ${handler} after ` +
          (this.closed ? `its ${handler} call returned` : `session ${this.bus.sessionId} ended`) +
          '; events can only be recorded while the handler runs (await its callbacks before returning)',
        { ...where, detail: { type } },
      );
    }
    if (typeof type !== 'string' || !this.declared.has(type)) {
      const shown = typeof type === 'string' ? JSON.stringify(type.slice(0, 128)) : typeof type;
      throw new TendError(
        'TEND_EVENT_UNDECLARED',
        `plugin "${pluginName}" emitted event type ${shown} from ${handler} without declaring it; ` +
          `declared: ${[...this.declared].join(', ') || '(none)'}`,
        where,
      );
    }
    const invalid = (message: string, detail?: Record<string, unknown>) =>
      new TendError(
        'TEND_EVENT_INVALID',
        `plugin "${pluginName}" emitted an invalid "${type}" event from ${handler}: ${message}`,
        { ...where, ...(detail ? { detail } : {}) },
      );
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      throw invalid('the payload is not an object');
    }
    if (!isEventType(type)) {
      this.emitOwn(this.own.get(type)!, payload, invalid);
      return;
    }
    let stamped = payload as Record<string, unknown>;
    if (typesWithMetadata.has(type)) {
      const claimed = emitterMetadataFields.filter((f) => stamped[f] !== undefined);
      if (claimed.length > 0) {
        throw invalid(
          `it sets ${claimed.join(', ')}, which only the framework stamps (leave them out of the payload)`,
        );
      }
      stamped = withMetadata(stamped, this.metadata);
    }
    const problems = checkPayload(type, stamped);
    if (problems.length > 0) {
      const first = problems[0]!;
      throw invalid(`${first.path}: ${first.message}`, { problems });
    }
    this.bus.emit(type, stamped as EventPayloads[EventType]);
  }

  /**
   * One of the plugin's own types: what the server can store (checked first: nothing below
   * recurses into a value nested 10,000 deep), no metadata field, the declared schema; then the
   * metadata is stamped and the bus coalesces by the declared dedupe key.
   */
  private emitOwn(
    definition: PluginEventTypeDefinition,
    payload: Record<string, unknown>,
    invalid: (message: string, detail?: Record<string, unknown>) => TendError,
  ): void {
    const unstorable = storableProblem(payload);
    if (unstorable) throw invalid(`${unstorable.path}: ${unstorable.message}`);
    const claimed = pluginEventMetadataFields.filter((f) => payload[f] !== undefined);
    if (claimed.length > 0) {
      throw invalid(
        `it sets ${claimed.join(', ')}, which only the framework stamps (leave them out of the payload)`,
      );
    }
    const problems = checkPluginPayload(definition, payload);
    if (problems.length > 0) {
      const first = problems[0]!;
      throw invalid(`${first.path}: ${first.message}`, { problems });
    }
    const stamped = withMetadata(payload, this.metadata);
    if (this.metadata.project !== undefined) stamped.project = this.metadata.project;
    if (this.metadata.environment !== undefined) stamped.environment = this.metadata.environment;
    this.bus.emitPluginEvent(definition.name, stamped, definition.dedupeKey);
  }

  /** The call ended: later emits through this broker are errors. */
  close(): void {
    this.closed = true;
  }
}

/**
 * A copy of the payload with the metadata added. The plugin's object is left as it was (it may
 * emit it again); properties are added one by one, since a spread copy validates far slower.
 */
function withMetadata(payload: Record<string, unknown>, metadata: EmitterMetadata): Record<string, unknown> {
  const stamped: Record<string, unknown> = {};
  for (const key in payload) {
    if (Object.hasOwn(payload, key) && payload[key] !== undefined) stamped[key] = payload[key];
  }
  stamped.pluginName = metadata.pluginName;
  stamped.providerName = metadata.providerName;
  stamped.handler = metadata.handler;
  if (metadata.actionRef !== undefined) stamped.actionRef = metadata.actionRef;
  return stamped;
}
