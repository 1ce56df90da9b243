/**
 * `tend events push` and `tend events outbox` as data: send everything the outbox holds (every
 * segment no running command is sending, optionally the quarantined batches again), and describe
 * what waits.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { TendEvent } from '../events/catalog.js';
import { writeFileAtomic } from '../state/files.js';
import { outboxMaxBytes } from '../outbox/bound.js';
import { lockHolder, type LockOwner } from '../outbox/lock.js';
import { listQuarantine } from '../outbox/quarantine.js';
import { countWaiting, readEvents } from '../outbox/read.js';
import { listSegmentIds, lockFile, requeuedSuffix, segmentFile, segmentState } from '../outbox/segments.js';
import type { StreamReport } from './report.js';
import { OutboxStreamer } from './streamer.js';
import type { StreamConnection } from './transport.js';

/**
 * Moves quarantined batches back into the outbox as segments of their own, to be sent again.
 * The segment is named after the batch, so doing it twice (or in two processes) yields one.
 */
export function requeueQuarantine(outboxDir: string): { batches: number; events: number } {
  let batches = 0;
  let events = 0;
  for (const { file, batch } of listQuarantine(outboxDir)) {
    if (!batch || batch.events.length === 0) continue;
    // Named after the quarantine file (`<session>-<first event>`), which tend named safely.
    const id = `${path.basename(file, '.json')}${requeuedSuffix}`;
    writeFileAtomic(
      segmentFile(outboxDir, id),
      batch.events.map((e) => JSON.stringify(e) + '\n').join(''),
      0o600,
    );
    try {
      unlinkSync(file);
    } catch {
      // another push requeued it at the same time
    }
    batches++;
    events += batch.events.length;
  }
  return { batches, events };
}

export interface PushResult {
  report: StreamReport;
  requeued: { batches: number; events: number };
}

/** Sends every segment it can lock until the outbox is empty, or `timeoutMs` passed. */
export async function pushOutbox(options: {
  outboxDir: string;
  connection: StreamConnection;
  timeoutMs: number;
  retryQuarantined?: boolean;
  warn?: (message: string) => void;
}): Promise<PushResult> {
  const requeued = options.retryQuarantined
    ? requeueQuarantine(options.outboxDir)
    : { batches: 0, events: 0 };
  const streamer = new OutboxStreamer({
    outboxDir: options.outboxDir,
    connection: options.connection,
    ...(options.warn ? { warn: options.warn } : {}),
  }).start();
  const report = await streamer.finish(options.timeoutMs);
  return { report, requeued };
}

export interface OutboxSegmentView {
  sessionId: string;
  events: number;
  bytes: number;
  /** Client time of the oldest waiting event. */
  oldest?: string;
  /** The process sending it right now (a running command), if any. */
  sender?: LockOwner & { alive: boolean };
}

export interface QuarantineView {
  file: string;
  sessionId?: string;
  events: number;
  quarantinedAt?: string;
  status?: number;
  code?: string;
  message: string;
  /** The one event found by splitting a batch that kept failing (the rest was delivered). */
  isolated?: { id: string; type: string };
  /** Lines of a segment that were not events (never sent), by byte offset. */
  unreadableLines?: number[];
}

export interface OutboxView {
  dir: string;
  maxBytes: number;
  pendingBytes: number;
  events: number;
  segments: OutboxSegmentView[];
  quarantined: QuarantineView[];
  /** Entries named like segments that are not files (a directory named *.jsonl): left alone. */
  notSegments: string[];
}

export function describeOutbox(outboxDir: string, env: NodeJS.ProcessEnv = process.env): OutboxView {
  const segments: OutboxSegmentView[] = [];
  const notSegments: string[] = [];
  for (const id of listSegmentIds(outboxDir, (file) => notSegments.push(file))) {
    const state = segmentState(outboxDir, id);
    if (!state) continue;
    const events = countWaiting(outboxDir, id);
    const holder = lockHolder(lockFile(outboxDir, id));
    if (events === 0 && !holder) continue;
    const first = readEvents(state.file, state.ackOffset, 64 * 1024).events[0];
    let oldest: string | undefined;
    if (first) {
      try {
        oldest = (JSON.parse(first.text) as TendEvent).timestamp;
      } catch {
        // unreadable: no time shown
      }
    }
    segments.push({
      sessionId: id,
      events,
      bytes: state.pendingBytes,
      ...(oldest ? { oldest } : {}),
      ...(holder?.owner ? { sender: { ...holder.owner, alive: !holder.stale } } : {}),
    });
  }
  const quarantined = listQuarantine(outboxDir).map(({ file, batch, unreadable }): QuarantineView => {
    if (unreadable) {
      return {
        file,
        sessionId: unreadable.segment,
        events: 0,
        quarantinedAt: unreadable.foundAt,
        message: `${unreadable.lines.length} line(s) of segment ${unreadable.segment} are not events; never sent`,
        unreadableLines: unreadable.lines.map((l) => l.offset),
      };
    }
    if (!batch) {
      let size = 0;
      try {
        size = readFileSync(file).length;
      } catch {
        // gone
      }
      return { file, events: 0, message: `unreadable quarantine file (${size} bytes)` };
    }
    return {
      file,
      sessionId: batch.sessionId,
      events: batch.events.length,
      quarantinedAt: batch.quarantinedAt,
      status: batch.status,
      code: batch.error.code,
      message: batch.error.message,
      ...(batch.isolated && batch.events.length === 1
        ? { isolated: { id: String(batch.events[0]!.id), type: String(batch.events[0]!.type) } }
        : {}),
    };
  });
  return {
    dir: outboxDir,
    maxBytes: outboxMaxBytes(env),
    pendingBytes: segments.reduce((n, s) => n + s.bytes, 0),
    events: segments.reduce((n, s) => n + s.events, 0),
    segments,
    quarantined,
    notSegments,
  };
}

export function relativeToCwd(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith('..') ? rel : file;
}
