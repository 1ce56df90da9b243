/**
 * The outbox's bound on disk (default 64 MiB, `TEND_OUTBOX_MAX_BYTES`). When the events waiting
 * exceed it, the oldest droppable events go first: `log`, then `actionStatus`. `namespaceStatus`
 * and the session events are never dropped: they are the activity record cleanup relies on.
 * Only segments nobody writes or sends any more are rewritten.
 */
import { renameSync, statSync } from 'node:fs';
import path from 'node:path';
import type { EventType } from '../events/catalog.js';
import { listNamesWithSuffix, writeFileAtomic } from '../state/files.js';
import { SegmentCursor } from './cursor.js';
import { tryLock } from './lock.js';
import { readPending, type QueuedEvent } from './read.js';
import { listSegmentIds, lockFile, readAckState, segmentFile, segmentState, writeAck } from './segments.js';

export const defaultOutboxMaxBytes = 64 * 1024 * 1024;

/** The order in which event types are dropped; types not listed are never dropped. */
export const dropOrder: readonly EventType[] = ['log', 'actionStatus'];

export function outboxMaxBytes(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TEND_OUTBOX_MAX_BYTES;
  if (!raw) return defaultOutboxMaxBytes;
  const n = Number(raw);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : defaultOutboxMaxBytes;
}

export interface DropPlan {
  /** Event ids to drop, per segment. */
  drop: Map<string, Set<string>>;
  dropped: Partial<Record<EventType, number>>;
  freedBytes: number;
}

/**
 * Which events to drop to free `excessBytes`: by type in `dropOrder`, and within a type oldest
 * first (segments oldest first, events in order). Pure: what it plans is applied elsewhere.
 */
export function planDrops(
  segments: { id: string; events: Pick<QueuedEvent, 'id' | 'type' | 'bytes'>[] }[],
  excessBytes: number,
  order: readonly EventType[] = dropOrder,
): DropPlan {
  const plan: DropPlan = { drop: new Map(), dropped: {}, freedBytes: 0 };
  for (const type of order) {
    for (const segment of segments) {
      for (const event of segment.events) {
        if (plan.freedBytes >= excessBytes) return plan;
        if (event.type !== type) continue;
        let set = plan.drop.get(segment.id);
        if (!set) plan.drop.set(segment.id, (set = new Set()));
        set.add(event.id);
        plan.dropped[type] = (plan.dropped[type] ?? 0) + 1;
        plan.freedBytes += event.bytes;
      }
    }
  }
  return plan;
}

export interface BoundReport {
  /** Bytes waiting before anything was dropped. */
  pendingBytes: number;
  maxBytes: number;
  dropped: Partial<Record<EventType, number>>;
  /** Still over the bound after dropping everything droppable (only undroppable events left). */
  stillOverBy: number;
}

/** Bytes of events waiting in the outbox (all segments, beyond their ack offsets). */
export function pendingOutboxBytes(dir: string): number {
  let total = 0;
  for (const id of listSegmentIds(dir)) total += segmentState(dir, id)?.pendingBytes ?? 0;
  return total;
}

/** Drops events when the outbox is over its bound; undefined when it is within it. */
export function enforceBound(dir: string, maxBytes: number): BoundReport | undefined {
  const ids = listSegmentIds(dir);
  const states = ids.map((id) => segmentState(dir, id)).filter((s) => s !== undefined);
  const pendingBytes = states.reduce((sum, s) => sum + s.pendingBytes, 0);
  if (pendingBytes <= maxBytes) return undefined;
  // Lock every segment that can be rewritten: not sent or written by anyone else.
  const held: { cursor: SegmentCursor; events: QueuedEvent[] }[] = [];
  try {
    for (const state of states) {
      const attempt = tryLock(lockFile(dir, state.id));
      if (!attempt.acquired) continue;
      const cursor = new SegmentCursor(dir, state.id, attempt.lock, false, Boolean(attempt.broke?.writer));
      const { events } = readPending(dir, state.id);
      const last = events.at(-1)?.type;
      if (last === 'sessionCompleted' || last === 'sessionFailed' || cursor.writerGone()) {
        held.push({ cursor, events });
      } else {
        cursor.release();
      }
    }
    const plan = planDrops(
      held.map((h) => ({ id: h.cursor.id, events: h.events })),
      pendingBytes - maxBytes,
    );
    for (const [id, drop] of plan.drop) rewriteSegment(dir, id, drop);
    return {
      pendingBytes,
      maxBytes,
      dropped: plan.dropped,
      stillOverBy: Math.max(0, pendingBytes - plan.freedBytes - maxBytes),
    };
  } finally {
    for (const h of held) h.cursor.release();
  }
}

/**
 * Rewrites a segment without the given events (the size bound). The caller holds its lock and
 * nobody appends to it. The ack is reset first: a crash in between re-sends acknowledged events
 * (duplicates the server ignores) instead of skipping unacknowledged ones.
 */
function rewriteSegment(dir: string, id: string, drop: ReadonlySet<string>): void {
  const { events } = readPending(dir, id);
  const kept = events.filter((e) => !drop.has(e.id));
  const file = segmentFile(dir, id);
  const temp = `${file}.${process.pid}.compact`;
  writeFileAtomic(temp, kept.map((e) => e.text + '\n').join(''), 0o600);
  writeAck(dir, id, 0, readAckState(dir, id).closed);
  renameSync(temp, file);
}

/**
 * The bound for a project without a server: the outbox still records every session (a server
 * configured later gets them), so it is kept within its bound at the end of each command. A
 * `stat` of each file first: the full check runs only when the files are over the bound.
 */
export function enforceBoundWithoutServer(dir: string, maxBytes: number): BoundReport | undefined {
  let total = 0;
  try {
    for (const id of listNamesWithSuffix(dir, '.jsonl'))
      total += statSync(path.join(dir, `${id}.jsonl`)).size;
  } catch {
    return undefined;
  }
  return total > maxBytes ? enforceBound(dir, maxBytes) : undefined;
}

export function describeDrops(report: BoundReport): string {
  const parts = Object.entries(report.dropped).map(([type, n]) => `${n} ${type}`);
  const mib = (n: number) =>
    n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
  const head =
    parts.length > 0
      ? `tend: the outbox held ${mib(report.pendingBytes)}, over its bound of ${mib(report.maxBytes)} (TEND_OUTBOX_MAX_BYTES); dropped the oldest ${parts.join(' and ')} event(s)`
      : `tend: the outbox holds ${mib(report.pendingBytes)}, over its bound of ${mib(report.maxBytes)} (TEND_OUTBOX_MAX_BYTES)`;
  const tail =
    report.stillOverBy > 0
      ? `; ${mib(report.stillOverBy)} over remain: namespaceStatus and session events are never dropped (run tend events push)`
      : '';
  return head + tail + '\n';
}
