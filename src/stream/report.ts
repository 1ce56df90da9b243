/**
 * The stream's report: what a delivery did (events the server answered for, what it refused and
 * why, what was set aside) and what still waits. `tend events push --json` prints it; a command's
 * exit message and `tend events push` read it.
 */
import type { LockOwner } from '../outbox/lock.js';
import type { ServerError } from './transport.js';

export interface StreamReport {
  server: string;
  /** Events the server answered for (stored or already stored). */
  delivered: number;
  accepted: number;
  duplicates: number;
  batches: number;
  quarantined: number;
  quarantineFiles: string[];
  /** Events still waiting in the outbox, not counting those of segments other processes hold. */
  waiting: number;
  /** Segments another live process is sending (a running command sends its own). */
  heldElsewhere: { sessionId: string; owner?: LockOwner; events: number }[];
  /** Why events still wait: the last delivery error. */
  lastError?: string;
  /** The server refused the token (401): nothing more was tried. */
  unauthorized?: ServerError;
  /** `finish` stopped at once: the server's address refused the connection (`giveUpWhenRefused`). */
  gaveUpRefused?: boolean;
  /** Lines that were not events (corruption), skipped; kept in the quarantine. */
  skipped: number;
  /** Quarantine files holding unreadable lines found during this delivery. */
  unreadableFiles: string[];
  /** Events found by splitting a batch that kept failing: each failed alone and was quarantined. */
  isolated: number;
}

/** The report before anything was sent; `server` is the server's URL as it may be shown. */
export function emptyStreamReport(server: string): StreamReport {
  return {
    server,
    delivered: 0,
    accepted: 0,
    duplicates: 0,
    batches: 0,
    quarantined: 0,
    quarantineFiles: [],
    waiting: 0,
    heldElsewhere: [],
    skipped: 0,
    unreadableFiles: [],
    isolated: 0,
  };
}
