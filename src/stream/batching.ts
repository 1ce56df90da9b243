/**
 * Which batch the stream sends next, in the order the host's sessions ran: first the segments
 * earlier commands left (server down, not logged in, process killed), oldest first, one at a
 * time, each under its lock; then the session's own segment as it is written — at most 500
 * events / 512 KiB, at the latest 250 ms after its first event was written, a full batch at once;
 * then the segments commands that ran meanwhile left.
 *
 * The session bus tells the source that something was written (it is a sink of the bus that
 * only counts); the events are read back from the segment, so what is sent is what is on disk.
 */
import type { EventSink, SessionBus } from '../events/bus.js';
import { isStreamedType, type TendEvent } from '../events/catalog.js';
import { SegmentCursor } from '../outbox/cursor.js';
import { tryLock } from '../outbox/lock.js';
import { countWaiting, type QueuedEvent } from '../outbox/read.js';
import { listSegmentIds, lockFile } from '../outbox/segments.js';
import type { StreamReport } from './report.js';
import type { SetAside } from './set-aside.js';
import type { BatchSplitter } from './split.js';

export const streamLimits = { maxEvents: 500, maxBytes: 512 * 1024, lingerMs: 250 } as const;

export interface BatchLimits {
  maxEvents: number;
  maxBytes: number;
  lingerMs: number;
}

/** A batch to send and the segment it is the head of. */
export type Work = { cursor: SegmentCursor; batch: QueuedEvent[] };

export class BatchSource {
  private own: SegmentCursor | undefined;
  private bus: SessionBus | undefined;
  /** The older segment being sent (its lock is held): sent to its end before anything else. */
  private older: SegmentCursor | undefined;
  /** Segments waiting when the stream started, left by earlier commands: sent before the own one. */
  private readonly earlierIds: string[] = [];
  /** Segments found at the end, left by commands that ran meanwhile: sent after the own one. */
  private readonly laterIds: string[] = [];
  private readonly tried = new Set<string>();
  private readonly reportedPaths = new Set<string>();

  // Events written to the own segment since it was last read, and when the first of them was.
  private unreadCount = 0;
  private unreadBytes = 0;
  private unreadSince: number | undefined;
  /** When the oldest event in the own queue was written. */
  private queuedSince: number | undefined;

  constructor(
    private readonly dir: string,
    private readonly limits: BatchLimits,
    private readonly context: {
      report: StreamReport;
      warn: (message: string) => void;
      setAside: SetAside;
      splitter: BatchSplitter;
      /** Called when the own segment may have a batch due: ends the loop's wait for one. */
      wake: () => void;
    },
  ) {}

  /**
   * Sends the session's own segment as it is written, when this process can lock it (it is
   * the segment's writer); its events go after those of the segments earlier commands left.
   */
  followOwn(bus: SessionBus): void {
    const attempt = tryLock(lockFile(this.dir, bus.sessionId), { writer: true });
    if (!attempt.acquired) return;
    this.bus = bus;
    this.own = new SegmentCursor(this.dir, bus.sessionId, attempt.lock, true);
    this.tried.add(bus.sessionId);
    const notifier: EventSink = {
      write: (event, line) => this.written(event, line),
      flush: () => undefined,
      close: () => undefined,
    };
    bus.addSink(notifier);
    // sessionStarted is already on disk.
    this.unreadCount = 1;
    this.unreadSince = Date.now();
  }

  /**
   * Adds the outbox's segments not seen yet: at the start those earlier commands left (`earlier`:
   * sent before the session's own), at the end those other commands left since (sent after it).
   */
  addOlder(when: 'earlier' | 'later'): void {
    const queued = new Set([...this.earlierIds, ...this.laterIds]);
    const ids = this.listSegments().filter((id) => !this.tried.has(id) && !queued.has(id));
    (when === 'earlier' ? this.earlierIds : this.laterIds).push(...ids);
  }

  /** The outbox's segments; what only looks like one (a directory named *.jsonl) is named once on stderr. */
  private listSegments(): string[] {
    return listSegmentIds(this.dir, (file) => {
      if (this.reportedPaths.has(file)) return;
      this.reportedPaths.add(file);
      this.context.warn(`tend: skipping ${file} in the outbox: it is not a file\n`);
    });
  }

  /** The next batch of a segment: within the stream's limits and the segment's split, if any. */
  private batchOf(cursor: SegmentCursor): Work {
    const limit = Math.min(this.limits.maxEvents, this.context.splitter.limit(cursor));
    return { cursor, batch: cursor.batch(limit, this.limits.maxBytes) };
  }

  /** Called by the bus for every event (after the outbox sink buffered it). Cheap: counts only. */
  private written(event: TendEvent, line: string): void {
    if (!isStreamedType(event.type)) return;
    this.unreadCount++;
    this.unreadBytes += line.length;
    if (this.unreadSince === undefined) {
      this.unreadSince = Date.now();
      this.context.wake();
    } else if (
      this.unreadCount + (this.own?.length ?? 0) >= this.limits.maxEvents ||
      this.unreadBytes + (this.own?.queuedBytes ?? 0) >= this.limits.maxBytes
    ) {
      this.context.wake();
    }
  }

  /** When the own segment has a batch due: now (0), in some ms, or never (undefined). */
  private ownDueIn(now: number, finishing: boolean): number | undefined {
    const own = this.own;
    if (!own) return undefined;
    const count = own.length + this.unreadCount;
    if (count === 0) return undefined;
    if (finishing) return 0;
    if (count >= this.limits.maxEvents || own.queuedBytes + this.unreadBytes >= this.limits.maxBytes)
      return 0;
    const since = Math.min(this.queuedSince ?? Infinity, this.unreadSince ?? Infinity);
    return Math.max(0, since + this.limits.lingerMs - now);
  }

  private readOwn(): void {
    const own = this.own!;
    this.bus?.flush();
    if (this.unreadSince !== undefined)
      this.queuedSince = Math.min(this.queuedSince ?? Infinity, this.unreadSince);
    this.unreadCount = 0;
    this.unreadBytes = 0;
    this.unreadSince = undefined;
    own.fill(this.limits.maxBytes * 2);
    this.context.setAside.keepUnreadable(own);
    // What fill could not take yet (over the read cap) stays counted as unread.
    if (!own.readToEnd()) {
      this.unreadCount = 1;
      this.unreadSince = this.queuedSince ?? Date.now();
    }
  }

  /**
   * The next batch to send, or how long to wait for one, or 'done' when `finishing` and
   * everything was sent.
   */
  next(finishing: boolean): Work | { waitMs: number | undefined } | 'done' {
    // What earlier sessions left goes first: the server receives the host's sessions in the order they ran.
    const earlier = this.nextOlder(this.earlierIds);
    if (earlier) return earlier;
    const own = this.own;
    if (own) {
      if (this.ownDueIn(Date.now(), finishing) === 0) {
        this.readOwn();
        if (own.length > 0) return this.batchOf(own);
      }
      if (finishing && own.length === 0 && this.unreadCount === 0) {
        // The session ended and everything it wrote was answered.
        own.live = false;
        own.retireIfDone(() => this.context.setAside.keepUnreadable(own));
        this.context.report.skipped += own.skipped;
        this.ownDone();
      }
    }
    const later = this.nextOlder(this.laterIds);
    if (later) return later;
    if (finishing && !this.own) return 'done';
    return { waitMs: this.ownDueIn(Date.now(), finishing) };
  }

  private ownDone(): void {
    this.own?.release();
    this.own = undefined;
  }

  /**
   * A batch of the older segment being sent, else of the oldest in `queue` this process can take,
   * or undefined when there is none.
   */
  private nextOlder(queue: string[]): Work | undefined {
    for (;;) {
      if (!this.older) {
        const id = queue.shift();
        if (id === undefined) return undefined;
        this.older = this.takeOlder(id);
        if (!this.older) continue;
      }
      const cursor = this.older;
      if (cursor.length === 0) {
        try {
          cursor.fill(this.limits.maxBytes * 2);
        } catch (error) {
          // One segment that cannot be read must not stop the others.
          this.context.warn(`tend: skipping ${cursor.file}: ${(error as Error).message}\n`);
          cursor.release();
          this.older = undefined;
          continue;
        }
        this.context.setAside.keepUnreadable(cursor);
      }
      if (cursor.length > 0) return this.batchOf(cursor);
      // Everything read was answered: delete it if nobody writes to it any more, else leave it.
      cursor.retireIfDone(() => this.context.setAside.keepUnreadable(cursor));
      this.context.report.skipped += cursor.skipped;
      cursor.release();
      this.older = undefined;
    }
  }

  /** Locks an older segment; when another live process holds it, reports it and leaves it. */
  private takeOlder(id: string): SegmentCursor | undefined {
    this.tried.add(id);
    const attempt = tryLock(lockFile(this.dir, id));
    if (!attempt.acquired) {
      this.context.report.heldElsewhere.push({
        sessionId: id,
        ...(attempt.heldBy ? { owner: attempt.heldBy } : {}),
        events: countWaiting(this.dir, id),
      });
      return undefined;
    }
    return new SegmentCursor(this.dir, id, attempt.lock, false, Boolean(attempt.broke?.writer));
  }

  /** The server answered for the first `n` events of the batch's segment. */
  acknowledge(cursor: SegmentCursor, n: number): void {
    cursor.acknowledge(n);
    if (cursor === this.own && cursor.length === 0) this.queuedSince = undefined;
  }

  /** The server takes less than a batch of this size (413): halve the batches from now on. */
  halve(events: number, bytes: number): void {
    this.limits.maxEvents = Math.max(1, Math.floor(events / 2));
    this.limits.maxBytes = Math.max(1024, Math.floor(bytes / 2));
  }

  /** Releases the locks this process holds (and persists the ack offsets). */
  release(): void {
    this.older?.release();
    this.own?.release();
    this.older = undefined;
  }
}
