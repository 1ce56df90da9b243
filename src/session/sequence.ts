/**
 * The host's event sequence (docs/events.md#the-order-of-events): a counter shared by every tend
 * process of this user on this machine, in `$TEND_STATE_DIR/sequence/`, whose numbers only grow,
 * whatever the clock does. Sessions stamp it on the events whose effect on the server's record
 * depends on their order, so the server can apply a late replay in the order things happened.
 *
 * The counter is one file named `<counter id>.<last number taken>`. Taking a number renames it to
 * the next one: a rename succeeds for one process only, so each number is taken once, in the
 * order the processes took them. No lock: a process killed at any moment leaves the counter as
 * it was or one further. Two processes creating the counter at the same moment make two; all then
 * use the one with the highest number (the server never compares numbers of different counters).
 */
import { mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newId } from '../events/bus.js';
import type { EventSequence } from '../events/catalog.js';
import { hostStateDir } from '../state/files.js';

const counterFile = /^([0-9A-HJKMNP-TV-Z]{26})\.(\d{1,16})$/;

/** Each failed try means another process took a number meanwhile; this many is contention no host has. */
const maxTries = 1000;

export class HostSequence {
  /** Set when the directory cannot be written: events then carry no sequence (arrival order). */
  private unavailable = false;

  constructor(readonly dir: string = path.join(hostStateDir(), 'sequence')) {}

  /** The next number of the host's counter, or undefined when the counter cannot be used. */
  next(): EventSequence | undefined {
    if (this.unavailable) return undefined;
    try {
      for (let i = 0; i < maxTries; i++) {
        const current = this.current();
        if (!current) {
          mkdirSync(this.dir, { recursive: true });
          writeFileSync(path.join(this.dir, `${newId()}.0`), '', { flag: 'wx' });
          continue;
        }
        const number = current.number + 1;
        if (number > Number.MAX_SAFE_INTEGER) return undefined;
        try {
          renameSync(
            path.join(this.dir, `${current.counter}.${current.number}`),
            path.join(this.dir, `${current.counter}.${number}`),
          );
          return { counter: current.counter, number };
        } catch (error) {
          // Another process took that number first: read the counter again.
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
      return undefined;
    } catch {
      // A read-only or full state directory must not fail the command; the order falls back to arrival.
      this.unavailable = true;
      return undefined;
    }
  }

  /** The counter in use: the highest number (then the lowest id), or undefined when there is none yet. */
  private current(): EventSequence | undefined {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    let best: EventSequence | undefined;
    for (const name of names) {
      const m = counterFile.exec(name);
      if (!m) continue;
      const number = Number(m[2]);
      if (!Number.isSafeInteger(number)) continue;
      if (!best || number > best.number || (number === best.number && m[1]! < best.counter)) {
        best = { counter: m[1]!, number };
      }
    }
    return best;
  }
}
