/**
 * Event types plugins declare (docs/plugin-api.md#event-types): `<plugin>.<name>`, with a JSON
 * Schema of the payload, whether they are streamed to the server, and the payload fields that
 * name what an event is about (its dedupe key). A process registers the declarations of the
 * plugins it loads; the router emits, the outbox streams and `tend events` shows them like the
 * catalogue's types. A server that never loaded the plugin keeps its events as they came, after
 * checking what every event is checked for (the envelope, what can be stored) and the emitter
 * metadata the router stamps.
 */
import { Type, type TSchema } from 'typebox';
import { AnyKey, schemaCheck, schemaProblems, type SchemaProblem } from '../schema-check.js';

/** A plugin's own event type: the plugin's name, a dot, and the type's name (`buckets.bucketCreated`). */
export type PluginEventType = `${string}.${string}`;

/** `<plugin>.<name>`: a plugin name as `name` rules it, and a name of letters, digits, `_`, `-`. */
export const pluginEventTypePattern = '^[a-z][a-z0-9-]{0,62}\\.[A-Za-z][A-Za-z0-9_-]{0,62}$';
const pluginEventTypeRegExp = new RegExp(pluginEventTypePattern);

export function isPluginEventType(type: string): type is PluginEventType {
  return type.length <= 127 && pluginEventTypeRegExp.test(type);
}

/** The plugin a plugin event type belongs to (the part before the dot). */
export function pluginOfEventType(type: PluginEventType): string {
  return type.slice(0, type.indexOf('.'));
}

/** The payload of a plugin's event: the plugin's fields, and the metadata the router stamps. */
export type PluginEventPayload = Record<string, unknown>;

/** What a plugin declares for each of its event types (`PluginDefinition.eventTypes`). */
export interface PluginEventTypeDefinition {
  /** `<plugin>.<name>`: the plugin's own name first. */
  name: PluginEventType;
  /** For people: what the event says (docs, `tend events`). */
  description?: string;
  /** JSON Schema (a TypeBox schema is one) of the payload the plugin passes to `ctx.events.emit`. */
  payloadSchema: TSchema;
  /** True: written to the outbox and streamed to the server; false: the local log only. */
  streamed: boolean;
  /**
   * Payload fields that name what an event is about (`['bucket']`): within a session, an event
   * saying the same as the latest one for the same key is coalesced away, as `namespaceStatus`
   * events are. Left out: every event is kept.
   */
  dedupeKey?: readonly string[];
}

/**
 * Payload fields the router stamps on a plugin's events: who emitted it, from which call, for
 * which project and environment. A plugin's payload and schema never hold them.
 */
export const pluginEventMetadataFields = [
  'pluginName',
  'providerName',
  'handler',
  'actionRef',
  'project',
  'environment',
] as const;

const Name = Type.String({ minLength: 1, maxLength: 253 });

/** The metadata as the server checks it; the plugin's own fields are its schema's business. */
const PluginEventMetadata = Type.Object(
  Object.fromEntries(pluginEventMetadataFields.map((field) => [field, Type.Optional(Name)])),
  { additionalProperties: true },
);
const PluginPayloadShape = Type.Record(AnyKey(), Type.Unknown());

const registered = new Map<string, PluginEventTypeDefinition>();

/** Makes a plugin's declarations known to this process (done when plugins are validated). */
export function registerPluginEventTypes(definitions: readonly PluginEventTypeDefinition[]): void {
  for (const definition of definitions) registered.set(definition.name, definition);
}

/** The declaration of a plugin event type this process registered, if any. */
export function pluginEventType(type: string): PluginEventTypeDefinition | undefined {
  return registered.get(type);
}

/** Problems with the payload of a plugin's event (its metadata stamped); empty when it is valid. */
export function checkPluginEvent(type: PluginEventType, payload: unknown): SchemaProblem[] {
  const shape = schemaCheck(PluginPayloadShape);
  if (!shape.Check(payload)) return [{ path: '', message: 'the payload must be an object' }];
  const metadata = schemaCheck(PluginEventMetadata);
  if (!metadata.Check(payload)) return schemaProblems(metadata.Errors(payload));
  const plugin = pluginOfEventType(type);
  if (payload.pluginName !== undefined && payload.pluginName !== plugin) {
    return [{ path: '/pluginName', message: `must be "${plugin}", the plugin the type belongs to` }];
  }
  const definition = registered.get(type);
  if (!definition) return [];
  const own: Record<string, unknown> = {};
  for (const key of Object.keys(payload)) {
    if (!(pluginEventMetadataFields as readonly string[]).includes(key)) own[key] = payload[key];
  }
  return checkPluginPayload(definition, own);
}

/** Problems with what a plugin passed for one of its types (without metadata); empty when valid. */
export function checkPluginPayload(definition: PluginEventTypeDefinition, payload: unknown): SchemaProblem[] {
  const check = schemaCheck(definition.payloadSchema);
  if (check.Check(payload)) return [];
  return schemaProblems(check.Errors(payload));
}
