/**
 * The session bus: one per CLI session. Stamps every event with a ULID id, the session id and
 * a timestamp (and the events whose order matters to the server with the host's sequence, when
 * the session has one), coalesces repeated namespaceStatus events, and hands each event to its
 * sinks (local log, outbox) and listeners (progress output, tests).
 */
import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulidx';
import { TendError } from '../errors.js';
import { redactSecretsIn } from '../redact.js';
import {
  sequencedEventTypes,
  type AnyEventType,
  type EventPayloads,
  type EventSequence,
  type EventType,
  type NamespaceStatusPayload,
  type ResourceStatusPayload,
  type TendEvent,
} from './catalog.js';
import { NamespaceStatusDedupe, PluginEventDedupe } from './dedupe.js';
import { namespaceStatusOf } from './resource-status.js';
import type { PluginEventPayload, PluginEventType } from './plugin-types.js';

export type EventListener = (event: TendEvent) => void;

/** Where events are persisted. `write` must hand the event to the OS before `flush` returns. */
export interface EventSink {
  write(event: TendEvent, line: string): void;
  flush(): void;
  close(): void;
}

/**
 * The random part of new ids: a small generator (sfc32) seeded once per process from the
 * system's randomness, so an id costs no system call while two processes still draw from
 * different 128-bit seeds (unique across processes as random ids are). Within a millisecond ids
 * are monotonic: the random part is incremented, not drawn.
 */
function seededRandom(): () => number {
  const seed = randomBytes(16);
  let a = seed.readUInt32LE(0);
  let b = seed.readUInt32LE(4);
  let c = seed.readUInt32LE(8);
  let d = seed.readUInt32LE(12);
  const next = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next(); // mixes the seed in before the first id
  return next;
}

const ulid = monotonicFactory(seededRandom());

export function newId(): string {
  return ulid();
}

// Formatting a date is a large share of an emit; events in the same millisecond share the string.
let lastMs = 0;
let lastIso = '';
function isoNow(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastIso = new Date(now).toISOString();
  }
  return lastIso;
}

export class SessionBus {
  readonly sessionId: string;
  private readonly listeners = new Map<AnyEventType | '*', Set<EventListener>>();
  private readonly sinks: EventSink[] = [];
  private readonly dedupe = new NamespaceStatusDedupe();
  private readonly pluginDedupe = new PluginEventDedupe();
  private closed = false;

  constructor(
    sessionId: string = newId(),
    /** The host's sequence (src/session/sequence.ts): the next number, or undefined without one. */
    private readonly sequence?: () => EventSequence | undefined,
  ) {
    this.sessionId = sessionId;
  }

  addSink(sink: EventSink): void {
    this.sinks.push(sink);
  }

  /**
   * Emits an event; returns it, or undefined when it was coalesced away. After `close()` nothing
   * can be recorded any more: an emit then is an error, never a silent loss.
   */
  emit<K extends EventType>(type: K, payload: EventPayloads[K]): TendEvent<K> | undefined {
    this.refuseIfClosed(type);
    if (type === 'namespaceStatus' && !this.dedupe.admit(payload as NamespaceStatusPayload)) return undefined;
    if (type === 'resourceStatus' && !this.dedupe.admit(namespaceStatusOf(payload as ResourceStatusPayload)))
      return undefined;
    return this.record(type, payload) as TendEvent<K>;
  }

  /**
   * Emits an event of a plugin's own type (checked by the router against its declaration);
   * returns it, or undefined when it said the same as the latest one of its `dedupeKey`.
   */
  emitPluginEvent(
    type: PluginEventType,
    payload: PluginEventPayload,
    dedupeKey?: readonly string[],
  ): TendEvent<PluginEventType> | undefined {
    this.refuseIfClosed(type);
    if (dedupeKey && !this.pluginDedupe.admit(type, payload, dedupeKey)) return undefined;
    return this.record(type, payload) as TendEvent<PluginEventType>;
  }

  private refuseIfClosed(type: AnyEventType): void {
    if (this.closed) {
      throw new TendError(
        'TEND_EVENT_UNDELIVERABLE',
        `a "${type}" event was emitted after session ${this.sessionId} ended; it cannot be recorded`,
        { detail: { type, sessionId: this.sessionId } },
      );
    }
  }

  private record(type: AnyEventType, payload: unknown): TendEvent {
    // Taken when the event is emitted (before the work it announces), after it was admitted.
    const sequence = this.sequence && sequencedEventTypes.has(type) ? this.sequence() : undefined;
    const event = (
      sequence
        ? { id: ulid(), type, sessionId: this.sessionId, timestamp: isoNow(), sequence, payload }
        : { id: ulid(), type, sessionId: this.sessionId, timestamp: isoNow(), payload }
    ) as TendEvent;
    if (this.sinks.length > 0) {
      // A secret value a command read never reaches the log or the outbox.
      const line = redactSecretsIn(JSON.stringify(event)) + '\n';
      for (const sink of this.sinks) sink.write(event, line);
    }
    this.listeners.get(type)?.forEach((listener) => listener(event));
    this.listeners.get('*')?.forEach((listener) => listener(event));
    return event;
  }

  /** Subscribes; returns the function that unsubscribes. */
  on(type: AnyEventType | '*', listener: EventListener): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(type);
    };
  }

  listenerCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  /** Hands everything written so far to the OS. */
  flush(): void {
    for (const sink of this.sinks) sink.flush();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const sink of this.sinks) sink.close();
  }
}
