/**
 * Delivery from the outbox to the server (docs/design.md#event-stream), in the background of a command.
 *
 * The session bus writes every streamed event to the session's outbox segment synchronously;
 * the streamer is told that something was written (it is a sink of the bus that only counts),
 * and reads the events back from the segment, so what it sends is exactly what is on disk. It
 * sends batches of at most 500 events / 512 KiB, a batch at the latest 250 ms after its first
 * event, one batch at a time and in order, and moves the segment's ack offset after each answer.
 * When the session's own events are sent it drains older segments left by earlier commands
 * (server down, process killed), one at a time, each under its lock.
 *
 * `finish` (at the end of the command, or for `tend events push`) sends the rest, waiting at most
 * the given time, and reports what still waits.
 */
import type { SessionBus, EventSink } from '../events/bus.js';
import { streamedEventTypes, type TendEvent } from '../events/catalog.js';
import { SegmentCursor } from '../outbox/cursor.js';
import { tryLock, type LockOwner } from '../outbox/lock.js';
import { writeQuarantine, writeUnreadable } from '../outbox/quarantine.js';
import { countOutbox, countWaiting, type QueuedEvent } from '../outbox/read.js';
import { listSegmentIds, lockFile } from '../outbox/segments.js';
import { redactUrl } from '../redact.js';
import {
  defaultBackoff,
  retryDelay,
  sendBatch,
  StreamAgent,
  type BackoffPolicy,
  type SendOutcome,
  type ServerError,
  type StreamConnection,
} from './transport.js';

export interface StreamerOptions {
  outboxDir: string;
  connection: StreamConnection;
  maxEvents?: number;
  maxBytes?: number;
  lingerMs?: number;
  requestTimeoutMs?: number;
  backoff?: BackoffPolicy;
  /** Messages for the user (stderr): refused batches, a refused token. */
  warn?: (message: string) => void;
  /**
   * Once `finish` is called, stop at the first refused connection (nothing listens at the
   * server's address) instead of retrying until the deadline: a command's exit wait, where a
   * down server must cost nothing. `tend events push` keeps trying until its timeout.
   */
  giveUpWhenRefused?: boolean;
}

export const streamLimits = { maxEvents: 500, maxBytes: 512 * 1024, lingerMs: 250 } as const;

/**
 * How often a batch (and then the one event found in it) is tried before the streamer suspects
 * its content: a 5xx that comes back this many times in a row for the same batch.
 */
export const failuresBeforeSplit = 3;

/**
 * Whether a 5xx can be about the batch's content (a server that cannot store an event answers
 * 500). 502, 503 and 504 say the server is not there or overloaded: never the content.
 */
function contentMayFail(status: number | undefined): status is number {
  return status !== undefined && status >= 500 && status !== 502 && status !== 503 && status !== 504;
}

export interface StreamReport {
  server: string;
  /** Events the server answered for (stored or already stored). */
  delivered: number;
  accepted: number;
  duplicates: number;
  batches: number;
  quarantined: number;
  quarantineFiles: string[];
  /** Events still waiting in the outbox, not counting those of segments other processes hold. */
  waiting: number;
  /** Segments another live process is sending (a running command sends its own). */
  heldElsewhere: { sessionId: string; owner?: LockOwner; events: number }[];
  /** Why events still wait: the last delivery error. */
  lastError?: string;
  /** The server refused the token (401): nothing more was tried. */
  unauthorized?: ServerError;
  /** `finish` stopped at once: the server's address refused the connection (`giveUpWhenRefused`). */
  gaveUpRefused?: boolean;
  /** Lines that were not events (corruption), skipped; kept in the quarantine. */
  skipped: number;
  /** Quarantine files holding unreadable lines found during this delivery. */
  unreadableFiles: string[];
  /** Events found by splitting a batch that kept failing: each failed alone and was quarantined. */
  isolated: number;
}

/**
 * A batch of this segment kept failing: batches are capped at `limit` events (halved at each
 * failure) until the segment is answered up to `end`, to find the event that fails alone.
 */
interface Split {
  limit: number;
  end: number;
}

type Work = { cursor: SegmentCursor; batch: QueuedEvent[] };

export class OutboxStreamer {
  readonly report: StreamReport;
  private readonly dir: string;
  private readonly limits: { maxEvents: number; maxBytes: number; lingerMs: number };
  private readonly backoff: BackoffPolicy;
  private readonly requestTimeoutMs: number;
  private readonly warn: (message: string) => void;

  private own: SegmentCursor | undefined;
  private bus: SessionBus | undefined;
  private older: SegmentCursor | undefined;
  private readonly olderIds: string[] = [];
  private readonly tried = new Set<string>();
  private readonly splits = new WeakMap<SegmentCursor, Split>();
  /** The batch failing in a row (by its first event), and how many times. */
  private failing: { firstId: string; count: number } | undefined;
  /** The last event the server stored: sent again (a harmless duplicate) to tell a bad event from a broken server. */
  private lastStored: QueuedEvent | undefined;
  private readonly reportedPaths = new Set<string>();

  // Events written to the own segment since it was last read, and when the first of them was.
  private unreadCount = 0;
  private unreadBytes = 0;
  private unreadSince: number | undefined;
  /** When the oldest event in the own queue was written. */
  private queuedSince: number | undefined;

  private finishing = false;
  private stopped = false;
  private attempt = 0;
  private wakeUp: (() => void) | undefined;
  /** Whether the last attempt found nothing listening at the server's address. */
  private refused = false;
  /** Ends the backoff after a refused connection when `finish` is called (to try once more, then give up). */
  private finishWake: (() => void) | undefined;
  private readonly inFlight = new AbortController();
  private readonly agent = new StreamAgent();
  private loop: Promise<void> | undefined;

  constructor(private readonly options: StreamerOptions) {
    this.dir = options.outboxDir;
    this.limits = {
      maxEvents: options.maxEvents ?? streamLimits.maxEvents,
      maxBytes: options.maxBytes ?? streamLimits.maxBytes,
      lingerMs: options.lingerMs ?? streamLimits.lingerMs,
    };
    this.backoff = options.backoff ?? defaultBackoff;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.warn = options.warn ?? ((m) => process.stderr.write(m));
    this.report = {
      server: redactUrl(options.connection.url),
      delivered: 0,
      accepted: 0,
      duplicates: 0,
      batches: 0,
      quarantined: 0,
      quarantineFiles: [],
      waiting: 0,
      heldElsewhere: [],
      skipped: 0,
      unreadableFiles: [],
      isolated: 0,
    };
  }

  /**
   * Starts delivering: the session's own segment as it is written (when a bus is given), then the
   * segments older commands left behind.
   */
  start(bus?: SessionBus): this {
    if (bus) {
      const attempt = tryLock(lockFile(this.dir, bus.sessionId), { writer: true });
      if (attempt.acquired) {
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
    }
    this.olderIds.push(...this.listSegments().filter((id) => !this.tried.has(id)));
    this.loop = this.run();
    return this;
  }

  /** The outbox's segments; what only looks like one (a directory named *.jsonl) is named once on stderr. */
  private listSegments(): string[] {
    return listSegmentIds(this.dir, (file) => {
      if (this.reportedPaths.has(file)) return;
      this.reportedPaths.add(file);
      this.warn(`tend: skipping ${file} in the outbox: it is not a file\n`);
    });
  }

  /** The next batch of a segment: within the stream's limits and the segment's split, if any. */
  private batchOf(cursor: SegmentCursor): Work {
    const limit = Math.min(this.limits.maxEvents, this.splits.get(cursor)?.limit ?? Infinity);
    return { cursor, batch: cursor.batch(limit, this.limits.maxBytes) };
  }

  /**
   * Lines of a segment that are not events are never sent; they are kept in the quarantine and
   * named on stderr, so nothing leaves the outbox unseen when the segment is deleted.
   */
  private keepUnreadable(cursor: SegmentCursor): void {
    if (cursor.unreadable.length === 0) return;
    const lines = cursor.unreadable.splice(0);
    const file = writeUnreadable(this.dir, cursor.id, lines);
    this.report.unreadableFiles.push(file);
    this.warn(
      `tend: ${lines.length} line(s) of ${cursor.file} are not events (at byte ${lines.map((l) => l.offset).join(', ')}); ` +
        `not sent, kept in ${file}\n`,
    );
  }

  /** Called by the bus for every event (after the outbox sink buffered it). Cheap: counts only. */
  private written(event: TendEvent, line: string): void {
    if (!streamedEventTypes.has(event.type)) return;
    this.unreadCount++;
    this.unreadBytes += line.length;
    if (this.unreadSince === undefined) {
      this.unreadSince = Date.now();
      this.wake();
    } else if (
      this.unreadCount + (this.own?.length ?? 0) >= this.limits.maxEvents ||
      this.unreadBytes + (this.own?.queuedBytes ?? 0) >= this.limits.maxBytes
    ) {
      this.wake();
    }
  }

  private wake(): void {
    const wake = this.wakeUp;
    this.wakeUp = undefined;
    wake?.();
  }

  /**
   * Sleeps until woken (when `wakeable`; by `finish` when `untilFinish`), stopped, or `ms`
   * passed. The timer never holds the process open.
   */
  private sleep(ms: number | undefined, wakeable: boolean, untilFinish = false): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        if (timer) clearTimeout(timer);
        if (this.wakeUp === done) this.wakeUp = undefined;
        if (this.finishWake === done) this.finishWake = undefined;
        this.stopWaiter.delete(done);
        resolve();
      };
      if (ms !== undefined) {
        timer = setTimeout(done, Math.max(0, ms));
        timer.unref();
      }
      if (wakeable) this.wakeUp = done;
      if (untilFinish) this.finishWake = done;
      this.stopWaiter.add(done);
    });
  }

  private readonly stopWaiter = new Set<() => void>();

  private stop(): void {
    this.stopped = true;
    this.inFlight.abort();
    for (const waiter of [...this.stopWaiter]) waiter();
  }

  /** When the own segment has a batch due: now (0), in some ms, or never (undefined). */
  private ownDueIn(now: number): number | undefined {
    const own = this.own;
    if (!own) return undefined;
    const count = own.length + this.unreadCount;
    if (count === 0) return undefined;
    if (this.finishing) return 0;
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
    this.keepUnreadable(own);
    // What fill could not take yet (over the read cap) stays counted as unread.
    if (!own.readToEnd()) {
      this.unreadCount = 1;
      this.unreadSince = this.queuedSince ?? Date.now();
    }
  }

  /** The next batch to send, or how long to wait for one. */
  private next(): Work | { waitMs: number | undefined } | 'done' {
    const own = this.own;
    if (own) {
      if (this.ownDueIn(Date.now()) === 0) {
        this.readOwn();
        if (own.length > 0) return this.batchOf(own);
      }
      if (this.finishing && own.length === 0 && this.unreadCount === 0) {
        // The session ended and everything it wrote was answered.
        own.live = false;
        own.retireIfDone(() => this.keepUnreadable(own));
        this.report.skipped += own.skipped;
        this.ownDone();
      }
    }
    const older = this.nextOlder();
    if (older) return older;
    if (this.finishing && !this.own) return 'done';
    return { waitMs: this.ownDueIn(Date.now()) };
  }

  private ownDone(): void {
    this.own?.release();
    this.own = undefined;
  }

  /** A batch from the oldest segment this process can take, or undefined when there is none. */
  private nextOlder(): Work | undefined {
    for (;;) {
      if (!this.older) {
        const id = this.olderIds.shift();
        if (id === undefined) return undefined;
        this.tried.add(id);
        const attempt = tryLock(lockFile(this.dir, id));
        if (!attempt.acquired) {
          this.report.heldElsewhere.push({
            sessionId: id,
            ...(attempt.heldBy ? { owner: attempt.heldBy } : {}),
            events: countWaiting(this.dir, id),
          });
          continue;
        }
        this.older = new SegmentCursor(this.dir, id, attempt.lock, false, Boolean(attempt.broke?.writer));
      }
      const cursor = this.older;
      if (cursor.length === 0) {
        try {
          cursor.fill(this.limits.maxBytes * 2);
        } catch (error) {
          // One segment that cannot be read must not stop the others.
          this.warn(`tend: skipping ${cursor.file}: ${(error as Error).message}\n`);
          cursor.release();
          this.older = undefined;
          continue;
        }
        this.keepUnreadable(cursor);
      }
      if (cursor.length > 0) return this.batchOf(cursor);
      // Everything read was answered: delete it if nobody writes to it any more, else leave it.
      cursor.retireIfDone(() => this.keepUnreadable(cursor));
      this.report.skipped += cursor.skipped;
      cursor.release();
      this.older = undefined;
    }
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped) {
        const work = this.next();
        if (work === 'done') break;
        if ('waitMs' in work) {
          await this.sleep(work.waitMs, true);
          continue;
        }
        await this.deliver(work);
      }
    } catch (error) {
      this.warn(`tend: event delivery stopped: ${(error as Error).message}; events wait in the outbox\n`);
    }
  }

  private async deliver({ cursor, batch }: Work): Promise<void> {
    const body = `{"events":[${batch.map((e) => e.text).join(',')}]}`;
    const outcome: SendOutcome = await sendBatch(this.options.connection, body, {
      signal: this.inFlight.signal,
      timeoutMs: this.requestTimeoutMs,
      agent: this.agent,
    });
    this.refused = outcome.kind === 'retry' && outcome.refused === true;
    switch (outcome.kind) {
      case 'stored':
        this.attempt = 0;
        this.failing = undefined;
        this.lastStored = batch[batch.length - 1];
        delete this.report.lastError;
        this.report.batches++;
        this.report.delivered += batch.length;
        this.report.accepted += outcome.accepted;
        this.report.duplicates += outcome.duplicates;
        cursor.acknowledge(batch.length);
        if (cursor === this.own && cursor.length === 0) this.queuedSince = undefined;
        this.endSplitWhenPast(cursor);
        return;
      case 'retry':
        this.report.lastError = outcome.reason;
        if (this.refused && this.options.giveUpWhenRefused) {
          if (this.finishing) {
            this.report.gaveUpRefused = true;
            this.stop();
            return;
          }
          // Tried once more, at once, when the command ends.
          await this.sleep(retryDelay(this.attempt++, undefined, this.backoff), false, true);
          return;
        }
        if (contentMayFail(outcome.status) && this.failedAgain(cursor, batch)) {
          const error = outcome.error ?? { code: `HTTP_${outcome.status}`, message: outcome.reason };
          if (await this.isolate(cursor, batch, outcome.status, error)) return;
        }
        await this.sleep(retryDelay(this.attempt++, outcome.retryAfterMs, this.backoff), false);
        return;
      case 'too-large':
        if (batch.length > 1) {
          // The server takes less than we send: halve the batches from now on.
          this.limits.maxEvents = Math.max(1, Math.floor(batch.length / 2));
          this.limits.maxBytes = Math.max(1024, Math.floor(body.length / 2));
          return;
        }
        if (this.dropUnreadable(cursor, batch)) return;
        this.quarantine(cursor, batch, outcome.status, outcome.error);
        return;
      case 'refused':
        if (this.dropUnreadable(cursor, batch)) return;
        // 400/422 without naming the event: some event of the batch is bad; split to find it.
        // Other refusals (403 for a token, say) are about the whole batch: quarantine it.
        if (
          batch.length > 1 &&
          (outcome.status === 400 || outcome.status === 422) &&
          typeof outcome.error.detail?.index !== 'number'
        ) {
          await this.isolate(cursor, batch, outcome.status, outcome.error);
          return;
        }
        this.quarantine(
          cursor,
          batch,
          outcome.status,
          outcome.error,
          batch.length === 1 && this.splits.delete(cursor),
        );
        return;
      case 'unauthorized':
        this.report.unauthorized = outcome.error;
        this.report.lastError = `the server refused the token (HTTP ${outcome.status}: ${outcome.error.message})`;
        this.warn(
          `tend: ${this.report.server} refused the token (${outcome.error.message}); events wait in the outbox: ` +
            'check TEND_TOKEN or run tend login, then tend events push\n',
        );
        this.stop();
        return;
      case 'aborted':
        return;
    }
  }

  /**
   * A line that is not JSON (a disk fault) is why a whole batch can be refused: it is taken out
   * (kept in the quarantine as unreadable) and the rest is sent again. True when there was one.
   */
  private dropUnreadable(cursor: SegmentCursor, batch: QueuedEvent[]): boolean {
    const corrupt = batch.filter((e) => {
      try {
        JSON.parse(e.text);
        return false;
      } catch {
        return true;
      }
    });
    if (corrupt.length === 0) return false;
    this.report.skipped += corrupt.length;
    cursor.removeUnreadable(corrupt);
    this.keepUnreadable(cursor);
    return true;
  }

  /**
   * Counts a 5xx for this batch; true when it is time to look at its content: it failed
   * `failuresBeforeSplit` times in a row, or it is a part of a batch already being split.
   */
  private failedAgain(cursor: SegmentCursor, batch: QueuedEvent[]): boolean {
    const firstId = batch[0]!.id;
    const count = this.failing?.firstId === firstId ? this.failing.count + 1 : 1;
    this.failing = { firstId, count };
    return count >= failuresBeforeSplit || (batch.length > 1 && this.splits.has(cursor));
  }

  private endSplitWhenPast(cursor: SegmentCursor): void {
    const split = this.splits.get(cursor);
    if (!split) return;
    const next = cursor.peek(0);
    if (!next || next.start >= split.end) this.splits.delete(cursor);
  }

  /**
   * A batch keeps failing (a 5xx after its retries, or a 4xx that names no event): split it in
   * halves until the event that fails alone is found, then quarantine that event with the
   * server's answer, and deliver the rest. A 5xx could also be a server failing for everything,
   * so an event failing alone with a 5xx is only quarantined once another event went through
   * right after it. Returns false when nothing was decided (the caller waits and retries).
   */
  private async isolate(
    cursor: SegmentCursor,
    batch: QueuedEvent[],
    status: number,
    error: ServerError,
  ): Promise<boolean> {
    this.failing = undefined;
    if (batch.length > 1) {
      const split = this.splits.get(cursor);
      if (!split)
        this.warn(
          `tend: ${this.report.server} keeps refusing a batch of ${batch.length} event(s) (HTTP ${status} ${error.code}: ` +
            `${error.message}); splitting it to find the event that fails alone\n`,
        );
      this.splits.set(cursor, {
        limit: Math.ceil(batch.length / 2),
        end: split?.end ?? batch[batch.length - 1]!.end,
      });
      return true;
    }
    if (status >= 500 && !(await this.serverStoresOthers(cursor))) return false;
    this.splits.delete(cursor);
    this.quarantine(cursor, batch, status, error, true);
    return true;
  }

  /**
   * Whether the server stores an event other than the head of `cursor` right now: the next one of
   * the segment, else the last one stored (sent again, a duplicate the server ignores).
   */
  private async serverStoresOthers(cursor: SegmentCursor): Promise<boolean> {
    const other = cursor.peek(1) ?? this.lastStored;
    if (!other) return false;
    const outcome = await sendBatch(this.options.connection, `{"events":[${other.text}]}`, {
      signal: this.inFlight.signal,
      timeoutMs: this.requestTimeoutMs,
      agent: this.agent,
    });
    return outcome.kind === 'stored';
  }

  /**
   * Keeps a refused batch in the quarantine with the server's answer. When the server names the
   * one bad event (`detail.index`), only that event is kept aside and the rest is sent again.
   */
  private quarantine(
    cursor: SegmentCursor,
    batch: QueuedEvent[],
    status: number,
    error: ServerError,
    isolated = false,
  ): void {
    const index = error.detail?.index;
    const single =
      typeof index === 'number' && Number.isInteger(index) && batch.length > 1 ? batch[index] : undefined;
    const kept = single ? [single] : batch;
    const events = kept.map((e) => JSON.parse(e.text) as TendEvent);
    const file = writeQuarantine(
      this.dir,
      {
        sessionId: events[0]!.sessionId,
        quarantinedAt: new Date().toISOString(),
        server: this.report.server,
        status,
        error,
        events,
        ...(isolated ? { isolated } : {}),
      },
      cursor.id,
    );
    if (single) cursor.removeQueued(new Set([single.id]));
    else cursor.acknowledge(batch.length);
    this.report.quarantined += kept.length;
    if (isolated) this.report.isolated += kept.length;
    this.report.quarantineFiles.push(file);
    const which = isolated
      ? `; ${events[0]!.type} ${events[0]!.id} fails alone, the rest of its batch is delivered`
      : '';
    this.warn(
      `tend: ${this.report.server} refused ${kept.length} event(s) (HTTP ${status} ${error.code}: ${error.message})${which}; ` +
        `kept in ${file}; see tend events outbox, resend with tend events push --retry-quarantined\n`,
    );
  }

  /**
   * Sends what is left, waiting at most `timeoutMs`, then stops and reports what still waits.
   * Call it after the session ended (its segment is complete). A second call returns the report.
   */
  async finish(timeoutMs: number): Promise<StreamReport> {
    if (!this.finishing) {
      this.finishing = true;
      // Segments other commands left since this one started.
      this.olderIds.push(
        ...this.listSegments().filter((id) => !this.tried.has(id) && !this.olderIds.includes(id)),
      );
      const deadline = setTimeout(() => this.stop(), timeoutMs); // holds the process open until then
      this.wake();
      this.finishWake?.();
      try {
        await this.loop;
      } finally {
        clearTimeout(deadline);
        this.stopped = true;
        this.agent.destroy();
        this.older?.release();
        this.own?.release();
        this.older = undefined;
      }
      this.report.waiting = this.countWaiting();
    }
    return this.report;
  }

  /** Stops at once (tests, a second Ctrl-C): nothing more is sent; locks are released. */
  async abort(): Promise<void> {
    this.stop();
    await this.loop;
    this.agent.destroy();
    this.older?.release();
    this.own?.release();
  }

  private countWaiting(): number {
    return countOutbox(this.dir, new Set(this.report.heldElsewhere.map((h) => h.sessionId)));
  }
}
