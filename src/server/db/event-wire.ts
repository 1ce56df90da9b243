/**
 * Events as they cross to the SQLite writer thread, and what ingest answers: checked events as
 * columns (a message spells out every object's keys; columns do not), payloads as JSON text that
 * the thread parses only for the few events that change the registry.
 */
import type { TendEvent } from '../../events/catalog.js';

/** What ingesting a batch answers (`POST /api/v1/events`). */
export interface IngestResult {
  accepted: number;
  duplicates: number;
}

export interface WireEvents {
  ids: string[];
  types: TendEvent['type'][];
  sessionIds: string[];
  timestamps: string[];
  payloads: string[];
}

export function toWire(events: readonly TendEvent[]): WireEvents {
  const wire: WireEvents = { ids: [], types: [], sessionIds: [], timestamps: [], payloads: [] };
  for (const e of events) {
    wire.ids.push(e.id);
    wire.types.push(e.type);
    wire.sessionIds.push(e.sessionId);
    wire.timestamps.push(e.timestamp);
    wire.payloads.push(JSON.stringify(e.payload));
  }
  return wire;
}

/** An event rebuilt from the wire: its payload parsed when first read, stored as the text it came as. */
class ReceivedEvent {
  #payload: unknown;
  constructor(
    readonly id: string,
    readonly type: TendEvent['type'],
    readonly sessionId: string,
    readonly timestamp: string,
    readonly payloadText: string,
  ) {}

  get payload(): unknown {
    return (this.#payload ??= JSON.parse(this.payloadText));
  }
}

/**
 * The events again: ingest reads the payloads of the few events that change the registry
 * (sessions, namespaces) and stores the others' as they came, never parsed.
 */
export function fromWire(wire: WireEvents): TendEvent[] {
  return wire.ids.map(
    (id, i) =>
      new ReceivedEvent(
        id,
        wire.types[i]!,
        wire.sessionIds[i]!,
        wire.timestamps[i]!,
        wire.payloads[i]!,
      ) as unknown as TendEvent,
  );
}

/** The payload as stored: the text it came as over the wire, else serialised. */
export function payloadText(e: TendEvent): string {
  return e instanceof ReceivedEvent ? e.payloadText : JSON.stringify(e.payload);
}
