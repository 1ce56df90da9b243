/**
 * The outbox's bound on disk (default 64 MiB, `TEND_OUTBOX_MAX_BYTES`). When the events waiting
 * exceed it, the oldest droppable events go first: `log`, then `actionStatus`. `namespaceStatus`
 * and the session events are never dropped: they are the activity record cleanup relies on.
 * Only segments nobody writes or sends any more are rewritten.
 */
import { readFileSync, renameSync, rmSync, statSync } from 'node:fs';
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

/** Commands without a server between two counts of the outbox's files (outboxSizeLedger). */
export const outboxRecountEvery = 100;

/**
 * What the commands of a project without a server last knew of its outbox's size, kept in the
 * project's cache (`.tend/cache/outbox-bytes.json`): `bytes`, the size of its segment files, and
 * `commands`, how many commands added their own segment to it since the files were last counted.
 */
interface OutboxSizeLedger {
  bytes: number;
  commands: number;
}

function readLedger(file: string): OutboxSizeLedger | undefined {
  try {
    const { bytes, commands } = JSON.parse(readFileSync(file, 'utf8')) as Partial<OutboxSizeLedger>;
    const count = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
    return count(bytes) && count(commands) ? { bytes: bytes!, commands: commands! } : undefined;
  } catch {
    // Missing, torn or not ours: the files are counted.
    return undefined;
  }
}

/**
 * The bound for a project without a server: the outbox still records every session (a server
 * configured later gets them), so it is kept within its bound at the end of each command. Each
 * command leaves a segment there, thousands in a few months, and a `stat` of each at the end of
 * every command grew to tens of milliseconds; so a command adds its own segment (`ownSegment`)
 * to the size the ledger (`ledgerFile`) holds, and the files are counted only when that is over
 * the bound, every `outboxRecountEvery` commands, or without a usable ledger. Two commands ending
 * together may count one segment short; the next count corrects it. The full check runs only
 * when the counted files are over the bound.
 */
export function enforceBoundWithoutServer(
  dir: string,
  maxBytes: number,
  { ownSegment, ledgerFile }: { ownSegment: string; ledgerFile: string },
): BoundReport | undefined {
  const ledger = readLedger(ledgerFile);
  if (ledger && ledger.commands < outboxRecountEvery) {
    let own = 0;
    try {
      own = statSync(segmentFile(dir, ownSegment)).size;
    } catch {
      // No event written: nothing added.
    }
    if (ledger.bytes + own <= maxBytes) {
      writeLedger(ledgerFile, { bytes: ledger.bytes + own, commands: ledger.commands + 1 });
      return undefined;
    }
  }
  let total = 0;
  try {
    for (const id of listNamesWithSuffix(dir, '.jsonl'))
      total += statSync(path.join(dir, `${id}.jsonl`)).size;
  } catch {
    return undefined;
  }
  const report = total > maxBytes ? enforceBound(dir, maxBytes) : undefined;
  // After events were dropped the files are counted again by the next command.
  if (report) rmSync(ledgerFile, { force: true });
  else writeLedger(ledgerFile, { bytes: total, commands: 0 });
  return report;
}

function writeLedger(file: string, ledger: OutboxSizeLedger): void {
  try {
    writeFileAtomic(file, JSON.stringify(ledger), 0o644, { durable: false });
  } catch {
    // A cache: without it the files are counted.
  }
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
