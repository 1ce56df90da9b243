/**
 * Reading a segment back: its lines as events (the text is sent as it is, only id and type are
 * looked at), lines that are not events kept aside for the report, what waits beyond the ack
 * offset, and how many events wait without parsing them.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { AnyEventType, TendEvent } from '../events/catalog.js';
import { fileSize, listSegmentIds, readAck, segmentFile } from './segments.js';

/** How much of a segment is read into memory at a time. */
export const readChunkBytes = 1024 * 1024;

/** One event of a segment, as read from disk: its JSON text is sent as it is. */
export interface QueuedEvent {
  id: string;
  type: AnyEventType;
  text: string;
  /** Bytes of the line including its newline. */
  bytes: number;
  /** Offsets of the line in the segment: [start, end). */
  start: number;
  end: number;
}

/** A line of a segment that is not an event (a disk fault, a torn write): never sent, always reported. */
export interface UnreadableLine {
  /** Byte offset of the line in the segment. */
  offset: number;
  /** Its text, cut at 4 KiB. */
  text: string;
}

/** How much of a line that is not an event is kept (in memory and in the quarantine). */
export const unreadableTextMax = 4096;

export interface ReadResult {
  events: QueuedEvent[];
  /** Offset after the last complete line read. */
  next: number;
  /** Complete lines that were not events (corruption): skipped. */
  skipped: number;
  unreadable: UnreadableLine[];
  /** Whether a sessionCompleted/sessionFailed was among them. */
  sawEnd: boolean;
}

/** The bus writes `{"id":"<ULID>","type":"<type>",…}`: id and type without parsing the whole line. */
const head = /^\{"id":"([0-9A-HJKMNP-TV-Z]{26})","type":"([A-Za-z][A-Za-z0-9_.-]*)",/;
function fastHead(text: string): Pick<TendEvent, 'id' | 'type'> | undefined {
  if (!text.endsWith('}')) return undefined;
  const match = head.exec(text);
  return match ? { id: match[1]!, type: match[2] as AnyEventType } : undefined;
}

/** Reads complete lines from `from` (up to `maxBytes`, at least one line); a partial last line stays. */
export function readEvents(file: string, from: number, maxBytes = readChunkBytes): ReadResult {
  const result: ReadResult = { events: [], next: from, skipped: 0, unreadable: [], sawEnd: false };
  const skip = (offset: number, text: string) => {
    result.skipped++;
    result.unreadable.push({ offset, text: text.slice(0, unreadableTextMax) });
  };
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return result;
  }
  try {
    const size = fstatSync(fd).size;
    let position = from;
    let want = Math.min(maxBytes, size - from);
    while (want > 0) {
      const buffer = Buffer.allocUnsafe(want);
      const n = readSync(fd, buffer, 0, want, position);
      let lineStart = 0;
      for (;;) {
        const newline = buffer.indexOf(0x0a, lineStart);
        if (newline < 0 || newline >= n) break;
        const text = buffer.toString('utf8', lineStart, newline);
        const start = position + lineStart;
        const end = position + newline + 1;
        lineStart = newline + 1;
        if (text.length === 0) continue;
        let event: Pick<TendEvent, 'id' | 'type'> | undefined = fastHead(text);
        if (!event) {
          try {
            event = JSON.parse(text) as TendEvent;
          } catch {
            skip(start, text);
            continue;
          }
        }
        if (typeof event?.id !== 'string' || typeof event.type !== 'string') {
          skip(start, text);
          continue;
        }
        if (event.type === 'sessionCompleted' || event.type === 'sessionFailed') result.sawEnd = true;
        result.events.push({ id: event.id, type: event.type, text, bytes: end - start, start, end });
      }
      if (lineStart > 0) {
        position += lineStart;
        break;
      }
      // No complete line: a partial line at the end, or one line longer than the chunk.
      if (position + n >= size) break;
      want = Math.min(want * 2, size - position);
    }
    result.next = position;
  } finally {
    closeSync(fd);
  }
  return result;
}

/** The text from `offset` to the end of a file (at most 4 KiB): a torn last line. */
export function readTail(file: string, offset: number): string {
  try {
    const fd = openSync(file, 'r');
    try {
      const buffer = Buffer.alloc(Math.max(0, Math.min(unreadableTextMax, fileSize(file) - offset)));
      const n = readSync(fd, buffer, 0, buffer.length, offset);
      return buffer.toString('utf8', 0, n);
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** Every unacknowledged event of a segment, with its bytes (for `tend events outbox` and the bound). */
export function readPending(
  dir: string,
  id: string,
): { events: QueuedEvent[]; skipped: number; partialBytes: number } {
  const file = segmentFile(dir, id);
  const size = fileSize(file);
  const events: QueuedEvent[] = [];
  let skipped = 0;
  let offset = Math.min(readAck(dir, id), size);
  while (offset < size) {
    const read = readEvents(file, offset);
    events.push(...read.events);
    skipped += read.skipped;
    if (read.next === offset) break;
    offset = read.next;
  }
  return { events, skipped, partialBytes: size - offset };
}

/** Counts the events (lines) of a segment beyond its ack offset, without parsing them. */
export function countWaiting(dir: string, id: string): number {
  const file = segmentFile(dir, id);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return 0;
  }
  try {
    const size = fstatSync(fd).size;
    let position = Math.min(readAck(dir, id), size);
    const buffer = Buffer.allocUnsafe(readChunkBytes);
    let count = 0;
    while (position < size) {
      const n = readSync(fd, buffer, 0, Math.min(buffer.length, size - position), position);
      if (n <= 0) break;
      for (let i = buffer.indexOf(0x0a); i >= 0 && i < n; i = buffer.indexOf(0x0a, i + 1)) count++;
      position += n;
    }
    return count;
  } finally {
    closeSync(fd);
  }
}

/** Events waiting in every segment of the outbox, except the given ones. */
export function countOutbox(dir: string, except: ReadonlySet<string> = new Set()): number {
  let waiting = 0;
  for (const id of listSegmentIds(dir)) if (!except.has(id)) waiting += countWaiting(dir, id);
  return waiting;
}
