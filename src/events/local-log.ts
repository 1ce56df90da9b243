/**
 * The local event log: every session's events in `.tend/events/<sessionId>.jsonl`, read by
 * `tend events`. A line that is not an event (a torn last line after a crash, or anything else
 * written there) is skipped when read, and its line number is reported.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AppendFile } from '../state/append-file.js';
import { listNamesWithSuffix } from '../state/files.js';
import type { EventSink } from './bus.js';
import type { TendEvent } from './catalog.js';

export class LocalLogSink implements EventSink {
  private readonly file: AppendFile;

  constructor(eventsDir: string, sessionId: string) {
    this.file = new AppendFile(path.join(eventsDir, `${sessionId}.jsonl`));
  }

  write(_event: TendEvent, line: string): void {
    this.file.append(line);
  }

  flush(): void {
    this.file.flush();
  }

  close(): void {
    this.file.close();
  }
}

export interface SessionLogInfo {
  sessionId: string;
  file: string;
  modifiedAt: Date;
  sizeBytes: number;
}

/** Session logs, newest first. Session ids are ULIDs, so their order is their start order. */
export function listSessionLogs(eventsDir: string): SessionLogInfo[] {
  return listNamesWithSuffix(eventsDir, '.jsonl')
    .reverse()
    .flatMap((sessionId) => {
      const file = path.join(eventsDir, `${sessionId}.jsonl`);
      let stat;
      try {
        stat = statSync(file);
      } catch {
        return []; // removed since it was listed
      }
      // Only files are logs (a directory named *.jsonl is not).
      return stat.isFile() ? [{ sessionId, file, modifiedAt: stat.mtime, sizeBytes: stat.size }] : [];
    });
}

/** Whether a parsed line has the shape of an event: what `tend events` relies on to show it. */
export function looksLikeEvent(value: unknown): value is TendEvent {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const e = value as Record<string, unknown>;
  return (
    typeof e.id === 'string' &&
    typeof e.type === 'string' &&
    typeof e.timestamp === 'string' &&
    e.payload !== null &&
    typeof e.payload === 'object' &&
    !Array.isArray(e.payload)
  );
}

/** A session log's events; `skippedLines` are the (1-based) numbers of lines that are not events. */
export function readSessionLog(file: string): {
  events: TendEvent[];
  skipped: number;
  skippedLines: number[];
} {
  const events: TendEvent[] = [];
  const skippedLines: number[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    if (looksLikeEvent(value)) events.push(value);
    else skippedLines.push(i + 1);
  }
  return { events, skipped: skippedLines.length, skippedLines };
}
