/**
 * Lock files for outbox segments: whoever holds `<segment>.lock` is the only process that sends
 * that segment, so two tend processes sharing one outbox never send the same batch twice.
 *
 * A lock is a file created with O_EXCL holding `{pid, host, acquiredAt}`. A lock whose process is
 * gone (same host, `kill(pid, 0)` fails with ESRCH; on Linux also a zombie, or a pid now used by
 * a process started at another time) is stale and may be broken; breaking goes
 * through a second O_EXCL file (`<lock>.break`) so two processes that find the same stale lock
 * cannot both break it and both end up holding the segment.
 */
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';

export interface LockOwner {
  pid: number;
  host: string;
  acquiredAt: string;
  /** The holder also writes the segment (the session's own process). */
  writer?: boolean;
  /** Linux: the holder's start time (clock ticks since boot), which tells a reused pid apart. */
  start?: string;
}

export interface HeldLock {
  file: string;
  owner: LockOwner;
  /** Removes the lock file if it is still ours. */
  release(): void;
}

export type LockAttempt =
  | {
      acquired: true;
      lock: HeldLock;
      /** The dead holder whose lock was broken to get this one. */
      broke?: LockOwner;
    }
  | { acquired: false; heldBy: LockOwner | undefined };

/** A lock file that cannot be read (its holder is between create and write) counts as held this long. */
const unreadableGraceMs = 10_000;
/** A break file older than this belongs to a process that died while breaking. */
const breakGraceMs = 10_000;

const thisHost = hostname();

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Linux: a process's state and start time from /proc; undefined elsewhere or when it is gone. */
function procStat(pid: number): { state: string; start: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses; fields after it are plain.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return fields.length > 19 ? { state: fields[0]!, start: fields[19]! } : undefined;
}

const ownStart = procStat(process.pid)?.start;

function readOwner(file: string): { text: string; owner?: LockOwner } | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockOwner>;
    if (typeof parsed.pid === 'number' && typeof parsed.host === 'string') {
      return {
        text,
        owner: {
          pid: parsed.pid,
          host: parsed.host,
          acquiredAt: String(parsed.acquiredAt ?? ''),
          ...(parsed.writer === true ? { writer: true } : {}),
          ...(typeof parsed.start === 'string' ? { start: parsed.start } : {}),
        },
      };
    }
  } catch {
    // unreadable: judged by its age below
  }
  return { text };
}

function ageMs(file: string): number {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** Whether a lock read from disk belongs to a process that no longer exists. */
export function isStale(file: string, read: { owner?: LockOwner }): boolean {
  if (!read.owner) return ageMs(file) > unreadableGraceMs;
  // Another host's process cannot be checked from here: its lock is respected.
  if (read.owner.host !== thisHost) return false;
  if (!isProcessAlive(read.owner.pid)) return true;
  // Alive by kill(0), but a zombie, or another process that got the same pid.
  const stat = procStat(read.owner.pid);
  if (!stat) return false;
  return stat.state === 'Z' || (read.owner.start !== undefined && read.owner.start !== stat.start);
}

function create(file: string, writer: boolean): HeldLock | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  }
  const owner: LockOwner = {
    pid: process.pid,
    host: thisHost,
    acquiredAt: new Date().toISOString(),
    ...(writer ? { writer: true } : {}),
    ...(ownStart ? { start: ownStart } : {}),
  };
  const text = JSON.stringify(owner);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  let released = false;
  return {
    file,
    owner,
    release() {
      if (released) return;
      released = true;
      // Only our own lock: after a (mistaken) break someone else's may stand here.
      if (readOwner(file)?.text === text) removeQuietly(file);
    },
  };
}

export function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** Breaks a stale lock if it is still the same stale lock; true when it is gone. */
function breakStale(file: string, staleText: string): boolean {
  const breaker = `${file}.break`;
  let fd: number;
  try {
    fd = openSync(breaker, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    if (ageMs(breaker) > breakGraceMs) removeQuietly(breaker);
    return false;
  }
  closeSync(fd);
  try {
    const now = readOwner(file);
    if (!now) return true;
    if (now.text !== staleText) return false;
    removeQuietly(file);
    return true;
  } finally {
    removeQuietly(breaker);
  }
}

/**
 * Takes the lock, breaking it first if its holder is dead; otherwise says who holds it.
 * `writer`: the taker also writes the segment (a session locking its own segment).
 */
export function tryLock(file: string, options: { writer?: boolean } = {}): LockAttempt {
  let broke: LockOwner | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const lock = create(file, Boolean(options.writer));
    if (lock) return { acquired: true, lock, ...(broke ? { broke } : {}) };
    const read = readOwner(file);
    if (!read) continue; // released meanwhile: try again
    if (!isStale(file, read) || !breakStale(file, read.text)) return { acquired: false, heldBy: read.owner };
    broke = read.owner;
  }
  return { acquired: false, heldBy: readOwner(file)?.owner };
}

/** Who holds a lock, and whether that holder is still alive; undefined when nobody does. */
export function lockHolder(file: string): { owner: LockOwner | undefined; stale: boolean } | undefined {
  const read = readOwner(file);
  if (!read) return undefined;
  return { owner: read.owner, stale: isStale(file, read) };
}
