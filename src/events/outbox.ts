/**
 * The outbox: events of streamed types, appended durably to `.tend/outbox/<sessionId>.jsonl`
 * before any network I/O. The stream client (src/stream/) sends them and removes what the
 * server acknowledged; whatever is left is sent by the next command or `tend events push`.
 * Reading it back (ack offsets, pending events) is src/stream/segments.ts.
 */
import path from 'node:path';
import { AppendFile } from '../state/append-file.js';
import type { EventSink } from './bus.js';
import { streamedEventTypes, type TendEvent } from './catalog.js';

export class OutboxSink implements EventSink {
  private readonly file: AppendFile;

  constructor(outboxDir: string, sessionId: string) {
    this.file = new AppendFile(path.join(outboxDir, `${sessionId}.jsonl`));
  }

  write(event: TendEvent, line: string): void {
    if (streamedEventTypes.has(event.type)) this.file.append(line);
  }

  flush(): void {
    this.file.flush();
  }

  close(): void {
    this.file.close();
  }
}
