/**
 * The local event log: every session's events in `.tend/events/<sessionId>.jsonl`, read by
 * `tend events`. A torn last line (crash mid-write) is skipped with a warning when read.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AppendFile } from '../state/append-file.js';
import { listNamesWithSuffix, parseJsonLines } from '../state/files.js';
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
    .map((sessionId) => {
      const file = path.join(eventsDir, `${sessionId}.jsonl`);
      const stat = statSync(file);
      return { sessionId, file, modifiedAt: stat.mtime, sizeBytes: stat.size };
    });
}

export function readSessionLog(file: string): { events: TendEvent[]; skipped: number } {
  const { records, skipped } = parseJsonLines<TendEvent>(readFileSync(file, 'utf8'));
  return { events: records, skipped };
}
