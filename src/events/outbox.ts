/**
 * The outbox: events of streamed types, appended durably to `.tend/outbox/<sessionId>.jsonl`
 * before any network I/O. The stream client (src/stream/) sends them and removes what the
 * server acknowledged; whatever is left is sent by the next command or `tend events push`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AppendFile } from '../state/append-file.js';
import { parseJsonLines } from '../state/files.js';
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

export interface OutboxSegment {
  sessionId: string;
  file: string;
  events: TendEvent[];
  skipped: number;
}

/** Every segment waiting in the outbox, oldest session first. */
export function readOutbox(outboxDir: string): OutboxSegment[] {
  let names: string[];
  try {
    names = readdirSync(outboxDir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.jsonl'))
    .sort()
    .map((n) => {
      const file = path.join(outboxDir, n);
      const { records, skipped } = parseJsonLines<TendEvent>(readFileSync(file, 'utf8'));
      return { sessionId: n.slice(0, -'.jsonl'.length), file, events: records, skipped };
    });
}
