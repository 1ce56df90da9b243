/**
 * The outbox's writer: events of streamed types, appended durably to the session's segment
 * (`.tend/outbox/<sessionId>.jsonl`) before any network I/O. The stream client (src/stream/)
 * sends them and removes what the server acknowledged; whatever is left is sent by the next
 * command or `tend events push`. The file format is beside this file: names and ack offsets in
 * segments.ts, reading a segment back in read.ts, quarantine files in quarantine.ts.
 */
import { AppendFile } from '../state/append-file.js';
import type { EventSink } from '../events/bus.js';
import { isStreamedType, type TendEvent } from '../events/catalog.js';
import { segmentFile } from './segments.js';

export class OutboxSink implements EventSink {
  private readonly file: AppendFile;

  constructor(outboxDir: string, sessionId: string) {
    this.file = new AppendFile(segmentFile(outboxDir, sessionId));
  }

  write(event: TendEvent, line: string): void {
    if (isStreamedType(event.type)) this.file.append(line);
  }

  flush(): void {
    this.file.flush();
  }

  close(): void {
    this.file.close();
  }
}
