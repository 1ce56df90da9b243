/**
 * What handlers of every part of the plugin contract are given and give back: the event broker,
 * the log, a restore's request and result (types.ts and cleanup-types.ts re-export them).
 */
import type { EnvironmentArchive } from '../cleanup/archive.js';
import type { EventPayloads, EventType } from '../events/catalog.js';
import type { PluginEventPayload, PluginEventType } from '../events/plugin-types.js';

/** The emitter metadata: who emitted an event, from which call. Only the framework (the broker) sets it. */
export const emitterMetadataFields = ['pluginName', 'providerName', 'handler', 'actionRef'] as const;
export type EmitterMetadataField = (typeof emitterMetadataFields)[number];

/** What a plugin passes for an event: the catalogue's payload without the emitter metadata. */
export type PluginPayload<K extends EventType> = Omit<EventPayloads[K], EmitterMetadataField>;

/**
 * A plugin's way to emit events: validated against its declarations, stamped with the emitter
 * metadata, and recorded on the session bus before `emit` returns. Valid only during the handler
 * call it was given to; an emit after the call returned throws `TEND_EVENT_UNDELIVERABLE`.
 */
export interface EventBroker {
  emit<K extends EventType>(type: K, payload: PluginPayload<K>): void;
  /** An event of one of the plugin's own types (`eventTypes`), checked against its payload schema. */
  emit(type: PluginEventType, payload: PluginEventPayload): void;
}

/** Log lines become `log` events (and progress output); they never carry secrets. */
export interface PluginLog {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  /** A line of a child process or a build's output. */
  output(stream: 'stdout' | 'stderr', line: string): void;
}

export interface RestoreRequest {
  archive: EnvironmentArchive;
  /** Secrets archived by name only (the server had no archive key). */
  missingSecrets: readonly string[];
}

export interface RestoreResult {
  /** The namespace (or directory) re-created. */
  namespace: string;
  /** `Kind/name` of every object re-created, in the order it was. */
  restored: string[];
  /** What was not restored, and why (volume data, missing Secrets, objects the cluster refused). */
  notRestored: { what: string; why: string }[];
}
