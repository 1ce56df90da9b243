/**
 * What the stream sets aside instead of sending: a batch the server refused (or the one event of
 * it the server named), an event found failing alone, lines of a segment that are not events.
 * Each is kept in the outbox's quarantine, named on stderr and counted in the report, so nothing
 * leaves the outbox unseen.
 */
import type { TendEvent } from '../events/catalog.js';
import type { SegmentCursor } from '../outbox/cursor.js';
import { writeQuarantine, writeUnreadable } from '../outbox/quarantine.js';
import type { QueuedEvent } from '../outbox/read.js';
import type { StreamReport } from './report.js';
import type { ServerError } from './transport.js';

export class SetAside {
  constructor(
    private readonly dir: string,
    private readonly report: StreamReport,
    private readonly warn: (message: string) => void,
  ) {}

  /**
   * Lines of a segment that are not events are never sent; they are kept in the quarantine and
   * named on stderr, so nothing leaves the outbox unseen when the segment is deleted.
   */
  keepUnreadable(cursor: SegmentCursor): void {
    if (cursor.unreadable.length === 0) return;
    const lines = cursor.unreadable.splice(0);
    const file = writeUnreadable(this.dir, cursor.id, lines);
    this.report.unreadableFiles.push(file);
    this.warn(
      `tend: ${lines.length} line(s) of ${cursor.file} are not events (at byte ${lines.map((l) => l.offset).join(', ')}); ` +
        `not sent, kept in ${file}\n`,
    );
  }

  /**
   * A line that is not JSON (a disk fault) is why a whole batch can be refused: it is taken out
   * (kept in the quarantine as unreadable) and the rest is sent again. True when there was one.
   */
  dropUnreadable(cursor: SegmentCursor, batch: QueuedEvent[]): boolean {
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
   * Keeps a refused batch in the quarantine with the server's answer. When the server names the
   * one bad event (`detail.index`), only that event is kept aside and the rest is sent again.
   */
  quarantine(
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
}
