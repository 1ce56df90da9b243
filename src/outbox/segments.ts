/**
 * The outbox's layout on disk: the one place that names its files (the writer, the stream and
 * `tend events` all go through here), lists its segments and reads and writes ack offsets.
 * `.tend/outbox/` holds, per CLI session:
 *
 * - `<sessionId>.jsonl`: the segment, appended by the session's OutboxSink (writer.ts), one event
 *   a line (read back by read.ts);
 * - `<sessionId>.ack`: `{"offset": n}`, the bytes of the segment the server acknowledged (or that
 *   were quarantined or dropped), written atomically after answered batches (cursor.ts);
 * - `<sessionId>.lock`: who is sending the segment (lock.ts);
 * - `quarantine/<sessionId>-<firstEventId>.json`: a batch the server refused, with its answer
 *   (quarantine.ts).
 *
 * A segment is deleted when it is acknowledged to its end and nobody writes to it any more (its
 * session ended, or it has been idle longer than a live session's heartbeat allows).
 */
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { listNamesWithSuffix } from '../state/files.js';

const segmentSuffix = '.jsonl';
/** Segments made of quarantined batches sent again (`tend events push --retry-quarantined`): never appended to. */
export const requeuedSuffix = '.requeued';

export const segmentFile = (dir: string, id: string) => path.join(dir, id + segmentSuffix);
export const ackFile = (dir: string, id: string) => path.join(dir, `${id}.ack`);
export const lockFile = (dir: string, id: string) => path.join(dir, `${id}.lock`);
export const quarantineDir = (dir: string) => path.join(dir, 'quarantine');

/**
 * Segment ids (session ids) in the outbox, oldest first: ULIDs sort by creation time. Only
 * files count: anything else named `*.jsonl` (a directory, say) is passed to `onSkipped` with
 * its path and left alone, so it cannot stop the stream or `tend events outbox`.
 */
export function listSegmentIds(dir: string, onSkipped?: (file: string) => void): string[] {
  return listNamesWithSuffix(dir, segmentSuffix).filter((id) => {
    const file = segmentFile(dir, id);
    let isFile: boolean;
    try {
      isFile = statSync(file).isFile();
    } catch {
      return false; // gone since it was listed
    }
    if (!isFile) onSkipped?.(file);
    return isFile;
  });
}

export interface AckState {
  offset: number;
  /** The segment's writer is known to be dead: nothing will be appended. */
  closed: boolean;
}

export function readAckState(dir: string, id: string): AckState {
  try {
    const parsed = JSON.parse(readFileSync(ackFile(dir, id), 'utf8')) as {
      offset?: unknown;
      closed?: unknown;
    };
    const offset = parsed.offset;
    return {
      offset: typeof offset === 'number' && Number.isInteger(offset) && offset >= 0 ? offset : 0,
      closed: parsed.closed === true,
    };
  } catch {
    return { offset: 0, closed: false };
  }
}

export function readAck(dir: string, id: string): number {
  return readAckState(dir, id).offset;
}

/**
 * Writes the ack atomically (temporary file, rename) but without fsync: after a machine crash an
 * older or unreadable ack only means events are sent again, and the server ignores duplicates.
 */
export function writeAck(dir: string, id: string, offset: number, closed = false): void {
  const file = ackFile(dir, id);
  const temp = `${file}.${process.pid}.${(ackSequence++).toString(36)}.tmp`;
  writeFileSync(temp, JSON.stringify(closed ? { offset, closed } : { offset }) + '\n', { mode: 0o600 });
  renameSync(temp, file);
}

let ackSequence = 0;

export function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

export interface SegmentState {
  id: string;
  file: string;
  size: number;
  ackOffset: number;
  /** Unacknowledged bytes. */
  pendingBytes: number;
  modifiedMs: number;
}

export function segmentState(dir: string, id: string): SegmentState | undefined {
  const file = segmentFile(dir, id);
  let stat;
  try {
    stat = statSync(file);
  } catch {
    return undefined;
  }
  const ackOffset = Math.min(readAck(dir, id), stat.size);
  return {
    id,
    file,
    size: stat.size,
    ackOffset,
    pendingBytes: stat.size - ackOffset,
    modifiedMs: stat.mtimeMs,
  };
}
