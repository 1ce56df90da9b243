/**
 * Reading a growing text file line by line, as `tail -f` does: from a position (the start, or
 * the last N lines), then — when following — the lines appended to it, until the reader says
 * stop, a condition holds at the end of the file, or the signal aborts. Used for the local
 * event log (`tend events --follow`) and exec deploys' log files (`tend logs`).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

export interface FollowOptions {
  /** Byte offset to start at (default 0); `tailStart` finds the one of the last N lines. */
  from?: number;
  /** Keep reading what is appended; without it, stop at the end of the file (or `to`). */
  follow: boolean;
  /**
   * Without `follow`: the byte offset to stop at — the end the tail was counted from, so that
   * what a running process appends meanwhile does not add lines (default: the end when read).
   */
  to?: number;
  /** With `follow`: stop once the end is reached and this holds (the writer is gone). */
  until?: () => boolean;
  signal?: AbortSignal;
  /** Each complete line, without its newline; `'stop'` ends the reading after it. */
  onLine(line: string, lineNumber: number): 'stop' | void;
  /** How often to look for appended data (default 100 ms). */
  intervalMs?: number;
}

const chunkSize = 64 * 1024;

export async function readLines(file: string, options: FollowOptions): Promise<void> {
  const fd = openSync(file, 'r');
  let position = options.from ?? 0;
  let lineNumber = 0;
  let rest = '';
  const buffer = Buffer.alloc(chunkSize);
  try {
    while (!options.signal?.aborted) {
      const size = options.follow
        ? statSync(file).size
        : Math.min(options.to ?? Infinity, statSync(file).size);
      if (size < position) position = 0; // truncated: start again
      while (position < size) {
        const n = readSync(fd, buffer, 0, Math.min(buffer.length, size - position), position);
        if (n === 0) break;
        position += n;
        const lines = (rest + buffer.toString('utf8', 0, n)).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          lineNumber++;
          if (options.onLine(line.endsWith('\r') ? line.slice(0, -1) : line, lineNumber) === 'stop') return;
        }
      }
      if (!options.follow || options.until?.()) break;
      await delay(options.intervalMs ?? 100, undefined, { signal: options.signal }).catch(() => undefined);
    }
    // A last line without its newline, once nothing more will be appended.
    if (rest && !options.signal?.aborted) options.onLine(rest, lineNumber + 1);
  } finally {
    closeSync(fd);
  }
}

/** The byte offset at which the last `lines` lines of the file start (0 when it has fewer). */
export function tailStart(file: string, lines: number, size = statSync(file).size): number {
  if (lines <= 0) return size;
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(chunkSize);
    let end = size;
    let newlines = 0;
    // A final newline ends the last line; it does not start another one.
    let skipLast = true;
    while (end > 0) {
      const start = Math.max(0, end - buffer.length);
      const n = readSync(fd, buffer, 0, end - start, start);
      for (let i = n - 1; i >= 0; i--) {
        if (buffer[i] !== 0x0a) {
          skipLast = false;
          continue;
        }
        if (skipLast) {
          skipLast = false;
          continue;
        }
        if (++newlines === lines) return start + i + 1;
      }
      end = start;
    }
    return 0;
  } finally {
    closeSync(fd);
  }
}
