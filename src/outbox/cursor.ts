/**
 * A segment this process sends, under its lock (lock.ts): the events read from disk and not yet
 * answered, the ack offset moved and persisted as the server answers, and the segment deleted
 * once it is answered to its end and nobody writes to it any more.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { removeQuietly, type HeldLock } from './lock.js';
import {
  readChunkBytes,
  readEvents,
  readTail,
  unreadableTextMax,
  type QueuedEvent,
  type UnreadableLine,
} from './read.js';
import { ackFile, fileSize, readAckState, requeuedSuffix, segmentFile, writeAck } from './segments.js';

/** A live session writes a heartbeat every 30 s; a segment silent this long has no writer. */
export const writerIdleMs = 120_000;
/** The ack file is rewritten at most this often while a segment is being sent (and at release). */
const ackPersistMs = 200;

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
  /** Lines read that are not events, not yet reported (the streamer keeps and reports them). */
  readonly unreadable: UnreadableLine[] = [];
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
    this.unreadable.push(...read.unreadable);
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

  /** Marks a queued event unreadable (a line that looked like an event but is not JSON) and removes it. */
  removeUnreadable(events: readonly QueuedEvent[]): void {
    for (const e of events)
      this.unreadable.push({ offset: e.start, text: e.text.slice(0, unreadableTextMax) });
    this.removeQueued(new Set(events.map((e) => e.id)));
  }

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
   * gone. A partial last line left by a crash is counted as skipped and added to `unreadable`;
   * `keepUnreadable` is called before the file is removed, to keep what is unreadable elsewhere.
   */
  retireIfDone(keepUnreadable?: () => void): boolean {
    if (this.length > 0 || !this.writerGone()) return false;
    if (this.fill() > 0) return false;
    if (this.readOffset < fileSize(this.file)) {
      // A last line torn by a crash: reported like any unreadable line before the segment goes.
      this.skipped++;
      this.unreadable.push({ offset: this.readOffset, text: readTail(this.file, this.readOffset) });
    }
    keepUnreadable?.();
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
