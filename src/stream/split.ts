/**
 * One bad event never stops the stream (docs/stream.md): a batch that keeps failing is split in
 * halves — the segment's batches capped at half the failing one, halved again at each failure —
 * until the event that fails alone is found; that event is set aside with the server's answer
 * and the events around it are delivered as the halves succeed.
 *
 * A 400/422 naming no event is the server's word that the batch is bad: it is split at once. A
 * 5xx could also be a server failing for everything: a batch is split after `failuresBeforeSplit`
 * failures in a row, and an event failing alone is set aside only if the server stores another
 * event right then. 502, 503 and 504 never split a batch.
 */
import type { SegmentCursor } from '../outbox/cursor.js';
import type { QueuedEvent } from '../outbox/read.js';
import type { SetAside } from './set-aside.js';
import type { SendOutcome, ServerError } from './transport.js';

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

/**
 * A batch of this segment kept failing: batches are capped at `limit` events (halved at each
 * failure) until the segment is answered up to `end`, to find the event that fails alone.
 */
interface Split {
  limit: number;
  end: number;
}

export class BatchSplitter {
  private readonly splits = new WeakMap<SegmentCursor, Split>();
  /** The batch failing in a row (by its first event), and how many times. */
  private failing: { firstId: string; count: number } | undefined;
  /** The last event the server stored: sent again (a harmless duplicate) to tell a bad event from a broken server. */
  private lastStored: QueuedEvent | undefined;

  constructor(
    private readonly context: {
      /** The server as it is shown (the report's). */
      server: string;
      warn: (message: string) => void;
      setAside: SetAside;
      /** Sends one request body `{"events":[…]}` as the stream does. */
      send: (body: string) => Promise<SendOutcome>;
    },
  ) {}

  /** The most events a batch of this segment may hold: its split's cap, if it is being split. */
  limit(cursor: SegmentCursor): number {
    return this.splits.get(cursor)?.limit ?? Infinity;
  }

  /** The server stored this batch (acknowledged in `cursor`): failures count from 0 again. */
  stored(cursor: SegmentCursor, batch: QueuedEvent[]): void {
    this.failing = undefined;
    this.lastStored = batch[batch.length - 1];
    this.endSplitWhenPast(cursor);
  }

  /**
   * A batch to be retried: when its answer can be about its content (a 5xx) and it failed often
   * enough, looks into it. True when that settled something (send the next batch at once), false
   * when the caller waits and retries.
   */
  async retried(
    cursor: SegmentCursor,
    batch: QueuedEvent[],
    outcome: Extract<SendOutcome, { kind: 'retry' }>,
  ): Promise<boolean> {
    const status = outcome.status;
    if (!contentMayFail(status) || !this.failedAgain(cursor, batch)) return false;
    const error = outcome.error ?? { code: `HTTP_${status}`, message: outcome.reason };
    return this.isolate(cursor, batch, status, error);
  }

  /** One event refused alone: true when it is the end of a split (the event that fails alone). */
  endSplit(cursor: SegmentCursor): boolean {
    return this.splits.delete(cursor);
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
  async isolate(
    cursor: SegmentCursor,
    batch: QueuedEvent[],
    status: number,
    error: ServerError,
  ): Promise<boolean> {
    this.failing = undefined;
    if (batch.length > 1) {
      const split = this.splits.get(cursor);
      if (!split)
        this.context.warn(
          `tend: ${this.context.server} keeps refusing a batch of ${batch.length} event(s) (HTTP ${status} ${error.code}: ` +
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
    this.context.setAside.quarantine(cursor, batch, status, error, true);
    return true;
  }

  /**
   * Whether the server stores an event other than the head of `cursor` right now: the next one of
   * the segment, else the last one stored (sent again, a duplicate the server ignores).
   */
  private async serverStoresOthers(cursor: SegmentCursor): Promise<boolean> {
    const other = cursor.peek(1) ?? this.lastStored;
    if (!other) return false;
    const outcome = await this.context.send(`{"events":[${other.text}]}`);
    return outcome.kind === 'stored';
  }
}
