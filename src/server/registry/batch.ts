/**
 * A batch of events as the server takes it, from `POST /api/v1/events` or from an executor's
 * restore session: checked event by event against the catalogue (the first problem named by its
 * index and field), then ingested in one transaction — on SQLite by the writer thread, elsewhere
 * here.
 */
import type { Kysely } from 'kysely';
import { checkEvent, eventCatalog, eventTypes, type TendEvent } from '../../events/catalog.js';
import { isPluginEventType } from '../../events/plugin-types.js';
import { TendError } from '../../errors.js';
import type { DialectName } from '../db/dialect.js';
import { toWire, type IngestResult } from '../db/event-wire.js';
import type { Database } from '../db/schema.js';
import { writerThreadOf } from '../db/sqlite-writer.js';
import { storableProblem } from '../../storable.js';
import { ingestEvents, ingestTask, type IngestTaskPayload } from './ingest.js';

function invalid(message: string, detail: Record<string, unknown>): TendError {
  return new TendError('TEND_EVENT_INVALID', message, { detail });
}

/** The batch as typed events, or a TendError naming the first problem. */
export function validateBatch(body: unknown, maxEvents: number): TendEvent[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new TendError('TEND_SERVER_BAD_REQUEST', 'the body must be a JSON object {"events": [...]}');
  }
  const events = (body as { events?: unknown }).events;
  if (!Array.isArray(events)) {
    throw new TendError('TEND_SERVER_BAD_REQUEST', 'the body must have an "events" array');
  }
  const extra = Object.keys(body).filter((k) => k !== 'events');
  if (extra.length > 0) {
    throw new TendError('TEND_SERVER_BAD_REQUEST', `unknown field "${extra[0]}" in the body`);
  }
  if (events.length > maxEvents) {
    throw new TendError(
      'TEND_SERVER_PAYLOAD_TOO_LARGE',
      `the batch has ${events.length} events; the limit is ${maxEvents} per batch`,
      { detail: { limitEvents: maxEvents } },
    );
  }
  events.forEach((event: unknown, index) => {
    // First, and bounded: nothing below may recurse into a value nested 10,000 levels deep.
    const unstorable = storableProblem(event);
    if (unstorable) {
      throw invalid(`events[${index}]${unstorable.path}: ${unstorable.message}`, {
        index,
        path: unstorable.path,
      });
    }
    const type = (event as { type?: unknown } | null)?.type;
    // A plugin's own type (`<plugin>.<name>`) is kept whether or not this server knows the plugin.
    if (typeof type === 'string' && !Object.hasOwn(eventCatalog, type) && !isPluginEventType(type)) {
      throw invalid(`events[${index}]: unknown event type ${JSON.stringify(type.slice(0, 64))}`, {
        index,
        path: '/type',
        knownTypes: eventTypes,
      });
    }
    const problems = checkEvent(event);
    const first = problems[0];
    if (first) {
      throw invalid(`events[${index}]${first.path}: ${first.message}`, { index, path: first.path, problems });
    }
  });
  return events as TendEvent[];
}

/** Ingests checked events: idempotent by event id, one transaction. */
export function ingestBatch(
  db: Kysely<Database>,
  dialect: DialectName,
  events: TendEvent[],
  receivedAt: Date,
  /** The project the sender is bound to, if any (it owns the sessions it starts). */
  tokenProject: string | null,
): Promise<IngestResult> {
  const writer = dialect === 'sqlite' ? writerThreadOf(db) : undefined;
  if (!writer) return ingestEvents(db, dialect, events, receivedAt, tokenProject);
  const payload: IngestTaskPayload = {
    events: toWire(events),
    receivedAt: receivedAt.toISOString(),
    tokenProject,
  };
  return writer.run<IngestResult>(ingestTask, payload);
}
