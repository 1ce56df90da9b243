/**
 * The outbox on disk: the one owner of its file format (the writer, the stream and `tend events`
 * all go through here). `.tend/outbox/` holds, per CLI session:
 *
 * - `<sessionId>.jsonl`: the segment, appended by the session's OutboxSink (writer.ts);
 * - `<sessionId>.ack`: `{"offset": n}`, the bytes of the segment the server acknowledged (or that
 *   were quarantined or dropped), written atomically after each answered batch;
 * - `<sessionId>.lock`: who is sending the segment (lock.ts);
 * - `quarantine/<sessionId>-<firstEventId>.json`: a batch the server refused, with its answer.
 *
 * A segment is deleted when it is acknowledged to its end and nobody writes to it any more (its
 * session ended, or it has been idle longer than a live session's heartbeat allows).
 */
import {
  closeSync,
  existsSync,
  writeFileSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import type { EventType, TendEvent } from '../events/catalog.js';
import { listNamesWithSuffix, writeFileAtomic } from '../state/files.js';
import { removeQuietly, type HeldLock } from './lock.js';

const segmentSuffix = '.jsonl';
/** Segments made of quarantined batches sent again (`tend events push --retry-quarantined`): never appended to. */
export const requeuedSuffix = '.requeued';
/** A live session writes a heartbeat every 30 s; a segment silent this long has no writer. */
export const writerIdleMs = 120_000;
/** The ack file is rewritten at most this often while a segment is being sent (and at release). */
const ackPersistMs = 200;
/** How much of a segment is read into memory at a time. */
const readChunkBytes = 1024 * 1024;

export const segmentFile = (dir: string, id: string) => path.join(dir, id + segmentSuffix);
export const ackFile = (dir: string, id: string) => path.join(dir, `${id}.ack`);
export const lockFile = (dir: string, id: string) => path.join(dir, `${id}.lock`);
export const quarantineDir = (dir: string) => path.join(dir, 'quarantine');

/** Segment ids (session ids) in the outbox, oldest first: ULIDs sort by creation time. */
export function listSegmentIds(dir: string): string[] {
  return listNamesWithSuffix(dir, segmentSuffix);
}

export interface AckState {
  offset: number;
  /** The segment's writer is known to be dead: nothing will be appended. */
  closed: boolean;
}

export function readAckState(dir: string, id: string): AckState {
  try {
    const parsed = JSON.parse(readFileSync(ackFile(dir, id), 'utf8')) as {
      offset?: unknown;
      closed?: unknown;
    };
    const offset = parsed.offset;
    return {
      offset: typeof offset === 'number' && Number.isInteger(offset) && offset >= 0 ? offset : 0,
      closed: parsed.closed === true,
    };
  } catch {
    return { offset: 0, closed: false };
  }
}

export function readAck(dir: string, id: string): number {
  return readAckState(dir, id).offset;
}

/**
 * Writes the ack atomically (temporary file, rename) but without fsync: after a machine crash an
 * older or unreadable ack only means events are sent again, and the server ignores duplicates.
 */
export function writeAck(dir: string, id: string, offset: number, closed = false): void {
  const file = ackFile(dir, id);
  const temp = `${file}.${process.pid}.${(ackSequence++).toString(36)}.tmp`;
  writeFileSync(temp, JSON.stringify(closed ? { offset, closed } : { offset }) + '\n', { mode: 0o600 });
  renameSync(temp, file);
}

let ackSequence = 0;

export function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** One event of a segment, as read from disk: its JSON text is sent as it is. */
export interface QueuedEvent {
  id: string;
  type: EventType;
  text: string;
  /** Bytes of the line including its newline. */
  bytes: number;
  /** Offsets of the line in the segment: [start, end). */
  start: number;
  end: number;
}

export interface ReadResult {
  events: QueuedEvent[];
  /** Offset after the last complete line read. */
  next: number;
  /** Complete lines that were not events (corruption): skipped. */
  skipped: number;
  /** Whether a sessionCompleted/sessionFailed was among them. */
  sawEnd: boolean;
}

/** The bus writes `{"id":"<ULID>","type":"<type>",…}`: id and type without parsing the whole line. */
const head = /^\{"id":"([0-9A-HJKMNP-TV-Z]{26})","type":"([A-Za-z]+)",/;
function fastHead(text: string): Pick<TendEvent, 'id' | 'type'> | undefined {
  if (!text.endsWith('}')) return undefined;
  const match = head.exec(text);
  return match ? { id: match[1]!, type: match[2] as EventType } : undefined;
}

/** Reads complete lines from `from` (up to `maxBytes`, at least one line); a partial last line stays. */
export function readEvents(file: string, from: number, maxBytes = readChunkBytes): ReadResult {
  const result: ReadResult = { events: [], next: from, skipped: 0, sawEnd: false };
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
            result.skipped++;
            continue;
          }
        }
        if (typeof event?.id !== 'string' || typeof event.type !== 'string') {
          result.skipped++;
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

export interface SegmentState {
  id: string;
  file: string;
  size: number;
  ackOffset: number;
  /** Unacknowledged bytes. */
  pendingBytes: number;
  modifiedMs: number;
}

export function segmentState(dir: string, id: string): SegmentState | undefined {
  const file = segmentFile(dir, id);
  let stat;
  try {
    stat = statSync(file);
  } catch {
    return undefined;
  }
  const ackOffset = Math.min(readAck(dir, id), stat.size);
  return {
    id,
    file,
    size: stat.size,
    ackOffset,
    pendingBytes: stat.size - ackOffset,
    modifiedMs: stat.mtimeMs,
  };
}

/**
 * A segment this process holds the lock of: a queue of events read from disk, not yet
 * acknowledged, and the ack offset. The events before `queue[0]` are acknowledged.
 */
export class SegmentCursor {
  readonly file: string;
  ackOffset: number;
  readOffset: number;
  readonly queue: QueuedEvent[] = [];
  queuedBytes = 0;
  ended = false;
  skipped = 0;
  private head = 0;

  constructor(
    readonly dir: string,
    readonly id: string,
    readonly lock: HeldLock,
    /** The live session's own segment: never retired while the session runs. */
    public live = false,
    /** The segment's writer is known to be dead (its lock, held by the writer, was broken). */
    writerDied = false,
  ) {
    this.file = segmentFile(dir, id);
    const ack = readAckState(dir, id);
    this.ackOffset = Math.min(ack.offset, fileSize(this.file));
    this.readOffset = this.ackOffset;
    this.closed = ack.closed || writerDied;
    // Remembered for whoever takes the segment next: its lock no longer says who wrote it.
    if (writerDied && !ack.closed) writeAck(dir, id, this.ackOffset, true);
    this.persistedAck = this.ackOffset;
  }

  /** Nothing will be appended: the writer died (see the constructor). */
  private readonly closed: boolean;

  get length(): number {
    return this.queue.length - this.head;
  }

  peek(i: number): QueuedEvent | undefined {
    return this.queue[this.head + i];
  }

  /** Reads what was appended since the last read; returns how many events it queued. */
  fill(maxQueuedBytes = readChunkBytes): number {
    if (this.queuedBytes >= maxQueuedBytes) return 0;
    const read = readEvents(this.file, this.readOffset, maxQueuedBytes - this.queuedBytes);
    if (this.head > 0 && this.head * 2 >= this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    for (const e of read.events) {
      this.queue.push(e);
      this.queuedBytes += e.bytes;
    }
    this.readOffset = read.next;
    this.skipped += read.skipped;
    if (read.sawEnd) this.ended = true;
    return read.events.length;
  }

  /** Whether everything written so far has been read (nothing more on disk right now). */
  readToEnd(): boolean {
    return this.readOffset >= fileSize(this.file);
  }

  /** The first events, up to the count and byte limits (at least one when any is queued). */
  batch(maxEvents: number, maxBytes: number): QueuedEvent[] {
    const out: QueuedEvent[] = [];
    let bytes = 12; // {"events":[]}
    for (let i = this.head; i < this.queue.length && out.length < maxEvents; i++) {
      const e = this.queue[i]!;
      if (out.length > 0 && bytes + e.bytes > maxBytes) break;
      out.push(e);
      bytes += e.bytes;
    }
    return out;
  }

  /** Drops the first `n` queued events (answered: stored, duplicate or quarantined) and persists the ack. */
  acknowledge(n: number): void {
    for (let i = 0; i < n; i++) this.queuedBytes -= this.queue[this.head + i]!.bytes;
    this.head += n;
    const next = this.queue[this.head];
    const offset = next ? next.start : this.readOffset;
    if (offset > this.ackOffset) {
      this.ackOffset = offset;
      this.persistAck(false);
    }
  }

  /**
   * Writes the ack offset to disk: at most every `ackPersistMs` while sending, and always before
   * the lock is released. An ack lost in a crash only means those events are sent again.
   */
  persistAck(force: boolean): void {
    if (this.ackOffset === this.persistedAck) return;
    const now = Date.now();
    if (!force && now - this.persistedAt < ackPersistMs) return;
    writeAck(this.dir, this.id, this.ackOffset, this.closed);
    this.persistedAck = this.ackOffset;
    this.persistedAt = now;
  }

  private persistedAck: number;
  private persistedAt = 0;

  /** Removes the given queued events (not necessarily first) without acknowledging the rest. */
  removeQueued(ids: ReadonlySet<string>): void {
    const rest = this.queue.slice(this.head);
    const kept = rest.filter((e) => !ids.has(e.id));
    if (kept.length === rest.length) return;
    // The ack offset only moves over a prefix; removed events in the middle are re-read as
    // duplicates after a crash, which the server ignores.
    this.queue.length = 0;
    this.head = 0;
    this.queuedBytes = 0;
    for (const e of kept) {
      this.queue.push(e);
      this.queuedBytes += e.bytes;
    }
    if (this.length === 0) this.acknowledge(0);
  }

  /** Whether nobody will append to the segment any more. */
  writerGone(now = Date.now()): boolean {
    if (this.live) return false;
    if (this.ended || this.closed || this.id.endsWith(requeuedSuffix)) return true;
    try {
      return now - statSync(this.file).mtimeMs > writerIdleMs;
    } catch {
      return true;
    }
  }

  /**
   * Deletes the segment when it is acknowledged to its end and has no writer; true when it is
   * gone. A partial last line left by a crash is counted as skipped.
   */
  retireIfDone(): boolean {
    if (this.length > 0 || !this.writerGone()) return false;
    if (this.fill() > 0) return false;
    if (this.readOffset < fileSize(this.file)) this.skipped++; // a last line torn by a crash
    removeQuietly(this.file);
    removeQuietly(ackFile(this.dir, this.id));
    removeLeftovers(this.dir, this.id);
    this.lock.release();
    return true;
  }

  release(): void {
    if (existsSync(this.file)) this.persistAck(true);
    this.lock.release();
  }
}

/** Temporary files of a segment a crash left behind (an ack or a compaction cut short). */
function removeLeftovers(dir: string, id: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(`${id}.`) && (name.endsWith('.tmp') || name.endsWith('.compact'))) {
      removeQuietly(path.join(dir, name));
    }
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

/**
 * Rewrites a segment without the given events (the size bound). The caller holds its lock and
 * nobody appends to it. The ack is reset first: a crash in between re-sends acknowledged events
 * (duplicates the server ignores) instead of skipping unacknowledged ones.
 */
export function rewriteSegment(dir: string, id: string, drop: ReadonlySet<string>): void {
  const { events } = readPending(dir, id);
  const kept = events.filter((e) => !drop.has(e.id));
  const file = segmentFile(dir, id);
  const temp = `${file}.${process.pid}.compact`;
  writeFileAtomic(temp, kept.map((e) => e.text + '\n').join(''), 0o600);
  writeAck(dir, id, 0, readAckState(dir, id).closed);
  renameSync(temp, file);
}

export interface QuarantinedBatch {
  sessionId: string;
  quarantinedAt: string;
  server: string;
  status: number;
  error: { code: string; message: string; detail?: Record<string, unknown> };
  events: TendEvent[];
}

/** Keeps a refused batch beside the outbox with the server's answer; returns its file. */
export function writeQuarantine(dir: string, batch: QuarantinedBatch): string {
  const qdir = quarantineDir(dir);
  mkdirSync(qdir, { recursive: true });
  const file = path.join(qdir, `${batch.sessionId}-${batch.events[0]?.id ?? 'empty'}.json`);
  writeFileAtomic(file, JSON.stringify(batch, null, 2) + '\n', 0o600);
  return file;
}

export function listQuarantine(dir: string): { file: string; batch: QuarantinedBatch | undefined }[] {
  const qdir = quarantineDir(dir);
  return listNamesWithSuffix(qdir, '.json').map((name) => {
    const file = path.join(qdir, `${name}.json`);
    try {
      return { file, batch: JSON.parse(readFileSync(file, 'utf8')) as QuarantinedBatch };
    } catch {
      return { file, batch: undefined };
    }
  });
}
