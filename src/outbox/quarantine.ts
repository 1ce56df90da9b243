/**
 * Quarantine files: what the stream set aside instead of sending, kept beside the outbox
 * (`quarantine/`) until `tend events push --retry-quarantined`. A batch the server refused, with
 * its answer (`<session>-<first event>.json`), or lines of a segment that are not events
 * (`<segment>-unreadable-<offset>.json`, never sent again).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TendEvent } from '../events/catalog.js';
import { listNamesWithSuffix, writeFileAtomic } from '../state/files.js';
import type { UnreadableLine } from './read.js';
import { quarantineDir, requeuedSuffix } from './segments.js';

export interface QuarantinedBatch {
  sessionId: string;
  quarantinedAt: string;
  server: string;
  status: number;
  error: { code: string; message: string; detail?: Record<string, unknown> };
  events: TendEvent[];
  /**
   * The event was found by splitting a batch that kept failing: it fails alone, and the rest of
   * its batch was delivered.
   */
  isolated?: boolean;
}

/** Lines of a segment that are not events, kept beside the outbox instead of being deleted with it. */
export interface UnreadableRecord {
  segment: string;
  foundAt: string;
  lines: UnreadableLine[];
}

/** A name part for a file: ids are ULIDs; anything else (absent, odd characters) gets the fallback. */
function safeNamePart(value: unknown, fallback: string): string {
  return typeof value === 'string' && /^[A-Za-z0-9_.-]{1,100}$/.test(value) && !value.startsWith('.')
    ? value
    : fallback;
}

/**
 * Keeps a refused batch beside the outbox with the server's answer; returns its file. It is
 * named after the session and the first event; `segmentId` names it when an event has no session.
 */
export function writeQuarantine(dir: string, batch: QuarantinedBatch, segmentId?: string): string {
  const qdir = quarantineDir(dir);
  mkdirSync(qdir, { recursive: true });
  const first = batch.events[0] as Partial<TendEvent> | undefined;
  const session = safeNamePart(
    batch.sessionId,
    safeNamePart(segmentId?.replace(requeuedSuffix, ''), 'unknown-session'),
  );
  const file = path.join(qdir, `${session}-${safeNamePart(first?.id, 'unknown-event')}.json`);
  writeFileAtomic(file, JSON.stringify({ ...batch, sessionId: session }, null, 2) + '\n', 0o600);
  return file;
}

/** Keeps unreadable lines of a segment in the quarantine (`<segment>-unreadable-<offset>.json`); returns its file. */
export function writeUnreadable(dir: string, segmentId: string, lines: UnreadableLine[]): string {
  const qdir = quarantineDir(dir);
  mkdirSync(qdir, { recursive: true });
  const file = path.join(
    qdir,
    `${safeNamePart(segmentId, 'unknown-session')}-unreadable-${lines[0]?.offset ?? 0}.json`,
  );
  const record: UnreadableRecord = { segment: segmentId, foundAt: new Date().toISOString(), lines };
  writeFileAtomic(file, JSON.stringify(record, null, 2) + '\n', 0o600);
  return file;
}

export function listQuarantine(
  dir: string,
): { file: string; batch: QuarantinedBatch | undefined; unreadable?: UnreadableRecord }[] {
  const qdir = quarantineDir(dir);
  return listNamesWithSuffix(qdir, '.json').map((name) => {
    const file = path.join(qdir, `${name}.json`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return { file, batch: undefined };
    }
    const record = parsed as Partial<QuarantinedBatch & UnreadableRecord> | null;
    if (record && Array.isArray(record.lines) && typeof record.segment === 'string')
      return { file, batch: undefined, unreadable: record as UnreadableRecord };
    if (record && Array.isArray(record.events) && record.error && typeof record.error === 'object')
      return { file, batch: record as QuarantinedBatch };
    return { file, batch: undefined };
  });
}
